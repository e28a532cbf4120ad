//! The web page (`/` and `/ui/*`): plain HTML, CSS and ES modules embedded
//! in the binary, so `run api` / `run all` serve it with no separate server
//! and no build step at run time. Also the development sign-in, which only
//! exists when the server was started with `API_DEV_SIGN_IN=true`.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::AppState;

/// One embedded file of the page.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static str,
}

const INDEX_HTML: &str = include_str!("../../ui/index.html");

/// Every file under `/ui/`; the names are the whole list (no file system).
const ASSETS: &[Asset] = &[
    Asset { name: "app.css", content_type: "text/css; charset=utf-8", body: include_str!("../../ui/app.css") },
    Asset { name: "app.js", content_type: JS, body: include_str!("../../ui/app.js") },
    Asset { name: "api.js", content_type: JS, body: include_str!("../../ui/api.js") },
    Asset { name: "chat.js", content_type: JS, body: include_str!("../../ui/chat.js") },
    Asset { name: "documents.js", content_type: JS, body: include_str!("../../ui/documents.js") },
    Asset { name: "dom.js", content_type: JS, body: include_str!("../../ui/dom.js") },
    Asset { name: "drawer.js", content_type: JS, body: include_str!("../../ui/drawer.js") },
    Asset { name: "i18n.js", content_type: JS, body: include_str!("../../ui/i18n.js") },
    Asset { name: "i18n-en.js", content_type: JS, body: include_str!("../../ui/i18n-en.js") },
    Asset { name: "i18n-vi.js", content_type: JS, body: include_str!("../../ui/i18n-vi.js") },
    Asset { name: "keys.js", content_type: JS, body: include_str!("../../ui/keys.js") },
    Asset { name: "sheet.js", content_type: JS, body: include_str!("../../ui/sheet.js") },
    Asset { name: "reading.js", content_type: JS, body: include_str!("../../ui/reading.js") },
    Asset { name: "sources.js", content_type: JS, body: include_str!("../../ui/sources.js") },
    Asset { name: "spans.js", content_type: JS, body: include_str!("../../ui/spans.js") },
    Asset { name: "sse.js", content_type: JS, body: include_str!("../../ui/sse.js") },
    Asset { name: "state.js", content_type: JS, body: include_str!("../../ui/state.js") },
    Asset { name: "viewer.js", content_type: JS, body: include_str!("../../ui/viewer.js") },
];

const JS: &str = "text/javascript; charset=utf-8";

/// The page may only load its own files and talk to its own origin: a
/// cited document's text is rendered as text, and nothing else can run.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self' data: blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// How long a development sign-in token lives.
const DEV_TOKEN_TTL: Duration = Duration::from_secs(12 * 3600);

fn with_page_headers(content_type: &'static str, body: &'static str) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Assets change with the binary; revalidating costs one small request.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    response
}

/// `GET /`: the page.
pub async fn index() -> Response {
    with_page_headers("text/html; charset=utf-8", INDEX_HTML)
}

/// `GET /ui/{file}`: one of the page's embedded files.
pub async fn asset(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|a| a.name == file) {
        Some(a) => with_page_headers(a.content_type, a.body),
        None => ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such file").into_response(),
    }
}

/// What the page needs to know about the server before signing in.
#[derive(Debug, Serialize, Deserialize)]
pub struct PageConfig {
    /// The development sign-in (`POST /dev/sign-in`) is enabled.
    pub dev_sign_in: bool,
    pub version: String,
}

/// `GET /ui/config.json`.
pub async fn config(State(state): State<AppState>) -> Json<PageConfig> {
    Json(PageConfig { dev_sign_in: state.config().dev_sign_in, version: env!("CARGO_PKG_VERSION").to_string() })
}

#[derive(Debug, Deserialize)]
pub struct DevSignIn {
    pub user: String,
}

#[derive(Debug, Serialize)]
pub struct DevToken {
    pub token: String,
    pub user_id: String,
    pub expires_in_secs: u64,
}

/// User names the development sign-in accepts: short, printable, no spaces.
fn is_dev_user(user: &str) -> bool {
    (1..=64).contains(&user.len()) && user.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
}

/// `POST /dev/sign-in {user}`: a token for any user name, with no password.
/// Only for a server on a developer's machine (`API_DEV_SIGN_IN=true`);
/// otherwise the route answers 404 like any unknown route.
pub async fn dev_sign_in(
    State(state): State<AppState>,
    body: Result<Json<DevSignIn>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<DevToken>, ApiError> {
    if !state.config().dev_sign_in {
        return Err(ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route"));
    }
    let Json(body) = body.map_err(|e| ApiError::bad_request("bad_request", e.body_text()))?;
    let user = body.user.trim();
    if !is_dev_user(user) {
        return Err(ApiError::bad_request("invalid_field", "user must have 1-64 characters among letters, digits and . _ - @"));
    }
    let token = state.auth().mint(user, DEV_TOKEN_TTL).map_err(|e| ApiError::internal(e.to_string()))?;
    tracing::info!(user, "development sign-in");
    Ok(Json(DevToken { token, user_id: user.to_string(), expires_in_secs: DEV_TOKEN_TTL.as_secs() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_the_page_imports_is_embedded() {
        let names: Vec<&str> = ASSETS.iter().map(|a| a.name).collect();
        for a in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            for line in a.body.lines().filter(|l| l.trim_start().starts_with("import ")) {
                let from = line.rsplit("from").next().unwrap_or_default();
                let file = from.trim().trim_matches(|c| c == '\'' || c == '"' || c == ';').trim_start_matches("./");
                assert!(names.contains(&file), "{} imports {file}, which is not embedded", a.name);
            }
        }
        for name in ["app.css", "app.js"] {
            assert!(INDEX_HTML.contains(&format!("/ui/{name}")), "index.html does not load {name}");
        }
    }

    /// A module added to `ui/` and not to [`ASSETS`] would be a 404 for
    /// the browser (tests only the page's own files, not `*.test.mjs`).
    #[test]
    fn every_file_of_the_ui_directory_is_served() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/ui");
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name == "index.html" || name.ends_with(".test.mjs") {
                continue;
            }
            assert!(ASSETS.iter().any(|a| a.name == name), "ui/{name} is not in ASSETS");
        }
    }

    #[test]
    fn dev_user_names() {
        assert!(is_dev_user("alice"));
        assert!(is_dev_user("bob.nguyen@example.com"));
        assert!(!is_dev_user(""));
        assert!(!is_dev_user("a b"));
        assert!(!is_dev_user("Nguyễn"));
        assert!(!is_dev_user(&"a".repeat(65)));
    }
}

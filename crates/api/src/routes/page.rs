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

    /// Property paths read after `word` in `js`: `metadata?.retrieval?.x`
    /// gives `["retrieval", "x"]`.
    fn paths_after<'a>(js: &'a str, word: &str) -> Vec<Vec<&'a str>> {
        let mut out = Vec::new();
        for (at, _) in js.match_indices(word) {
            if js[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let mut rest = &js[at + word.len()..];
            let mut path = Vec::new();
            loop {
                rest = rest.strip_prefix('?').unwrap_or(rest);
                let Some(after) = rest.strip_prefix('.') else { break };
                let n = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
                if n == 0 {
                    break;
                }
                path.push(&after[..n]);
                rest = &after[n..];
            }
            if !path.is_empty() {
                out.push(path);
            }
        }
        out
    }

    /// The page reads an answer's metadata by name: each name it reads is
    /// a field of `AnswerMetadata` as stored, so renaming one on the Rust
    /// side alone fails here.
    #[test]
    fn the_page_reads_only_fields_the_answer_metadata_has() {
        use rag_store::messages::{AnswerDiagnostics, AnswerMetadata, HeldBack};
        let citation: rag_events::Citation = serde_json::from_value(serde_json::json!({
            "source_id": "S1", "chunk_id": "c", "document_id": "d", "segment_index": 0, "page_idx": 0, "char_start": 0,
            "char_end": 1, "snippet_preview": "a", "text": "a", "cell_range": "A!A1:B1"}))
        .unwrap();
        let full = AnswerMetadata {
            mode: "llm".into(),
            abstained: true,
            sections: vec![rag_events::Section { text: "a".into(), source_ids: vec!["S1".into()], citations: vec![citation.clone()] }],
            citations: vec![citation],
            llm_usage: Some(rag_events::LlmUsage { model: "m".into(), prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }),
            retrieval: AnswerDiagnostics {
                query: Some("q".into()),
                query_language: Some("vi".into()),
                unanswered_parts: vec!["p".into()],
                unanswered_text: Some("t".into()),
                citation_report: Some(HeldBack {
                    unfaithful_sections: vec!["u".into()],
                    rejected_sections: vec!["r".into()],
                    rewritten_sections: 1,
                    details: Default::default(),
                }),
                details: Default::default(),
            },
            failure: Some(rag_events::Failure { code: "c".into(), message: "m".into() }),
        }
        .to_json();
        let chat = ASSETS.iter().find(|a| a.name == "chat.js").unwrap().body;
        let read: Vec<Vec<&str>> = paths_after(chat, "metadata")
            .into_iter()
            .chain(paths_after(chat, "report").into_iter().map(|p| [vec!["retrieval", "citation_report"], p].concat()))
            .collect();
        assert!(read.len() >= 8, "the page's reads were not found: {read:?}");
        for path in read {
            let mut v = &full;
            for (i, key) in path.iter().enumerate() {
                if i > 0 && matches!(*key, "length" | "map" | "join") {
                    break;
                }
                v = v.get(key).unwrap_or_else(|| panic!("chat.js reads metadata.{} but the answer metadata has no {key}", path.join(".")));
            }
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

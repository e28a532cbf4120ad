//! A refused request on `/mcp`: a 401 whose body is a JSON-RPC error with
//! the reason and whose challenge says whether a key was missing or
//! refused (RFC 6750), with no OAuth metadata: this server does not do
//! OAuth (docs/integrations.md, "A missing or refused key").

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// The JSON-RPC error code of a refused request (implementation-defined
/// server errors are -32000 to -32099).
const UNAUTHORIZED_CODE: i64 = -32001;

/// A 401 on `/mcp`. Its body is a JSON-RPC error (the REST API's `code`
/// in its `data`), which MCP clients show: the Python SDK surfaces it as
/// the request's error (any other body reads "Server returned an error
/// response"), the TypeScript SDK and the Inspector CLI quote it.
pub(super) fn refused(presented: bool, reason: &str) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": UNAUTHORIZED_CODE, "message": format!("unauthorized: {reason}"), "data": {"status": 401, "code": "unauthorized"}},
    });
    let mut response = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge(presented, reason)) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// Whether the request carries a bearer credential at all (a well-formed
/// one or not): `Authorization: Bearer …`.
pub(super) fn presented_bearer(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.get(..6))
        .is_some_and(|s| s.eq_ignore_ascii_case("bearer"))
}

/// The `WWW-Authenticate` of a 401 on `/mcp` (RFC 6750, section 3): a
/// request without a bearer credential gets the bare challenge; a refused
/// credential (unknown, revoked or expired key, bad token) gets
/// `error="invalid_token"` and the reason. No `resource_metadata`: keys are
/// made by the user (`POST /v1/keys`), there is no authorization server.
///
/// MCP clients built on OAuth start their flow on any 401 from a server
/// they hold no token for; the TypeScript SDK without an auth provider
/// reports the 401 and its body, and the MCP Inspector CLI does so with
/// `--stored-auth-only` (docs/integrations.md).
fn challenge(presented: bool, reason: &str) -> String {
    if !presented {
        return r#"Bearer realm="rag-engine""#.to_string();
    }
    // error_description: printable ASCII without `"` and `\`.
    let description: String =
        reason.chars().map(|c| if (' '..='~').contains(&c) && c != '"' && c != '\\' { c } else { '\'' }).take(200).collect();
    format!(r#"Bearer realm="rag-engine", error="invalid_token", error_description="{description}""#)
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    #[tokio::test]
    async fn a_refusal_is_a_json_rpc_error_with_its_reason() {
        let response = refused(true, "this API key was revoked");
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert!(response.headers()[header::WWW_AUTHENTICATE].to_str().unwrap().contains(r#"error="invalid_token""#));
        let body = axum::body::to_bytes(response.into_body(), 4096).await.unwrap();
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            body,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32001, "message": "unauthorized: this API key was revoked",
                   "data": {"status": 401, "code": "unauthorized"}}})
        );
    }

    #[test]
    fn a_refused_key_is_an_invalid_token_not_an_oauth_invitation() {
        assert_eq!(challenge(false, "missing Authorization: Bearer <token>"), r#"Bearer realm="rag-engine""#);
        assert_eq!(
            challenge(true, "this API key was revoked"),
            r#"Bearer realm="rag-engine", error="invalid_token", error_description="this API key was revoked""#
        );
        let odd = challenge(true, "a \"quoted\" \\ khóa");
        assert!(HeaderValue::from_str(&odd).is_ok() && !odd.contains("\\") && odd.ends_with(r#"'quoted' ' kh'a""#), "{odd}");
        let mut headers = axum::http::HeaderMap::new();
        assert!(!presented_bearer(&headers));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bear"));
        assert!(!presented_bearer(&headers));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic YWxhZGRpbjpvcGVuc2VzYW1l"));
        assert!(!presented_bearer(&headers));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer rag_x"));
        assert!(presented_bearer(&headers));
    }
}

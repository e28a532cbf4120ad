//! One middleware around every request: a tracing span with the request
//! id, the HTTP metrics, and JSON bodies for errors the framework produced
//! itself (rejected paths and bodies, unknown routes, body limits), so
//! every error a client sees has the same shape; a refused body ends the
//! connection, and says so.

use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rag_telemetry::events::HttpRequestAnswered;
use rag_telemetry::InternalEvent;
use tracing::Instrument;

use crate::error::ApiError;
use crate::REQUEST_ID;

pub async fn observe(req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().clone();
    let route = req.extensions().get::<MatchedPath>().map(|p| p.as_str().to_string()).unwrap_or_else(|| "unmatched".into());
    let request_id = req.headers().get(&REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or("-").to_string();
    let span = tracing::info_span!("http", %method, route = %route, request_id = %request_id);
    let response = next.run(req).instrument(span.clone()).await;
    let mut response = json_error_body(response).await;
    let status = response.status();
    if status == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        // The refused body is left unread, so the server closes the
        // connection after this answer; saying so keeps a client from
        // sending its next request into it (which would fail with
        // "connection closed before message completed").
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    span.in_scope(|| {
        if status.is_server_error() {
            tracing::warn!(status = status.as_u16(), elapsed_ms = start.elapsed().as_millis() as u64, "request answered");
        } else {
            tracing::debug!(status = status.as_u16(), elapsed_ms = start.elapsed().as_millis() as u64, "request answered");
        }
    });
    HttpRequestAnswered { method: method.as_str(), route: &route, status: status.as_u16(), elapsed: start.elapsed() }.emit();
    response
}

/// Rewrites a non-JSON error response into the API's error shape, keeping
/// its status, headers and (as the message) its text.
async fn json_error_body(response: Response) -> Response {
    let status = response.status();
    let is_json =
        response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, 16 * 1024).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_string(),
        Err(_) => String::new(),
    };
    let message = if text.is_empty() { status.canonical_reason().unwrap_or("error").to_string() } else { text };
    let rewritten = ApiError::new(status, ApiError::code_for_status(status), message).into_response();
    let (new_parts, new_body) = rewritten.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    if let Some(ct) = new_parts.headers.get(header::CONTENT_TYPE) {
        parts.headers.insert(header::CONTENT_TYPE, ct.clone());
    } else {
        parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    Response::from_parts(parts, Body::new(new_body))
}

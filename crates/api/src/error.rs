//! Every error the API returns: JSON `{"error": {"code", "message"}}` with a
//! stable code, and the status that goes with it.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// Sent as `Retry-After` (429 and 503 answers).
    pub retry_after: Option<std::time::Duration>,
}

/// The body of every error response.
#[derive(Debug, Serialize, serde::Deserialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, serde::Deserialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable: e.g. `unauthorized`, `not_found`, `not_parsed`, `payload_too_large`.
    pub code: String,
    /// For people; may change between versions.
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into(), retry_after: None }
    }
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }
    /// Also the answer for another user's resources: never reveal they exist.
    pub fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", format!("{what} not found"))
    }
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }
    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", message)
    }
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", message)
    }
    pub fn unavailable(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, code, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// The stable code of a status the framework produced itself (a
    /// rejected path or body, an unknown route).
    pub fn code_for_status(status: StatusCode) -> &'static str {
        match status {
            StatusCode::BAD_REQUEST => "bad_request",
            StatusCode::UNAUTHORIZED => "unauthorized",
            StatusCode::NOT_FOUND => "not_found",
            StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
            StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
            StatusCode::UNPROCESSABLE_ENTITY => "invalid_body",
            StatusCode::SERVICE_UNAVAILABLE => "unavailable",
            s if s.is_server_error() => "internal",
            _ => "error",
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.status, self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

/// What a client reads for a server-side failure: the stable code says
/// what kind, the request id finds it in the log. The error's own text
/// (a database error, a path, a provider's URL) stays in the log.
fn public_message(status: StatusCode, code: &str) -> String {
    let what = match code {
        "database_unavailable" => "the database is unavailable; try again shortly",
        "broker_unavailable" => "the event could not be recorded and nothing was changed; try again shortly",
        "storage_unavailable" => "object storage is unavailable; try again shortly",
        "renderer_unavailable" => "the page renderer is unavailable",
        "renderer_busy" => "too many page images are being drawn; try again shortly",
        _ if status == StatusCode::SERVICE_UNAVAILABLE => "a service this request needs is unavailable; try again shortly",
        _ => "something went wrong on our side",
    };
    format!("{what} (the x-request-id header of this response identifies it in the server's log)")
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let message = if self.status.is_server_error() {
            // The request's span (middleware::observe) adds its request id.
            tracing::error!(code = self.code, message = %self.message, "request failed");
            public_message(self.status, self.code)
        } else {
            self.message
        };
        let body = ErrorBody { error: ErrorDetail { code: self.code.to_string(), message } };
        let retry_after = self.retry_after;
        let mut response = (self.status, axum::Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(wait) = retry_after {
            let secs = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        response
    }
}

impl From<rag_store::StoreError> for ApiError {
    fn from(e: rag_store::StoreError) -> Self {
        if e.is_transient() {
            ApiError::unavailable("database_unavailable", format!("database: {e}"))
        } else {
            ApiError::internal(format!("database: {e}"))
        }
    }
}

impl From<rag_store::sqlx::Error> for ApiError {
    fn from(e: rag_store::sqlx::Error) -> Self {
        rag_store::StoreError::from(e).into()
    }
}

impl From<rag_bus::BusError> for ApiError {
    fn from(e: rag_bus::BusError) -> Self {
        ApiError::unavailable("broker_unavailable", format!("producing the event: {e}"))
    }
}

impl From<rag_blobs::BlobError> for ApiError {
    fn from(e: rag_blobs::BlobError) -> Self {
        ApiError::unavailable("storage_unavailable", format!("object storage: {e}"))
    }
}

impl From<rag_upload::UploadError> for ApiError {
    fn from(e: rag_upload::UploadError) -> Self {
        match e {
            rag_upload::UploadError::Workspace(_) => ApiError::not_found("workspace"),
            rag_upload::UploadError::Store(e) => e.into(),
            rag_upload::UploadError::Announce(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn server_errors_show_their_code_but_not_their_internals() {
        let e = ApiError::internal("database: relation \"documents\" does not exist at /var/lib/x");
        let body = axum::body::to_bytes(e.into_response().into_body(), 4096).await.unwrap();
        let text = String::from_utf8_lossy(&body);
        assert!(text.contains("\"internal\"") && text.contains("x-request-id"), "{text}");
        assert!(!text.contains("relation") && !text.contains("/var/lib"), "{text}");
        let e = ApiError::bad_request("invalid_field", "title is too long");
        let body = axum::body::to_bytes(e.into_response().into_body(), 4096).await.unwrap();
        assert!(String::from_utf8_lossy(&body).contains("title is too long"));
    }
}

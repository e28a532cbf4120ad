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
        ApiError { status, code, message: message.into() }
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

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::error!(code = self.code, message = %self.message, "request failed");
        }
        let body = ErrorBody { error: ErrorDetail { code: self.code.to_string(), message: self.message } };
        let mut response = (self.status, axum::Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

impl From<rag_store::StoreError> for ApiError {
    fn from(e: rag_store::StoreError) -> Self {
        if e.is_transient() {
            ApiError::unavailable("database_unavailable", format!("the database is unavailable: {e}"))
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
        ApiError::unavailable("broker_unavailable", format!("the event could not be recorded, nothing was changed: {e}"))
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

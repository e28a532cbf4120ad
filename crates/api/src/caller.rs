//! Who is calling: the bearer credential of a request, a sign-in JWT
//! ([`crate::auth`]) or an API key ([`crate::keys`]), as the
//! [`AuthUser`] every handler takes. Apart from both so neither depends
//! on the other.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::HeaderMap;

use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::AppState;

/// The bearer token of a request's Authorization header.
pub fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    let header =
        headers.get(axum::http::header::AUTHORIZATION).ok_or_else(|| ApiError::unauthorized("missing Authorization: Bearer <token>"))?;
    let value = header.to_str().map_err(|_| ApiError::unauthorized("the Authorization header is not text"))?;
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| ApiError::unauthorized("the Authorization header must be `Bearer <token>`"))
}

/// The caller behind a bearer token: an API key (`rag_…`, checked in the
/// database on every request) or a JWT.
pub async fn authenticate(state: &AppState, token: &str) -> Result<AuthUser, ApiError> {
    if crate::keys::looks_like_key(token) {
        return crate::keys::authenticate(state, token).await;
    }
    let claims = state.auth().verify(token)?;
    Ok(AuthUser { user_id: claims.sub.trim().to_string(), expires_at: claims.exp, workspace: None, key_id: None })
}

impl FromRequestParts<AppState> for AuthUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        // The rate limiter already resolved it (one key lookup a request).
        if let Some(user) = parts.extensions.get::<AuthUser>() {
            return Ok(user.clone());
        }
        authenticate(state, bearer(&parts.headers)?).await
    }
}

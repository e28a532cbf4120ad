//! `/v1/keys`: a user's API keys. Managed only with a sign-in token: a key
//! cannot make, list or revoke keys, so a leaked one cannot outlive its
//! revocation by minting another.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use uuid::Uuid;

use super::owned_workspace;
use crate::auth::AuthUser;
use crate::error::{ApiError, ErrorBody};
use crate::model::{ApiKey, ApiKeyList, CreateApiKey, CreatedApiKey};
use crate::AppState;

fn signed_in(user: &AuthUser) -> Result<(), ApiError> {
    match user.key_id {
        None => Ok(()),
        Some(_) => Err(ApiError::new(StatusCode::FORBIDDEN, "forbidden", "API keys are managed with a sign-in token, not with an API key")),
    }
}

/// Create an API key. Its secret is in this response only: store it now.
#[utoipa::path(post, path = "/v1/keys", tag = "keys", request_body = CreateApiKey,
    responses((status = 201, body = CreatedApiKey), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<CreateApiKey>,
) -> Result<(StatusCode, Json<CreatedApiKey>), ApiError> {
    signed_in(&user)?;
    if let Some(ws) = body.workspace_id.as_deref() {
        owned_workspace(&state, &user, ws).await?;
    }
    let created = crate::keys::create(
        state.pool(),
        crate::keys::KeyRequest {
            user_id: &user.user_id,
            name: &body.name,
            workspace_id: body.workspace_id.as_deref(),
            expires_in_days: body.expires_in_days,
            sources_in_content: body.sources_in_content.unwrap_or(true),
        },
    )
    .await?;
    Ok((StatusCode::CREATED, Json(CreatedApiKey { key: created.row.into(), secret: created.secret })))
}

/// The caller's API keys (never their secrets), revoked ones included.
#[utoipa::path(get, path = "/v1/keys", tag = "keys",
    responses((status = 200, body = ApiKeyList), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(State(state): State<AppState>, user: AuthUser) -> Result<Json<ApiKeyList>, ApiError> {
    signed_in(&user)?;
    let rows = rag_store::api_keys::list_owned(state.pool(), &user.user_id).await?;
    Ok(Json(ApiKeyList { keys: rows.into_iter().map(Into::into).collect() }))
}

/// Revoke an API key: refused from the next request on.
#[utoipa::path(delete, path = "/v1/keys/{id}", tag = "keys", params(("id" = Uuid, Path, description = "The key's id")),
    responses((status = 200, body = ApiKey), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn revoke(State(state): State<AppState>, user: AuthUser, Path(id): Path<Uuid>) -> Result<Json<ApiKey>, ApiError> {
    signed_in(&user)?;
    let row = rag_store::api_keys::revoke(state.pool(), &user.user_id, id).await?.ok_or_else(|| ApiError::not_found("API key"))?;
    tracing::info!(key_id = %row.id, user = %user.user_id, "API key revoked");
    Ok(Json(row.into()))
}

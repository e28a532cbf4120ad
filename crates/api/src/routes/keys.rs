//! `/v1/keys`: a user's API keys. Managed only with a sign-in token: a key
//! cannot make, list or revoke keys, so a leaked one cannot outlive its
//! revocation by minting another.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use uuid::Uuid;

use super::{checked_text, owned_workspace};
use crate::auth::AuthUser;
use crate::error::{ApiError, ErrorBody};
use crate::model::{ApiKey, ApiKeyList, CreateApiKey, CreatedApiKey};
use crate::AppState;

/// Keys one user may hold (neither revoked nor expired).
pub const MAX_LIVE_KEYS: i64 = 50;
/// The longest expiry a key may be given, in days.
pub const MAX_EXPIRY_DAYS: u32 = 3650;

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
    let name = checked_text("name", body.name.trim(), 1, 100)?;
    if let Some(ws) = body.workspace_id.as_deref() {
        owned_workspace(&state, &user, ws).await?;
    }
    let expires_at = match body.expires_in_days {
        None => None,
        Some(d @ 1..=MAX_EXPIRY_DAYS) => Some(chrono::Utc::now() + chrono::Duration::days(i64::from(d))),
        Some(d) => return Err(ApiError::bad_request("invalid_field", format!("expires_in_days must be 1-{MAX_EXPIRY_DAYS} (is {d})"))),
    };
    if rag_store::api_keys::count_live(state.pool(), &user.user_id).await? >= MAX_LIVE_KEYS {
        return Err(ApiError::conflict(
            "too_many_keys",
            format!("you hold {MAX_LIVE_KEYS} live API keys, the most allowed; revoke one first"),
        ));
    }
    let minted = crate::keys::mint()?;
    let row = rag_store::api_keys::create(
        state.pool(),
        &rag_store::api_keys::NewApiKey {
            id: Uuid::now_v7(),
            user_id: &user.user_id,
            name,
            workspace_id: body.workspace_id.as_deref(),
            lookup: &minted.lookup,
            secret_sha256: &minted.sha256,
            expires_at,
            sources_in_content: body.sources_in_content.unwrap_or(true),
        },
    )
    .await?;
    tracing::info!(key_id = %row.id, user = %user.user_id, workspace_id = ?row.workspace_id, "API key created");
    Ok((StatusCode::CREATED, Json(CreatedApiKey { key: row.into(), secret: minted.token })))
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

//! `GET /v1/models`: the workspaces a caller may ask, as models, and the
//! workspace a request's `model` names.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::wire::OpenAiError;
use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::AppState;

/// The workspaces the caller may ask, as models.
pub async fn models(State(state): State<AppState>, user: Result<AuthUser, ApiError>) -> Result<Json<Value>, OpenAiError> {
    let user = user?;
    let rows: Vec<_> = rag_store::workspaces::list_owned(state.pool(), &user.user_id)
        .await
        .map_err(ApiError::from)?
        .into_iter()
        .filter(|w| user.reaches(&w.id))
        .collect();
    // A model picker shows ids: a workspace's name is its id here when no
    // other workspace the key reaches has that name, nor has it as its id
    // (an id wins when a model is looked up). Its id stays accepted, and
    // is the one to keep: a name changes with a rename.
    let data: Vec<Value> = rows
        .iter()
        .map(|w| {
            let unique = rows.iter().filter(|o| rag_store::workspaces::same_name(&o.name, &w.name)).count() == 1
                && !rows.iter().any(|o| o.id == w.name.trim());
            let id = if unique && !w.name.trim().is_empty() { w.name.trim() } else { w.id.as_str() };
            json!({"id": id, "object": "model", "created": w.created_at.timestamp(), "owned_by": "rag-engine",
                   "name": w.name, "workspace_id": w.id})
        })
        .collect();
    Ok(Json(json!({"object": "list", "data": data})))
}

/// The workspace `model` names: its id, else the name of exactly one of
/// the workspaces the caller reaches. Another user's is "not found", as
/// everywhere.
pub(super) async fn workspace_of(state: &AppState, user: &AuthUser, model: &str) -> Result<String, OpenAiError> {
    match crate::routes::named_workspace(state, user, model).await {
        Ok(w) => Ok(w.id),
        Err(e) if e.status == StatusCode::NOT_FOUND => Err(OpenAiError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "model_not_found",
            format!("The model `{model}` does not exist or you do not have access to it."),
        )),
        Err(e) if e.code == "workspace_ambiguous" => {
            Err(OpenAiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", "model_ambiguous", e.message))
        }
        Err(e) => Err(e.into()),
    }
}

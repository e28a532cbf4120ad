use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::Json;

use super::{checked_text, next_cursor, PageQuery};
use crate::auth::AuthUser;
use crate::error::{ApiError, ErrorBody};
use crate::model::{CreateWorkspace, Workspace, WorkspaceList};
use crate::AppState;

/// Create a workspace owned by the caller.
#[utoipa::path(post, path = "/v1/workspaces", tag = "workspaces", request_body = CreateWorkspace,
    responses((status = 201, body = Workspace), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody), (status = 409, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<CreateWorkspace>,
) -> Result<(StatusCode, Json<Workspace>), ApiError> {
    let name = checked_text("name", body.name.trim(), 1, 200)?;
    if user.workspace.is_some() {
        return Err(ApiError::new(StatusCode::FORBIDDEN, "forbidden", "this API key is for one workspace: it cannot create others"));
    }
    // The storage quota is per workspace: without a bound on workspaces it
    // would be no bound at all.
    let max = state.config().workspaces_per_user;
    if rag_store::workspaces::count_owned(state.pool(), &user.user_id).await? >= i64::try_from(max).unwrap_or(i64::MAX) {
        return Err(ApiError::conflict(
            "too_many_workspaces",
            format!("you have {max} workspaces, the most allowed (API_WORKSPACES_PER_USER)"),
        ));
    }
    let id = uuid::Uuid::now_v7().to_string();
    let row = rag_store::workspaces::create(state.pool(), &id, name, &user.user_id).await?;
    tracing::info!(workspace_id = %row.id, user = %user.user_id, "workspace created");
    Ok((StatusCode::CREATED, Json(row.into())))
}

/// The caller's workspaces, newest first, a page at a time.
#[utoipa::path(get, path = "/v1/workspaces", tag = "workspaces", params(PageQuery),
    responses((status = 200, body = WorkspaceList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(State(state): State<AppState>, user: AuthUser, Query(page): Query<PageQuery>) -> Result<Json<WorkspaceList>, ApiError> {
    let limit = page.limit()?;
    // A key for one workspace sees that one only.
    if let Some(ws) = user.workspace.as_deref() {
        let row = rag_store::workspaces::get_owned(state.pool(), ws, &user.user_id).await?;
        return Ok(Json(WorkspaceList { workspaces: row.into_iter().map(Into::into).collect(), next_cursor: None }));
    }
    let mut rows = rag_store::workspaces::page_owned(state.pool(), &user.user_id, page.after()?, limit + 1).await?;
    let next_cursor = next_cursor(&mut rows, limit, |r| (r.created_at, r.id.clone()));
    Ok(Json(WorkspaceList { workspaces: rows.into_iter().map(Into::into).collect(), next_cursor }))
}

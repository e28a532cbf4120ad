//! Sources a workspace follows (docs/sources.md): add a folder or an S3
//! prefix, list them with their last sync, sync one now, see its files
//! (a refused file's reason in words), stop following it.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use rag_sources::{Adder, Location, SourceError, SyncLimits, Syncer};
use serde::Deserialize;
use uuid::Uuid;

use super::owned_workspace;
use crate::auth::AuthUser;
use crate::error::{ApiError, ErrorBody};
use crate::model::{NewSource, Source, SourceFile, SourceFiles, SourceList, SourceRemoved, SyncStarted};
use crate::AppState;

const PRODUCER: &str = concat!("rag-engine/api@", env!("CARGO_PKG_VERSION"));

fn refused(e: SourceError) -> ApiError {
    match e {
        SourceError::Invalid(m) => ApiError::bad_request("invalid_source", m),
        SourceError::NotAllowed(m) => ApiError::new(StatusCode::FORBIDDEN, "source_not_allowed", m),
        SourceError::Bus(e) => e.into(),
        SourceError::Store(e) => e.into(),
        other => ApiError::internal(other.to_string()),
    }
}

async fn owned_source(state: &AppState, ws: &str, id: Uuid) -> Result<rag_store::sources::SourceRow, ApiError> {
    rag_store::sources::get(state.pool(), ws, id).await?.ok_or_else(|| ApiError::not_found("source"))
}

/// The workspace's sources, with their last sync.
#[utoipa::path(get, path = "/v1/workspaces/{ws}/sources", tag = "sources",
    params(("ws" = String, Path, description = "Workspace id")),
    responses((status = 200, body = SourceList), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(State(state): State<AppState>, user: AuthUser, Path(ws): Path<String>) -> Result<Json<SourceList>, ApiError> {
    owned_workspace(&state, &user, &ws).await?;
    let rows = rag_store::sources::list(state.pool(), Some(&ws)).await?;
    Ok(Json(SourceList { sources: rows.into_iter().map(|r| Source::from_row(r, &state)).collect() }))
}

/// Follow a folder on the server or an S3 prefix: only this workspace's
/// own place among those the server allows (`{workspace}` entries of
/// `SOURCE_FOLDER_ROOTS` and `SOURCE_S3_BUCKETS`; a bucket is read with the
/// server's own credentials, never stored). Its files become documents at
/// the next sync.
#[utoipa::path(post, path = "/v1/workspaces/{ws}/sources", tag = "sources",
    params(("ws" = String, Path, description = "Workspace id")),
    request_body = NewSource,
    responses((status = 201, body = Source), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Path(ws): Path<String>,
    Json(body): Json<NewSource>,
) -> Result<(StatusCode, Json<Source>), ApiError> {
    owned_workspace(&state, &user, &ws).await?;
    let config = state.config();
    let location = match (body.folder.as_deref(), body.s3.as_deref()) {
        (Some(folder), None) => {
            rag_sources::allowed_folder(std::path::Path::new(folder), &config.source_folder_roots, Adder::Workspace(&ws), &ws)
                .map_err(refused)?
        }
        (None, Some(url)) => {
            rag_sources::allowed_bucket(url, state.blobs().bucket(), &config.source_s3_buckets, Adder::Workspace(&ws), &ws)
                .map_err(refused)?
        }
        _ => return Err(ApiError::bad_request("invalid_source", "give exactly one of `folder` (a path) and `s3` (s3://bucket/prefix)")),
    };
    if let Location::S3 { bucket, prefix } = &location {
        state
            .blobs()
            .in_bucket(bucket)
            .list_page(prefix, None)
            .await
            .map_err(|e| ApiError::bad_request("invalid_source", format!("the server cannot list {}: {e}", location.stored())))?;
    }
    let row = rag_store::sources::add(state.pool(), &ws, location.kind(), &location.stored(), &user.user_id)
        .await?
        .ok_or_else(|| ApiError::conflict("source_exists", format!("the workspace already follows {}", location.stored())))?;
    tracing::info!(workspace_id = %ws, source_id = %row.id, location = %row.location, "source added");
    Ok((StatusCode::CREATED, Json(Source::from_row(row, &state))))
}

/// Sync a source now, in the background: new files become documents,
/// changed files new revisions, removed files are deleted. 202 at once;
/// the source's `syncing` and last sync say how it went.
#[utoipa::path(post, path = "/v1/workspaces/{ws}/sources/{id}/sync", tag = "sources",
    params(("ws" = String, Path, description = "Workspace id"), ("id" = Uuid, Path, description = "Source id")),
    responses((status = 202, body = SyncStarted), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn sync(
    State(state): State<AppState>,
    user: AuthUser,
    Path((ws, id)): Path<(String, Uuid)>,
) -> Result<(StatusCode, Json<SyncStarted>), ApiError> {
    owned_workspace(&state, &user, &ws).await?;
    let source = owned_source(&state, &ws, id).await?;
    if !state.begin_sync(id) {
        return Err(ApiError::conflict("sync_running", "this source is being synced now"));
    }
    let config = state.config();
    let syncer = Syncer {
        pool: state.pool().clone(),
        places: rag_sources::SyncPlaces {
            folder_roots: config.source_folder_roots.clone(),
            buckets: config.source_s3_buckets.clone(),
            own_bucket: state.blobs().bucket().to_string(),
        },
        blobs: state.blobs().clone(),
        producer: state.producer().clone(),
        limits: SyncLimits { max_bytes: config.upload_max_bytes, workspace_max_bytes: config.workspace_max_bytes },
        producer_name: PRODUCER.into(),
    };
    let task_state = state.clone();
    tokio::spawn(async move {
        tokio::select! {
            r = syncer.sync(&source, &|_| {}) => if let Err(e) = r {
                tracing::warn!(workspace_id = %source.workspace_id, source_id = %source.id, error = %e, "source sync stopped");
            },
            // Cut short by a shutdown: the checkpoint is consistent, the next sync goes on.
            _ = task_state.shutdown().cancelled() => {}
        }
        task_state.end_sync(source.id);
    });
    Ok((StatusCode::ACCEPTED, Json(SyncStarted { source_id: id, syncing: true })))
}

/// What a source has seen of each file: a document and its revision, or
/// why the file was refused.
#[utoipa::path(get, path = "/v1/workspaces/{ws}/sources/{id}/files", tag = "sources",
    params(("ws" = String, Path, description = "Workspace id"), ("id" = Uuid, Path, description = "Source id")),
    responses((status = 200, body = SourceFiles), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn files(
    State(state): State<AppState>,
    user: AuthUser,
    Path((ws, id)): Path<(String, Uuid)>,
) -> Result<Json<SourceFiles>, ApiError> {
    owned_workspace(&state, &user, &ws).await?;
    owned_source(&state, &ws, id).await?;
    let rows = rag_store::sources::files(state.pool(), id).await?;
    Ok(Json(SourceFiles { files: rows.into_iter().map(SourceFile::from).collect() }))
}

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RemoveQuery {
    /// Delete the source's documents too (DocumentDeleted for each).
    #[serde(default)]
    pub with_documents: bool,
}

/// Stop following a source. Its documents stay, unless `with_documents`.
#[utoipa::path(delete, path = "/v1/workspaces/{ws}/sources/{id}", tag = "sources",
    params(("ws" = String, Path, description = "Workspace id"), ("id" = Uuid, Path, description = "Source id"), RemoveQuery),
    responses((status = 200, body = SourceRemoved), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn remove(
    State(state): State<AppState>,
    user: AuthUser,
    Path((ws, id)): Path<(String, Uuid)>,
    Query(q): Query<RemoveQuery>,
) -> Result<Json<SourceRemoved>, ApiError> {
    owned_workspace(&state, &user, &ws).await?;
    let source = owned_source(&state, &ws, id).await?;
    if state.is_syncing(id) {
        return Err(ApiError::conflict("sync_running", "this source is being synced now; remove it once the sync ends"));
    }
    let deleted = if q.with_documents {
        rag_sources::sync::delete_documents(state.pool(), state.producer(), &source, PRODUCER, &user.user_id).await.map_err(refused)?
    } else {
        0
    };
    rag_store::sources::remove(state.pool(), &ws, id).await?;
    tracing::info!(workspace_id = %ws, source_id = %id, location = %source.location, documents_deleted = deleted, "source removed");
    Ok(Json(SourceRemoved { source_id: id, documents_deleted: deleted }))
}

//! Workspaces and their owners: a source table written by the API (see the
//! migration), the basis of every ownership check.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;

use crate::StoreError;

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct WorkspaceRow {
    pub id: String,
    pub name: String,
    pub owner_id: String,
    pub created_at: DateTime<Utc>,
}

pub async fn create(pool: &PgPool, id: &str, name: &str, owner_id: &str) -> Result<WorkspaceRow, StoreError> {
    Ok(sqlx::query_as(
        "INSERT INTO workspaces (id, name, owner_id, created_at) VALUES ($1, $2, $3, now())
         RETURNING id, name, owner_id, created_at",
    )
    .bind(id)
    .bind(name)
    .bind(owner_id)
    .fetch_one(pool)
    .await?)
}

/// How many workspaces the owner has.
pub async fn count_owned(pool: &PgPool, owner_id: &str) -> Result<i64, StoreError> {
    Ok(sqlx::query_scalar("SELECT count(*) FROM workspaces WHERE owner_id = $1").bind(owner_id).fetch_one(pool).await?)
}

/// The owner's workspaces, newest first.
pub async fn list_owned(pool: &PgPool, owner_id: &str) -> Result<Vec<WorkspaceRow>, StoreError> {
    Ok(sqlx::query_as("SELECT id, name, owner_id, created_at FROM workspaces WHERE owner_id = $1 ORDER BY created_at DESC, id")
        .bind(owner_id)
        .fetch_all(pool)
        .await?)
}

/// One page of [`list_owned`]: at most `limit` workspaces after `after`
/// (the `(created_at, id)` of the last one of the previous page).
pub async fn page_owned(
    pool: &PgPool,
    owner_id: &str,
    after: Option<(DateTime<Utc>, String)>,
    limit: i64,
) -> Result<Vec<WorkspaceRow>, StoreError> {
    let (at, id) = after.unzip();
    Ok(sqlx::query_as(
        "SELECT id, name, owner_id, created_at FROM workspaces WHERE owner_id = $1
           AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3))
         ORDER BY created_at DESC, id DESC LIMIT $4",
    )
    .bind(owner_id)
    .bind(at)
    .bind(id)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// The workspace, only if `owner_id` owns it: callers answer "not found"
/// either way, so another user's workspace is indistinguishable from none.
pub async fn get_owned(pool: &PgPool, id: &str, owner_id: &str) -> Result<Option<WorkspaceRow>, StoreError> {
    Ok(sqlx::query_as("SELECT id, name, owner_id, created_at FROM workspaces WHERE id = $1 AND owner_id = $2")
        .bind(id)
        .bind(owner_id)
        .fetch_optional(pool)
        .await?)
}

//! Workspaces and their owners: a source table written by the API (see the
//! migration), the basis of every ownership check.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;

use crate::StoreError;

#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
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

/// What a workspace given by id or by name ([`find`]) turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    One(WorkspaceRow),
    None,
    /// Several share the name (none has it as its id): the caller asks
    /// for an id.
    Many(Vec<WorkspaceRow>),
}

/// Whether two names are the same name: case and surrounding spaces aside
/// ("Sao Biển Xanh" is " sao biển xanh ").
pub fn same_name(a: &str, b: &str) -> bool {
    a.trim().to_lowercase() == b.trim().to_lowercase()
}

impl Found {
    /// Picks among `rows` what `key` names: the one whose id it is, else
    /// those whose name it is.
    pub fn among(rows: Vec<WorkspaceRow>, key: &str) -> Found {
        if let Some(row) = rows.iter().find(|w| w.id == key) {
            return Found::One(row.clone());
        }
        let mut named: Vec<WorkspaceRow> = rows.into_iter().filter(|w| same_name(&w.name, key)).collect();
        match named.len() {
            0 => Found::None,
            1 => Found::One(named.remove(0)),
            _ => Found::Many(named),
        }
    }
}

/// The workspace `key` names, by id or by name, among `owner`'s (every
/// owner's when None: an operator's CLI). An id wins over a name. Names
/// are compared here, not in SQL: a database in the C locale lowercases
/// only ASCII ("Đ" stays "Đ").
pub async fn find(pool: &PgPool, owner: Option<&str>, key: &str) -> Result<Found, StoreError> {
    let rows: Vec<WorkspaceRow> = sqlx::query_as(
        "SELECT id, name, owner_id, created_at FROM workspaces WHERE $1::text IS NULL OR owner_id = $1 ORDER BY created_at DESC, id",
    )
    .bind(owner)
    .fetch_all(pool)
    .await?;
    Ok(Found::among(rows, key.trim()))
}

/// Renames the owner's workspace; None when they own no such workspace.
pub async fn rename(pool: &PgPool, id: &str, owner_id: &str, name: &str) -> Result<Option<WorkspaceRow>, StoreError> {
    Ok(sqlx::query_as("UPDATE workspaces SET name = $3 WHERE id = $1 AND owner_id = $2 RETURNING id, name, owner_id, created_at")
        .bind(id)
        .bind(owner_id)
        .bind(name)
        .fetch_optional(pool)
        .await?)
}

/// Removes the owner's workspace with what only it holds, in one
/// transaction: its conversations and their messages (not read models of
/// the log's documents: they go with the workspace), and the API keys
/// made for it alone (revoked, so a key never outlives what it reached).
/// Its documents are the caller's to delete first, through DocumentDeleted,
/// so the log and a rebuild agree. False when they own no such workspace.
pub async fn delete(pool: &PgPool, id: &str, owner_id: &str) -> Result<bool, StoreError> {
    let mut tx = pool.begin().await?;
    let gone = sqlx::query("DELETE FROM workspaces WHERE id = $1 AND owner_id = $2").bind(id).bind(owner_id).execute(&mut *tx).await?;
    if gone.rows_affected() == 0 {
        return Ok(false);
    }
    for table in ["messages", "conversations"] {
        sqlx::query(&format!("DELETE FROM {table} WHERE workspace_id = $1")).bind(id).execute(&mut *tx).await?;
    }
    sqlx::query("UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE workspace_id = $1 AND user_id = $2")
        .bind(id)
        .bind(owner_id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(true)
}

#[cfg(test)]
mod found_tests {
    use super::*;

    fn ws(id: &str, name: &str) -> WorkspaceRow {
        WorkspaceRow { id: id.into(), name: name.into(), owner_id: "u".into(), created_at: DateTime::<Utc>::UNIX_EPOCH }
    }

    #[test]
    fn an_id_wins_then_one_name_then_several_are_ambiguous() {
        let rows = vec![ws("01a", "Sao Biển Xanh"), ws("reports", "Khác"), ws("02b", "reports")];
        assert_eq!(Found::among(rows.clone(), "reports"), Found::One(ws("reports", "Khác")));
        assert_eq!(Found::among(rows.clone(), " sao biển xanh "), Found::One(ws("01a", "Sao Biển Xanh")));
        assert_eq!(Found::among(rows.clone(), "nothing"), Found::None);
        let twins = vec![ws("01a", "Hợp đồng"), ws("02b", "hợp đồng")];
        assert!(matches!(Found::among(twins, "Hợp Đồng"), Found::Many(v) if v.len() == 2));
    }
}

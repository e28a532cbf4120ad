//! API keys (see the migration): named bearer credentials of a user, for
//! every workspace of theirs or one. The secret itself is never stored:
//! the caller hashes it ([`create`] takes the hash) and finds a key by its
//! public lookup part ([`find_by_lookup`]).

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;
use uuid::Uuid;

use crate::StoreError;

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct ApiKeyRow {
    pub id: Uuid,
    pub user_id: String,
    pub name: String,
    /// None: every workspace of the user.
    pub workspace_id: Option<String>,
    /// The public part of the secret, shown in lists to tell keys apart.
    pub lookup: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub last_used_at: Option<DateTime<Utc>>,
    /// Whether chat replies for this key carry their sources in the text.
    pub sources_in_content: bool,
}

const COLUMNS: &str = "id, user_id, name, workspace_id, lookup, created_at, expires_at, revoked_at, last_used_at, sources_in_content";

/// A new key to store.
pub struct NewApiKey<'a> {
    pub id: Uuid,
    pub user_id: &'a str,
    pub name: &'a str,
    pub workspace_id: Option<&'a str>,
    pub lookup: &'a str,
    pub secret_sha256: &'a [u8],
    pub expires_at: Option<DateTime<Utc>>,
    pub sources_in_content: bool,
}

pub async fn create(pool: &PgPool, key: &NewApiKey<'_>) -> Result<ApiKeyRow, StoreError> {
    Ok(sqlx::query_as(&format!(
        "INSERT INTO api_keys (id, user_id, name, workspace_id, lookup, secret_sha256, created_at, expires_at, sources_in_content)
         VALUES ($1, $2, $3, $4, $5, $6, now(), $7, $8) RETURNING {COLUMNS}"
    ))
    .bind(key.id)
    .bind(key.user_id)
    .bind(key.name)
    .bind(key.workspace_id)
    .bind(key.lookup)
    .bind(key.secret_sha256)
    .bind(key.expires_at)
    .bind(key.sources_in_content)
    .fetch_one(pool)
    .await?)
}

/// The user's keys, revoked ones included, newest first.
pub async fn list_owned(pool: &PgPool, user_id: &str) -> Result<Vec<ApiKeyRow>, StoreError> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM api_keys WHERE user_id = $1 ORDER BY created_at DESC, id"))
        .bind(user_id)
        .fetch_all(pool)
        .await?)
}

/// How many keys the user holds that are neither revoked nor expired.
pub async fn count_live(pool: &PgPool, user_id: &str) -> Result<i64, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT count(*) FROM api_keys WHERE user_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())",
    )
    .bind(user_id)
    .fetch_one(pool)
    .await?)
}

/// Revokes the user's key `id` (once: a second revocation keeps the first
/// time). None when the user has no such key, whoever else might.
pub async fn revoke(pool: &PgPool, user_id: &str, id: Uuid) -> Result<Option<ApiKeyRow>, StoreError> {
    Ok(sqlx::query_as(&format!(
        "UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 AND user_id = $2 RETURNING {COLUMNS}"
    ))
    .bind(id)
    .bind(user_id)
    .fetch_optional(pool)
    .await?)
}

#[derive(sqlx::FromRow)]
struct WithHash {
    #[sqlx(flatten)]
    key: ApiKeyRow,
    secret_sha256: Vec<u8>,
}

/// The key whose public part is `lookup`, with the hash of its secret.
pub async fn find_by_lookup(pool: &PgPool, lookup: &str) -> Result<Option<(ApiKeyRow, Vec<u8>)>, StoreError> {
    let row: Option<WithHash> = sqlx::query_as(&format!("SELECT {COLUMNS}, secret_sha256 FROM api_keys WHERE lookup = $1"))
        .bind(lookup)
        .fetch_optional(pool)
        .await?;
    Ok(row.map(|r| (r.key, r.secret_sha256)))
}

/// Whether chat replies for key `id` carry their sources in the text
/// (true for a key that is gone: the default).
pub async fn sources_in_content(pool: &PgPool, id: Uuid) -> Result<bool, StoreError> {
    let v: Option<bool> = sqlx::query_scalar("SELECT sources_in_content FROM api_keys WHERE id = $1").bind(id).fetch_optional(pool).await?;
    Ok(v.unwrap_or(true))
}

/// Records a use of the key: at most one write a minute per key, so a busy
/// client does not turn every request into an UPDATE.
pub async fn touch(pool: &PgPool, id: Uuid) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')",
    )
    .bind(id)
    .execute(pool)
    .await?;
    Ok(())
}

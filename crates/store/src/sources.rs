//! Sources a workspace follows (a folder, an S3 prefix) and what each has
//! seen of its files: the checkpoint of `rag_sources::sync` (migration 22).

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;
use uuid::Uuid;

use crate::StoreError;

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct SourceRow {
    pub id: Uuid,
    pub workspace_id: String,
    /// `folder` or `s3`.
    pub kind: String,
    /// A folder's absolute path, or `s3://bucket/prefix`.
    pub location: String,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub sync_started_at: Option<DateTime<Utc>>,
    pub sync_completed_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    pub files_seen: i32,
    pub files_added: i32,
    pub files_changed: i32,
    pub files_removed: i32,
    pub files_failed: i32,
}

const COLUMNS: &str = "id, workspace_id, kind, location, created_by, created_at, sync_started_at, sync_completed_at, last_error,
    files_seen, files_added, files_changed, files_removed, files_failed";

/// Adds a source; None when the workspace already follows that location.
pub async fn add(pool: &PgPool, workspace_id: &str, kind: &str, location: &str, created_by: &str) -> Result<Option<SourceRow>, StoreError> {
    Ok(sqlx::query_as(&format!(
        "INSERT INTO sources (id, workspace_id, kind, location, created_by) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (workspace_id, kind, location) DO NOTHING RETURNING {COLUMNS}"
    ))
    .bind(Uuid::now_v7())
    .bind(workspace_id)
    .bind(kind)
    .bind(location)
    .bind(created_by)
    .fetch_optional(pool)
    .await?)
}

/// A workspace's sources, or every source (`None`), oldest first.
pub async fn list(pool: &PgPool, workspace_id: Option<&str>) -> Result<Vec<SourceRow>, StoreError> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM sources WHERE $1::text IS NULL OR workspace_id = $1 ORDER BY created_at, id"))
        .bind(workspace_id)
        .fetch_all(pool)
        .await?)
}

pub async fn get(pool: &PgPool, workspace_id: &str, id: Uuid) -> Result<Option<SourceRow>, StoreError> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM sources WHERE workspace_id = $1 AND id = $2"))
        .bind(workspace_id)
        .bind(id)
        .fetch_optional(pool)
        .await?)
}

/// Forgets a source and its checkpoint (its documents stay, the caller
/// deletes them through the log if asked). Whether it existed.
pub async fn remove(pool: &PgPool, workspace_id: &str, id: Uuid) -> Result<bool, StoreError> {
    Ok(sqlx::query("DELETE FROM sources WHERE workspace_id = $1 AND id = $2")
        .bind(workspace_id)
        .bind(id)
        .execute(pool)
        .await?
        .rows_affected()
        > 0)
}

/// One file as the checkpoint has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow)]
pub struct SourceFileRow {
    pub key: String,
    pub generation: i32,
    pub document_id: Uuid,
    pub listed_version: Option<String>,
    pub size_bytes: Option<i64>,
    pub sha256: Option<String>,
    pub revision: i32,
    pub pending_sha256: Option<String>,
    pub pending_revision: Option<i32>,
    /// `present`, `removed` or `failed`.
    pub state: String,
    pub failure: Option<String>,
    /// `unsupported_type`, `too_large`, `empty`, `quota_exceeded` or `unreadable`.
    pub failure_code: Option<String>,
}

impl SourceFileRow {
    /// The newest revision that may have reached the broker: a pending one
    /// counts (the sync that wrote it may have died after producing it).
    pub fn announced(&self) -> i32 {
        self.revision.max(self.pending_revision.unwrap_or(0))
    }
}

const FILE_COLUMNS: &str =
    "key, generation, document_id, listed_version, size_bytes, sha256, revision, pending_sha256, pending_revision, state,
    failure, failure_code";

/// Every file the source has seen.
pub async fn files(pool: &PgPool, source_id: Uuid) -> Result<Vec<SourceFileRow>, StoreError> {
    Ok(sqlx::query_as(&format!("SELECT {FILE_COLUMNS} FROM source_files WHERE source_id = $1 ORDER BY key"))
        .bind(source_id)
        .fetch_all(pool)
        .await?)
}

/// Writes one file's checkpoint as given (insert or replace).
pub async fn put_file(pool: &PgPool, source_id: Uuid, f: &SourceFileRow) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO source_files (source_id, key, generation, document_id, listed_version, size_bytes, sha256, revision,
                                   pending_sha256, pending_revision, state, failure, failure_code, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, now())
         ON CONFLICT (source_id, key) DO UPDATE SET generation = EXCLUDED.generation, document_id = EXCLUDED.document_id,
            listed_version = EXCLUDED.listed_version, size_bytes = EXCLUDED.size_bytes, sha256 = EXCLUDED.sha256,
            revision = EXCLUDED.revision, pending_sha256 = EXCLUDED.pending_sha256,
            pending_revision = EXCLUDED.pending_revision, state = EXCLUDED.state, failure = EXCLUDED.failure,
            failure_code = EXCLUDED.failure_code, updated_at = now()",
    )
    .bind(source_id)
    .bind(&f.key)
    .bind(f.generation)
    .bind(f.document_id)
    .bind(&f.listed_version)
    .bind(f.size_bytes)
    .bind(&f.sha256)
    .bind(f.revision)
    .bind(&f.pending_sha256)
    .bind(f.pending_revision)
    .bind(&f.state)
    .bind(&f.failure)
    .bind(&f.failure_code)
    .execute(pool)
    .await?;
    Ok(())
}

/// A sync began.
pub async fn sync_started(pool: &PgPool, id: Uuid) -> Result<(), StoreError> {
    sqlx::query("UPDATE sources SET sync_started_at = now() WHERE id = $1").bind(id).execute(pool).await?;
    Ok(())
}

/// What one complete sync did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SyncCounts {
    pub seen: i32,
    pub added: i32,
    pub changed: i32,
    pub removed: i32,
    pub failed: i32,
    pub unchanged: i32,
    /// Files read from the source (the listing said they may have changed).
    pub fetched: i32,
}

/// A sync ended: complete with its counts, or stopped by `error`.
pub async fn sync_ended(pool: &PgPool, id: Uuid, outcome: Result<&SyncCounts, &str>) -> Result<(), StoreError> {
    match outcome {
        Ok(c) => {
            sqlx::query(
                "UPDATE sources SET sync_completed_at = now(), last_error = NULL, files_seen = $2, files_added = $3,
                    files_changed = $4, files_removed = $5, files_failed = $6 WHERE id = $1",
            )
            .bind(id)
            .bind(c.seen)
            .bind(c.added)
            .bind(c.changed)
            .bind(c.removed)
            .bind(c.failed)
            .execute(pool)
            .await?
        }
        Err(error) => sqlx::query("UPDATE sources SET last_error = $2 WHERE id = $1").bind(id).bind(error).execute(pool).await?,
    };
    Ok(())
}

/// What one source has seen, for the metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceObserved {
    pub source: Uuid,
    /// Files listed by its last complete sync.
    pub seen: i64,
    /// Files that are a document now.
    pub present: i64,
    /// Files refused.
    pub failed: i64,
    /// Files announced and not yet confirmed (a sync died, or runs now).
    pub pending: i64,
    /// Seconds since its last complete sync (since it was added, if never).
    pub sync_age_secs: f64,
}

/// Every source's files by state and the age of its last complete sync.
pub async fn observe(pool: &PgPool) -> Result<Vec<SourceObserved>, StoreError> {
    let rows: Vec<(Uuid, i32, i64, i64, i64, f64)> = sqlx::query_as(
        "SELECT s.id, s.files_seen,
                count(f.key) FILTER (WHERE f.state = 'present' AND f.pending_sha256 IS NULL),
                count(f.key) FILTER (WHERE f.state = 'failed'),
                count(f.key) FILTER (WHERE f.pending_sha256 IS NOT NULL),
                EXTRACT(EPOCH FROM now() - coalesce(s.sync_completed_at, s.created_at))::float8
         FROM sources s LEFT JOIN source_files f ON f.source_id = s.id
         GROUP BY s.id ORDER BY s.id",
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(source, seen, present, failed, pending, age)| SourceObserved {
            source,
            seen: i64::from(seen),
            present,
            failed,
            pending,
            sync_age_secs: age.max(0.0),
        })
        .collect())
}

/// Holds the source's sync lock until the returned transaction ends (it is
/// only ever rolled back; dropped, by a sync cut short, it releases the lock
/// too): two syncs of one source, in one process or several, run one after
/// the other, so one change is never allocated two revisions.
pub async fn hold_sync_lock(pool: &PgPool, source: Uuid) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, StoreError> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('rag-engine source sync ' || $1::text, 0))")
        .bind(source)
        .execute(&mut *tx)
        .await?;
    Ok(tx)
}

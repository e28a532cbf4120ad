// Kept whole at ~410 lines: the documents read model's SQL, one statement per question asked of it.
//! The documents read model.

use chrono::{DateTime, TimeZone, Utc};
use rag_events::DocumentUploaded;
use serde::Serialize;
use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

// The status rule has its own module; callers keep finding it here.
pub use crate::status::DocumentStatus;
use crate::status::{contiguous_rank, status_of_rank};
use crate::transitions::{self, StepOutcome};
use crate::StoreError;

fn millis(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or_else(Utc::now)
}

pub(crate) fn parse_id(id: &str) -> Result<Uuid, StoreError> {
    Uuid::parse_str(id).map_err(|e| StoreError::Invalid(format!("document id {id:?}: {e}")))
}

/// Projects DocumentUploaded: creates the row, or fills in the upload facts
/// of a row a later event created first, keeping its status.
pub async fn apply_uploaded(tx: &mut Transaction<'_, Postgres>, e: &DocumentUploaded) -> Result<(), StoreError> {
    let id = parse_id(&e.document_id)?;
    let metadata = serde_json::to_value(&e.metadata).map_err(|e| StoreError::Invalid(e.to_string()))?;
    let at = millis(e.envelope.occurred_at);
    // Later steps projected first (a row they created) show once the
    // upload joins them: the status moves to the end of the unbroken run.
    let ws = &e.envelope.workspace_id;
    sqlx::query(
        "INSERT INTO document_revisions (document_id, revision, workspace_id, filename, content_type, size_bytes, sha256,
                                         blob_uri, uploaded_at)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9
         WHERE NOT EXISTS (SELECT 1 FROM documents WHERE id = $1 AND status = 'deleted')
         ON CONFLICT (document_id, revision) DO UPDATE SET filename = EXCLUDED.filename,
            content_type = EXCLUDED.content_type, size_bytes = EXCLUDED.size_bytes, sha256 = EXCLUDED.sha256,
            blob_uri = EXCLUDED.blob_uri, uploaded_at = EXCLUDED.uploaded_at
         WHERE document_revisions.workspace_id = EXCLUDED.workspace_id",
    )
    .bind(id)
    .bind(e.revision)
    .bind(ws)
    .bind(&e.filename)
    .bind(&e.content_type)
    .bind(e.size_bytes)
    .bind(&e.sha256)
    .bind(&e.blob_uri)
    .bind(at)
    .execute(&mut **tx)
    .await?;
    // An older revision's upload (replayed, late) is kept above; the
    // document's row shows its newest revision.
    if transitions::enter_revision(tx, id, ws, e.revision).await? == transitions::RevisionRole::Older {
        return Ok(());
    }
    let reached = contiguous_rank("(documents.projected_steps | 1)");
    let status = status_of_rank(&reached);
    sqlx::query(&format!(
        "INSERT INTO documents (id, workspace_id, filename, content_type, size_bytes, sha256, blob_uri, uploaded_by,
                                metadata, status, status_rank, correlation_id, uploaded_at, updated_at, projected_steps,
                                latest_revision)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, 1, $14)
         ON CONFLICT (id) DO UPDATE SET
            filename = EXCLUDED.filename, content_type = EXCLUDED.content_type,
            size_bytes = EXCLUDED.size_bytes, sha256 = EXCLUDED.sha256, blob_uri = EXCLUDED.blob_uri,
            uploaded_by = EXCLUDED.uploaded_by, metadata = EXCLUDED.metadata,
            correlation_id = EXCLUDED.correlation_id, uploaded_at = EXCLUDED.uploaded_at,
            status = CASE WHEN documents.status_rank < {reached} THEN {status} ELSE documents.status END,
            status_rank = GREATEST(documents.status_rank, {reached}),
            projected_steps = documents.projected_steps | 1,
            latest_revision = GREATEST(documents.latest_revision, EXCLUDED.latest_revision)
         WHERE documents.workspace_id = EXCLUDED.workspace_id"
    ))
    .bind(id)
    .bind(&e.envelope.workspace_id)
    .bind(&e.filename)
    .bind(&e.content_type)
    .bind(e.size_bytes)
    .bind(&e.sha256)
    .bind(&e.blob_uri)
    .bind(&e.uploaded_by)
    .bind(metadata)
    .bind(DocumentStatus::Uploaded.as_str())
    .bind(DocumentStatus::Uploaded.rank())
    .bind(&e.envelope.correlation_id)
    .bind(at)
    .bind(e.revision)
    .execute(&mut **tx)
    .await?;
    // The upload facts are in; a redriven upload whose dead letter failed
    // the document recovers it (the rule is the other steps').
    let outcome = StepOutcome::Succeeded { step: DocumentStatus::Uploaded, starts_run: true };
    transitions::apply_step(tx, id, &e.envelope.workspace_id, outcome, at).await
}

/// Marks an existing document failed because its event of `step` went to
/// the dead-letter topic (`at`: when, by the message's timestamp). Unknown
/// ids are ignored: there is nothing to mark, and the message does not say
/// which workspace it belongs to. A later success of that step (the
/// redriven event) recovers the document.
pub async fn mark_failed(
    tx: &mut Transaction<'_, Postgres>,
    document_id: &str,
    step: DocumentStatus,
    code: &str,
    reason: &str,
    at: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let Ok(id) = Uuid::parse_str(document_id) else { return Ok(false) };
    let done = sqlx::query(
        "UPDATE documents SET status = 'failed', status_rank = $2,
                failure_code = CASE WHEN status <> 'failed' OR failed_at IS NULL OR failed_at <= $6 THEN $3 ELSE failure_code END,
                failure_reason = CASE WHEN status <> 'failed' OR failed_at IS NULL OR failed_at <= $6 THEN $4 ELSE failure_reason END,
                failed_at = CASE WHEN status <> 'failed' THEN $6 ELSE GREATEST(failed_at, $6) END,
                failed_steps = failed_steps | $5,
                updated_at = GREATEST(updated_at, $6)
         WHERE id = $1 AND status_rank <= $2",
    )
    .bind(id)
    .bind(DocumentStatus::Failed.rank())
    .bind(code)
    .bind(reason)
    .bind(transitions::step_bit(step))
    .bind(at)
    .execute(&mut **tx)
    .await?;
    Ok(done.rows_affected() > 0)
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct DocumentRow {
    pub id: Uuid,
    pub workspace_id: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub size_bytes: Option<i64>,
    pub sha256: Option<String>,
    pub blob_uri: Option<String>,
    pub uploaded_by: Option<String>,
    pub metadata: serde_json::Value,
    #[sqlx(try_from = "String")]
    pub status: DocumentStatus,
    pub failure_code: Option<String>,
    pub failure_reason: Option<String>,
    pub page_count: Option<i32>,
    /// Zero-based pages with no text (not searchable).
    pub pages_without_text: Vec<i32>,
    /// Zero-based pages read by OCR.
    pub ocr_pages: Vec<i32>,
    pub active_chunking_version: Option<String>,
    pub chunk_count: Option<i32>,
    /// Sentences written to the model rather than to a reader (None:
    /// chunked before they were counted).
    pub instructions_found: Option<i32>,
    pub uploaded_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
    /// The revision search reads; None before one is ingested.
    pub revision: Option<i32>,
    /// The newest revision uploaded; its steps are the status.
    pub latest_revision: i32,
}

pub(crate) const COLUMNS: &str = "id, workspace_id, filename, content_type, size_bytes, sha256, blob_uri, uploaded_by, metadata,
    status, failure_code, failure_reason, page_count, pages_without_text, ocr_pages, active_chunking_version, chunk_count,
    instructions_found, uploaded_at, updated_at, revision, latest_revision";

/// Documents of one workspace, newest first (deleted ones excluded).
pub async fn list(pool: &PgPool, workspace_id: &str) -> Result<Vec<DocumentRow>, StoreError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM documents WHERE workspace_id = $1 AND status <> 'deleted'
         ORDER BY uploaded_at DESC NULLS LAST, id"
    ))
    .bind(workspace_id)
    .fetch_all(pool)
    .await?)
}

/// One page of [`list`]: at most `limit` documents after `after` (the
/// `(uploaded_at, id)` of the last one of the previous page), newest
/// first. A document not yet uploaded sorts as if uploaded at the epoch.
pub async fn page(
    pool: &PgPool,
    workspace_id: &str,
    after: Option<(DateTime<Utc>, Uuid)>,
    limit: i64,
) -> Result<Vec<DocumentRow>, StoreError> {
    let (at, id) = after.unzip();
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM documents WHERE workspace_id = $1 AND status <> 'deleted'
           AND ($2::timestamptz IS NULL OR (COALESCE(uploaded_at, 'epoch'), id) < ($2, $3))
         ORDER BY COALESCE(uploaded_at, 'epoch') DESC, id DESC LIMIT $4"
    ))
    .bind(workspace_id)
    .bind(at)
    .bind(id)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// The horizon of a status stream and what changed at or above the
/// previous one ([`status_changes_since`]).
#[derive(Debug, Clone)]
pub struct StatusChanges {
    /// Every transaction below it has ended: a change not seen yet has a
    /// transaction id at or above it.
    pub horizon: i64,
    /// Documents (deleted ones included) changed by a transaction at or
    /// above `since`, as they are now, oldest update first.
    pub documents: Vec<DocumentRow>,
}

/// The documents of a workspace changed at or above `since` (a horizon
/// from an earlier call; None: none, only the horizon), and the new
/// horizon, both from one snapshot. The change rows are the
/// `search_changes` every documents insert and status change records
/// (migrations 8 and 14); a document changed again later is read again, so
/// a reader moving its horizon forward misses nothing, and may see a row
/// twice while the transaction that wrote it is still open elsewhere. Not
/// paged: the rows are at most the workspace's documents, and between two
/// polls of a stream they are the few in flight.
pub async fn status_changes_since(pool: &PgPool, workspace_id: &str, since: Option<i64>) -> Result<StatusChanges, StoreError> {
    let mut tx = pool.begin().await?;
    // One snapshot for the horizon and the rows (repeatable read takes it
    // at the first statement).
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY").execute(&mut *tx).await?;
    let horizon: i64 = sqlx::query_scalar("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::int8").fetch_one(&mut *tx).await?;
    let documents = match since {
        None => Vec::new(),
        Some(since) => {
            sqlx::query_as(&format!(
                "SELECT {COLUMNS} FROM documents WHERE workspace_id = $1
                   AND id IN (SELECT document_id FROM search_changes WHERE workspace_id = $1 AND xid >= $2)
                 ORDER BY updated_at, id"
            ))
            .bind(workspace_id)
            .bind(since)
            .fetch_all(&mut *tx)
            .await?
        }
    };
    tx.commit().await?;
    Ok(StatusChanges { horizon, documents })
}

/// Bytes of originals the workspace holds (documents not deleted): what its
/// storage quota counts.
pub async fn stored_bytes(pool: &PgPool, workspace_id: &str) -> Result<i64, StoreError> {
    let total: Option<i64> =
        sqlx::query_scalar("SELECT sum(size_bytes)::bigint FROM documents WHERE workspace_id = $1 AND status <> 'deleted'")
            .bind(workspace_id)
            .fetch_one(pool)
            .await?;
    Ok(total.unwrap_or(0))
}

/// One document, only if it belongs to the workspace.
pub async fn get(pool: &PgPool, workspace_id: &str, id: Uuid) -> Result<Option<DocumentRow>, StoreError> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM documents WHERE workspace_id = $1 AND id = $2"))
        .bind(workspace_id)
        .bind(id)
        .fetch_optional(pool)
        .await?)
}

/// Projects DocumentDeleted: the document leaves every listing (and search,
/// which reads only live documents) at once. [`purge`] removes its rows.
/// Every step counts as projected from then on (steps the deletion skips
/// would otherwise leave a rebuild's bits to the order of the topics).
pub async fn apply_deleted(tx: &mut Transaction<'_, Postgres>, e: &rag_events::DocumentDeleted) -> Result<(), StoreError> {
    let id = parse_id(&e.document_id)?;
    let at = millis(e.envelope.occurred_at);
    sqlx::query(
        "INSERT INTO documents (id, workspace_id, status, status_rank, updated_at, deleted_at, projected_steps)
         VALUES ($1, $2, 'deleted', $3, $4, $4, 15)
         ON CONFLICT (id) DO UPDATE SET status = 'deleted', status_rank = $3, deleted_at = $4, updated_at = $4,
                                        projected_steps = 15
         WHERE documents.workspace_id = EXCLUDED.workspace_id AND documents.status_rank < $3",
    )
    .bind(id)
    .bind(&e.envelope.workspace_id)
    .bind(DocumentStatus::Deleted.rank())
    .bind(at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The document's status, if it has a row (any workspace).
pub async fn status_of<'e, E: sqlx::PgExecutor<'e>>(executor: E, id: Uuid) -> Result<Option<DocumentStatus>, StoreError> {
    let status: Option<String> = sqlx::query_scalar("SELECT status FROM documents WHERE id = $1").bind(id).fetch_optional(executor).await?;
    Ok(status.map(|s| s.parse()).transpose()?)
}

/// When the document was uploaded, if it is still on its way to its first
/// ingestion (a re-chunking replay ingests it again and is not a new upload).
pub async fn awaiting_first_ingestion(tx: &mut Transaction<'_, Postgres>, id: Uuid) -> Result<Option<DateTime<Utc>>, StoreError> {
    let row: Option<(String, Option<DateTime<Utc>>)> =
        sqlx::query_as("SELECT status, uploaded_at FROM documents WHERE id = $1").bind(id).fetch_optional(&mut **tx).await?;
    Ok(match row {
        Some((status, Some(uploaded))) if status.parse::<DocumentStatus>()?.in_progress() => Some(uploaded),
        _ => None,
    })
}

/// Whether the document is deleted, holding a share lock on its row until
/// the transaction ends: a deletion committing concurrently waits for the
/// caller's writes and then purges them, or commits first and is seen here.
pub async fn is_deleted_locked(tx: &mut Transaction<'_, Postgres>, id: Uuid) -> Result<bool, StoreError> {
    let status: Option<String> =
        sqlx::query_scalar("SELECT status FROM documents WHERE id = $1 FOR SHARE").bind(id).fetch_optional(&mut **tx).await?;
    Ok(status.as_deref() == Some(DocumentStatus::Deleted.as_str()))
}

/// What a purge removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Purged {
    pub search_chunks: u64,
    pub chunk_mappings: u64,
    pub segments: u64,
    pub versions: u64,
    pub revisions: u64,
}

/// Removes a deleted document's rows from the search index (terms follow
/// by cascade), its chunk mappings, versions and segments. Idempotent. The
/// row in `documents` stays as a tombstone (status `deleted`) with its
/// upload facts only, so a late or replayed event of the document changes
/// nothing and the tombstone is the same whatever was projected before it.
pub async fn purge(tx: &mut Transaction<'_, Postgres>, workspace_id: &str, id: Uuid) -> Result<Purged, StoreError> {
    sqlx::query(
        "UPDATE documents SET parser = NULL, page_count = NULL, segment_count = NULL, char_count = NULL,
                full_text_uri = NULL, segments_uri = NULL, active_chunking_version = NULL, revision = NULL, chunk_count = NULL, instructions_found = NULL,
                embedding_model = NULL, embedding_dimension = NULL, failure_code = NULL, failure_reason = NULL,
                failed_at = NULL, failed_steps = 0, pages_without_text = '{}', ocr_pages = '{}', line_count = NULL, pages = '[]'::jsonb
         WHERE id = $1 AND workspace_id = $2 AND status = 'deleted'",
    )
    .bind(id)
    .bind(workspace_id)
    .execute(&mut **tx)
    .await?;
    let mut purged = Purged::default();
    for (table, count) in [
        ("search_chunks", &mut purged.search_chunks),
        ("chunk_mappings", &mut purged.chunk_mappings),
        ("segments", &mut purged.segments),
        ("document_versions", &mut purged.versions),
        ("document_revisions", &mut purged.revisions),
    ] {
        *count = sqlx::query(&format!("DELETE FROM {table} WHERE document_id = $1 AND workspace_id = $2"))
            .bind(id)
            .bind(workspace_id)
            .execute(&mut **tx)
            .await?
            .rows_affected();
    }
    Ok(purged)
}

/// Whether another live document of the workspace stores its original at
/// `blob_uri` (originals are content-addressed, so identical uploads share one).
pub async fn original_shared(pool: &PgPool, workspace_id: &str, id: Uuid, blob_uri: &str) -> Result<bool, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM documents WHERE workspace_id = $1 AND blob_uri = $2 AND id <> $3 AND status <> 'deleted')",
    )
    .bind(workspace_id)
    .bind(blob_uri)
    .bind(id)
    .fetch_one(pool)
    .await?)
}

/// Every document's status, for invariant checks (`rag-engine verify`).
pub async fn all_statuses(pool: &PgPool) -> Result<Vec<(Uuid, DocumentStatus)>, StoreError> {
    let rows: Vec<(Uuid, String)> = sqlx::query_as("SELECT id, status FROM documents").fetch_all(pool).await?;
    rows.into_iter().map(|(id, status)| Ok((id, status.parse()?))).collect()
}

/// Documents in a non-terminal state (uploaded, parsed, chunked) whose last
/// change is at least `older_than_secs` old (0: all of them).
pub async fn count_unfinished_since(pool: &PgPool, older_than_secs: i64) -> Result<i64, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT count(*) FROM documents
         WHERE status IN ('uploaded', 'parsed', 'chunked') AND updated_at <= now() - make_interval(secs => $1)",
    )
    .bind(older_than_secs as f64)
    .fetch_one(pool)
    .await?)
}

/// The next revision number of a document, allocated once: two changes
/// uploaded before the first is projected still get two numbers. Starts
/// above the newest revision the read model knows, and above `known` (the
/// caller's own last revision: a source's, announced but perhaps not
/// projected yet; an upstream system may have produced revisions too).
pub async fn allocate_revision(pool: &PgPool, workspace_id: &str, id: Uuid, known: i32) -> Result<i32, StoreError> {
    Ok(sqlx::query_scalar(
        "WITH known AS (SELECT GREATEST(COALESCE((SELECT latest_revision FROM documents WHERE id = $1 AND workspace_id = $2), 0),
                                        $3) AS latest)
         INSERT INTO revision_allocations (document_id, last_revision)
         SELECT $1, latest + 1 FROM known
         ON CONFLICT (document_id) DO UPDATE
            SET last_revision = GREATEST(revision_allocations.last_revision, EXCLUDED.last_revision - 1) + 1
         RETURNING last_revision",
    )
    .bind(id)
    .bind(workspace_id)
    .bind(known)
    .fetch_one(pool)
    .await?)
}

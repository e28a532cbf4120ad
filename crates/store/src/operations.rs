//! What the operator commands read and reset: ingest and replay progress,
//! benchmark totals, and the read models' reset before `rebuild`. Kept here
//! so the SQL of the read models lives in one crate.

use sqlx::PgPool;
use uuid::Uuid;

use crate::StoreError;

/// Every read-model table a rebuild empties and refills from the log
/// (`workspaces` is a source table and stays).
pub const READ_MODEL_TABLES: &[&str] =
    &["search_terms", "search_chunks", "chunk_mappings", "segments", "document_versions", "documents", "messages"];

/// Empties the read models and forgets the Postgres-owned positions of
/// `groups`, in one transaction: a failure leaves both as they were.
pub async fn reset_read_models(pool: &PgPool, groups: &[String]) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    sqlx::query(&format!("TRUNCATE {}", READ_MODEL_TABLES.join(", "))).execute(&mut *tx).await?;
    sqlx::query("DELETE FROM consumer_offsets WHERE consumer_group = ANY($1)").bind(groups).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(())
}

/// Rows per read-model table, in [`READ_MODEL_TABLES`] order.
pub async fn read_model_rows(pool: &PgPool) -> Result<Vec<(&'static str, i64)>, StoreError> {
    let mut rows = Vec::with_capacity(READ_MODEL_TABLES.len());
    for table in READ_MODEL_TABLES {
        rows.push((*table, sqlx::query_scalar(&format!("SELECT count(*) FROM {table}")).fetch_one(pool).await?));
    }
    Ok(rows)
}

/// Fresh planner statistics of the search tables, after a bulk load.
pub async fn analyze_search_tables(pool: &PgPool) -> Result<(), StoreError> {
    sqlx::query("ANALYZE search_terms, search_chunks, documents").execute(pool).await?;
    Ok(())
}

/// Documents of a workspace that reached the end of the pipeline (ingested or failed).
pub async fn settled_documents(pool: &PgPool, workspace_id: &str) -> Result<i64, StoreError> {
    Ok(sqlx::query_scalar("SELECT count(*) FROM documents WHERE workspace_id = $1 AND status IN ('ingested', 'failed')")
        .bind(workspace_id)
        .fetch_one(pool)
        .await?)
}

/// What a workspace's documents add up to, for `bench ingest`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkspaceTotals {
    pub failed: i64,
    pub pages: i64,
    pub segments: i64,
    pub chunks: i64,
}

pub async fn workspace_totals(pool: &PgPool, workspace_id: &str) -> Result<WorkspaceTotals, StoreError> {
    let (failed, pages, segments, chunks): (i64, Option<i64>, Option<i64>, Option<i64>) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE status = 'failed'), sum(page_count)::bigint, sum(segment_count)::bigint,
                sum(chunk_count)::bigint
         FROM documents WHERE workspace_id = $1",
    )
    .bind(workspace_id)
    .fetch_one(pool)
    .await?;
    Ok(WorkspaceTotals { failed, pages: pages.unwrap_or(0), segments: segments.unwrap_or(0), chunks: chunks.unwrap_or(0) })
}

/// Seconds from upload to the last change of each document of a workspace
/// (for settled documents: upload to ingested or failed), ascending.
pub async fn settle_seconds(pool: &PgPool, workspace_id: &str) -> Result<Vec<f64>, StoreError> {
    let mut seconds: Vec<f64> = sqlx::query_scalar(
        "SELECT EXTRACT(EPOCH FROM (updated_at - uploaded_at))::float8 FROM documents
         WHERE workspace_id = $1 AND uploaded_at IS NOT NULL",
    )
    .bind(workspace_id)
    .fetch_all(pool)
    .await?;
    seconds.sort_by(|a, b| a.total_cmp(b));
    Ok(seconds)
}

/// How far a replay onto `version` has come over the replayed documents.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayProgress {
    /// Ingested with `version` active.
    pub flipped: i64,
    /// Failed or deleted meanwhile: they will not flip.
    pub gone: i64,
    /// Chunks of the flipped documents on `version`.
    pub chunks: i64,
}

pub async fn replay_progress(pool: &PgPool, documents: &[Uuid], version: &str) -> Result<ReplayProgress, StoreError> {
    let (flipped, gone, chunks): (i64, i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE active_chunking_version = $2 AND status = 'ingested'),
                count(*) FILTER (WHERE status IN ('failed', 'deleted')),
                coalesce(sum(chunk_count) FILTER (WHERE active_chunking_version = $2 AND status = 'ingested'), 0)
         FROM documents WHERE id = ANY($1)",
    )
    .bind(documents)
    .bind(version)
    .fetch_one(pool)
    .await?;
    Ok(ReplayProgress { flipped, gone, chunks })
}

//! What the operator commands read and reset: ingest and replay progress,
//! benchmark totals, and the read models' reset before `rebuild`. Kept here
//! so the SQL of the read models lives in one crate.

use sqlx::PgPool;
use uuid::Uuid;

use crate::StoreError;

/// Every read-model table a rebuild empties and refills from the log
/// (`workspaces` is a source table and stays).
pub const READ_MODEL_TABLES: &[&str] =
    &["search_chunks", "chunk_mappings", "segments", "document_versions", "document_revisions", "documents", "messages"];

/// Empties the read models and forgets the Postgres-owned positions of
/// `groups`, in one transaction: a failure leaves both as they were.
pub async fn reset_read_models(pool: &PgPool, groups: &[String]) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    // The truncation bumps search_epoch (a trigger): in-memory indexes reload.
    sqlx::query(&format!("TRUNCATE {}, search_changes", READ_MODEL_TABLES.join(", "))).execute(&mut *tx).await?;
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
    sqlx::query("ANALYZE search_chunks, documents").execute(pool).await?;
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayProgress {
    /// Ingested with `version` active.
    pub flipped: i64,
    /// Failed meanwhile: they will not flip.
    pub failed: i64,
    /// Deleted meanwhile (a user's deletion during the replay), or gone
    /// from the read model: nothing left to re-chunk, and not a failure of
    /// the replay.
    pub deleted: i64,
    /// Documents with a revision newer than the one the replay chunked:
    /// uploaded after the replay read the topic, or one it could not chunk
    /// (its parse had failed, or had not happened yet when the replay read
    /// the topic). The pipeline chunks that revision with its own profile,
    /// so the replayed version never becomes active (seen in the soak:
    /// four files of the followed folder edited during the replay kept it
    /// waiting until its timeout). Not a failure of the replay, whatever
    /// became of the newer revision; `rag-engine replay --document` moves
    /// such a document once its newest revision is parsed.
    pub revised: Vec<Uuid>,
    /// Chunks of the flipped documents on `version`.
    pub chunks: i64,
}

impl ReplayProgress {
    /// Documents with nothing left to wait for.
    pub fn settled(&self) -> i64 {
        self.flipped + self.failed + self.deleted + self.revised.len() as i64
    }
}

/// The replay's progress over `documents`, each with the newest revision
/// the replay chunked of it. Every document is counted once: flipped,
/// failed, deleted (or gone), revised, or still on its way.
pub async fn replay_progress(pool: &PgPool, documents: &[(Uuid, i32)], version: &str) -> Result<ReplayProgress, StoreError> {
    // Flipped counts only once the version's chunk mappings are projected
    // too: DocumentChunked and DocumentIngested are on different topics, so
    // the flip may be projected first (seen in the rebuild test: the replay
    // reported done while the document had no mapping yet).
    // A changed document is on `version` in its searchable revision's key.
    let key = crate::index_version_sql("$3", "d.revision");
    let (ids, revisions): (Vec<Uuid>, Vec<i32>) = documents.iter().copied().unzip();
    let (flipped, failed, deleted, revised, chunks): (i64, i64, i64, Vec<Uuid>, i64) = sqlx::query_as(&format!(
        "WITH d AS (
             SELECT r.id, d.id IS NULL AS gone, d.status,
                    coalesce(d.active_chunking_version = {key} AND d.status = 'ingested'
                        AND (SELECT count(*) FROM chunk_mappings m WHERE m.document_id = d.id AND m.chunking_version = {key})
                            = coalesce(d.chunk_count, 0), false) AS flipped,
                    coalesce(d.latest_revision > r.replayed, false) AS revised,
                    d.chunk_count
             FROM unnest($1::uuid[], $2::int[]) AS r(id, replayed) LEFT JOIN documents d ON d.id = r.id)
         SELECT count(*) FILTER (WHERE flipped),
                count(*) FILTER (WHERE status = 'failed' AND NOT revised),
                count(*) FILTER (WHERE gone OR status = 'deleted'),
                coalesce(array_agg(id ORDER BY id) FILTER (WHERE revised AND NOT flipped AND status <> 'deleted'), '{{}}'),
                coalesce(sum(chunk_count) FILTER (WHERE flipped), 0)
         FROM d"
    ))
    .bind(&ids)
    .bind(&revisions)
    .bind(version)
    .fetch_one(pool)
    .await?;
    Ok(ReplayProgress { flipped, failed, deleted, revised, chunks })
}

/// Deletes every read-model row of one workspace, in one transaction. Only
/// for throw-away workspaces whose events live on throw-away topics (the
/// runs of `bench` and `eval`, its retrieval fixtures): anything else is
/// deleted through DocumentDeleted, so a rebuild from the log agrees.
pub async fn delete_workspace_rows(pool: &PgPool, workspace_id: &str) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    // Conversations are not a read model of the log but go with the messages.
    for table in
        ["search_chunks", "chunk_mappings", "segments", "document_versions", "document_revisions", "messages", "conversations", "documents"]
    {
        sqlx::query(&format!("DELETE FROM {table} WHERE workspace_id = $1")).bind(workspace_id).execute(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// The text of every indexed chunk of a workspace, per document in chunk
/// order (to count the word pieces an ingest embedded, and to encode them
/// again alone as the indexer did).
pub async fn chunk_contents(pool: &PgPool, workspace_id: &str) -> Result<Vec<Vec<String>>, StoreError> {
    let rows: Vec<(Uuid, String)> =
        sqlx::query_as("SELECT document_id, content FROM search_chunks WHERE workspace_id = $1 ORDER BY document_id, chunk_index")
            .bind(workspace_id)
            .fetch_all(pool)
            .await?;
    let mut documents: Vec<Vec<String>> = Vec::new();
    let mut last = None;
    for (document, content) in rows {
        if last != Some(document) {
            documents.push(Vec::new());
            last = Some(document);
        }
        if let Some(d) = documents.last_mut() {
            d.push(content);
        }
    }
    Ok(documents)
}

/// Chunks in a workspace's search index: every one, and those embedded
/// with `model` (or with none when `model` is None).
pub async fn chunk_count(pool: &PgPool, workspace_id: &str, model: Option<&str>) -> Result<(i64, i64), StoreError> {
    Ok(sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE embedding_model IS NOT DISTINCT FROM $2) FROM search_chunks WHERE workspace_id = $1",
    )
    .bind(workspace_id)
    .bind(model)
    .fetch_one(pool)
    .await?)
}

/// Workspaces with documents whose id starts with `prefix`.
pub async fn workspaces_with_prefix(pool: &PgPool, prefix: &str) -> Result<Vec<String>, StoreError> {
    Ok(sqlx::query_scalar("SELECT DISTINCT workspace_id FROM documents WHERE starts_with(workspace_id, $1) ORDER BY 1")
        .bind(prefix)
        .fetch_all(pool)
        .await?)
}

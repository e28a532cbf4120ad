//! Read-model audits for fault-injection checks (`rag-dev chaos`): per
//! document, the rows its events say it has beside the rows it has.

use sqlx::PgPool;
use uuid::Uuid;

use crate::documents::DocumentStatus;
use crate::messages::MessageStatus;
use crate::StoreError;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DocumentAudit {
    pub id: Uuid,
    #[sqlx(try_from = "String")]
    pub status: DocumentStatus,
    /// From DocumentParsed.
    pub segment_count: Option<i32>,
    /// From DocumentChunked, for the active version.
    pub chunk_count: Option<i32>,
    pub segments: i64,
    pub mappings: i64,
    pub indexed: i64,
}

/// A row count of an ingested document that differs from what its events give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowProblem {
    /// More rows than its events give: an effect applied twice.
    Doubled(String),
    /// Fewer (or none): an effect lost.
    Missing(String),
}

impl DocumentAudit {
    /// For an `ingested` document: segments, chunk mappings and index rows
    /// against the counts its DocumentParsed and DocumentChunked carry.
    pub fn row_problems(&self) -> Vec<RowProblem> {
        let rows = [
            ("segments", self.segments, self.segment_count),
            ("mappings", self.mappings, self.chunk_count),
            ("index", self.indexed, self.chunk_count),
        ];
        let mut problems = Vec::new();
        for (what, have, want) in rows {
            let want = i64::from(want.unwrap_or(0));
            let line = format!("{}: {have} {what} rows, its events give {want}", self.id);
            if have > want {
                problems.push(RowProblem::Doubled(line));
            } else if have < want || want == 0 {
                problems.push(RowProblem::Missing(line));
            }
        }
        problems
    }
}

/// Every document, or one workspace's (`workspace`).
pub async fn documents(pool: &PgPool, workspace: Option<&str>) -> Result<Vec<DocumentAudit>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT d.id, d.status, d.segment_count, d.chunk_count,
                (SELECT count(*) FROM segments s WHERE s.document_id = d.id AND s.revision = d.latest_revision) AS segments,
                (SELECT count(*) FROM chunk_mappings m
                  WHERE m.document_id = d.id AND m.chunking_version = d.active_chunking_version) AS mappings,
                (SELECT count(*) FROM search_chunks c
                  WHERE c.document_id = d.id AND c.chunking_version = d.active_chunking_version) AS indexed
         FROM documents d
         WHERE $1::text IS NULL OR d.workspace_id = $1",
    )
    .bind(workspace)
    .fetch_all(pool)
    .await?)
}

/// Rows of every version and revision left behind by deleted documents:
/// (document, search rows, chunk mappings, segments), for those that have
/// any. A deletion purges them all (`documents::purge`).
pub async fn left_by_deleted(pool: &PgPool) -> Result<Vec<(Uuid, i64, i64, i64)>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT d.id,
                (SELECT count(*) FROM search_chunks c WHERE c.document_id = d.id),
                (SELECT count(*) FROM chunk_mappings m WHERE m.document_id = d.id),
                (SELECT count(*) FROM segments s WHERE s.document_id = d.id)
         FROM documents d WHERE d.status = 'deleted'",
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .filter(|(_, c, m, s): &(Uuid, i64, i64, i64)| c + m + s > 0)
    .collect())
}

/// Every message: (id, role, status).
pub async fn messages(pool: &PgPool) -> Result<Vec<(Uuid, String, MessageStatus)>, StoreError> {
    let rows: Vec<(Uuid, String, String)> = sqlx::query_as("SELECT id, role, status FROM messages").fetch_all(pool).await?;
    rows.into_iter().map(|(id, role, status)| Ok((id, role, status.parse()?))).collect()
}

/// Documents not yet terminal plus assistant messages still pending.
pub async fn unfinished(pool: &PgPool) -> Result<(i64, i64), StoreError> {
    Ok((crate::documents::count_unfinished_since(pool, 0).await?, crate::messages::count_pending_since(pool, 0).await?))
}

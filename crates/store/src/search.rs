//! Query side of the search index: BM25 over the inverted index and
//! nearest neighbours over pgvector. Every query is scoped to one
//! workspace, to each document's active chunking version, and excludes
//! deleted documents; an optional list narrows it to some documents.

use sqlx::PgPool;
use uuid::Uuid;

use crate::StoreError;

/// Where to search.
#[derive(Debug, Clone)]
pub struct SearchScope<'a> {
    pub workspace_id: &'a str,
    /// Empty: every document of the workspace.
    pub document_ids: &'a [Uuid],
}

/// BM25 parameters and query terms are `rag-model`'s, the in-memory
/// scorer's input too: both scorers take the same input and must rank alike.
pub use rag_model::{Bm25, QueryTerm};

/// A chunk of the index, as retrieval returns it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow, serde::Serialize)]
pub struct ChunkHit {
    pub chunk_id: String,
    pub document_id: Uuid,
    pub chunking_version: String,
    pub chunk_index: i32,
    pub content: String,
    pub page_start: i32,
    pub page_end: i32,
    pub char_start: i64,
    pub char_end: i64,
    pub line_start: Option<i32>,
    pub line_end: Option<i32>,
    pub filename: Option<String>,
    /// The model whose vector the chunk holds (none before it is
    /// embedded): the dense side ranks only chunks of the query's model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding_model: Option<String>,
    pub score: f64,
}

const ELIGIBLE: &str = "search_chunks c JOIN documents d
      ON d.id = c.document_id AND d.workspace_id = c.workspace_id
     AND d.active_chunking_version = c.chunking_version AND d.status <> 'deleted'";

const HIT_COLUMNS: &str = "c.chunk_id, c.document_id, c.chunking_version, c.chunk_index, c.content,
    c.page_start, c.page_end, c.char_start, c.char_end, c.line_start, c.line_end, d.filename, c.embedding_model";

/// BM25 ranking of the scope's chunks, best first.
pub async fn lexical(
    pool: &PgPool,
    scope: &SearchScope<'_>,
    terms: &[QueryTerm],
    params: Bm25,
    limit: usize,
) -> Result<Vec<ChunkHit>, StoreError> {
    if terms.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let names: Vec<&str> = terms.iter().map(|t| t.term.as_str()).collect();
    let words: Vec<i32> = terms.iter().map(|t| t.word).collect();
    let weights: Vec<f64> = terms.iter().map(|t| t.weight).collect();
    let sql = format!(
        "WITH q AS (SELECT * FROM UNNEST($2::text[], $3::int[], $4::float8[]) AS q(term, word, weight)),
         eligible AS (
             SELECT c.chunk_id, c.term_count, c.terms, c.tfs FROM {ELIGIBLE}
             WHERE c.workspace_id = $1 AND (cardinality($5::uuid[]) = 0 OR c.document_id = ANY($5))),
         stats AS (SELECT count(*)::float8 AS n, greatest(avg(term_count), 1)::float8 AS avgdl FROM eligible),
         postings AS (
             SELECT e.chunk_id, t.term, t.tf, e.term_count
             FROM eligible e CROSS JOIN LATERAL UNNEST(e.terms, e.tfs) AS t(term, tf)
             WHERE e.terms && $2 AND t.term = ANY($2)),
         df AS (SELECT term, count(*)::float8 AS df FROM postings GROUP BY term),
         per_word AS (
             SELECT p.chunk_id, q.word,
                    max(q.weight * ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5))
                        * p.tf * ($6 + 1) / (p.tf + $6 * (1 - $7 + $7 * p.term_count / s.avgdl))) AS s
             FROM postings p JOIN q USING (term) JOIN df USING (term) CROSS JOIN stats s
             GROUP BY p.chunk_id, q.word),
         ranked AS (SELECT chunk_id, sum(s) AS score FROM per_word GROUP BY chunk_id ORDER BY score DESC, chunk_id LIMIT $8)
         SELECT {HIT_COLUMNS}, r.score FROM ranked r JOIN {ELIGIBLE} ON c.chunk_id = r.chunk_id
         ORDER BY r.score DESC, c.chunk_id"
    );
    // Not a cached prepared statement: after five runs Postgres would switch
    // to a generic plan, blind to the term arrays, and take seconds.
    Ok(sqlx::query_as::<_, ChunkHit>(&sql)
        .persistent(false)
        .bind(scope.workspace_id)
        .bind(&names)
        .bind(&words)
        .bind(&weights)
        .bind(scope.document_ids)
        .bind(params.k1)
        .bind(params.b)
        .bind(limit as i64)
        .fetch_all(pool)
        .await?)
}

/// What changed in a workspace's searchable chunks since a reader's
/// horizon (migration 20261123000008): the documents to reload, and the
/// new horizon (every transaction below it has ended, so nothing below it
/// can appear later).
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct SearchChanges {
    /// Bumped by a TRUNCATE of the read models: everything held is stale.
    pub epoch: i64,
    pub horizon: i64,
    pub documents: Vec<Uuid>,
    /// Change rows read (more than `documents`: superseded rows to prune).
    pub rows: i64,
}

/// Changes at or above `since` (`None`: only the epoch and horizon, before
/// a full load). Horizon and rows come from one snapshot.
pub async fn search_changes_since(pool: &PgPool, workspace_id: &str, since: Option<i64>) -> Result<SearchChanges, StoreError> {
    Ok(sqlx::query_as(
        "WITH c AS (SELECT document_id FROM search_changes WHERE workspace_id = $1 AND $2::int8 IS NOT NULL AND xid >= $2)
         SELECT (SELECT epoch FROM search_epoch) AS epoch,
                pg_snapshot_xmin(pg_current_snapshot())::text::int8 AS horizon,
                coalesce((SELECT array_agg(DISTINCT document_id) FROM c), '{}') AS documents,
                (SELECT count(*) FROM c) AS rows",
    )
    .bind(workspace_id)
    .bind(since)
    .fetch_one(pool)
    .await?)
}

/// Deletes change rows another row of the same document supersedes (a
/// reader reloading since any horizon finds the newer one), below `below`.
pub async fn prune_search_changes(pool: &PgPool, workspace_id: &str, below: i64) -> Result<u64, StoreError> {
    Ok(sqlx::query(
        "DELETE FROM search_changes s WHERE s.workspace_id = $1 AND s.xid < $2
           AND EXISTS (SELECT 1 FROM search_changes n
                       WHERE n.workspace_id = s.workspace_id AND n.document_id = s.document_id AND n.xid > s.xid)",
    )
    .bind(workspace_id)
    .bind(below)
    .execute(pool)
    .await?
    .rows_affected())
}

/// A searchable chunk with its postings, for an in-memory index.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SearchableChunk {
    pub chunk_id: String,
    pub document_id: Uuid,
    pub term_count: i32,
    pub terms: Vec<String>,
    pub tfs: Vec<i32>,
}

/// The searchable chunks (active version, document not deleted) of a
/// workspace, or of some of its documents, with their terms.
pub async fn searchable_chunks(pool: &PgPool, workspace_id: &str, documents: Option<&[Uuid]>) -> Result<Vec<SearchableChunk>, StoreError> {
    // A chunk without terms (empty arrays) still counts in BM25's statistics.
    Ok(sqlx::query_as(&format!(
        "SELECT c.chunk_id, c.document_id, c.term_count, c.terms, c.tfs
         FROM {ELIGIBLE}
         WHERE c.workspace_id = $1 AND ($2::uuid[] IS NULL OR c.document_id = ANY($2))"
    ))
    .persistent(false)
    .bind(workspace_id)
    .bind(documents)
    .fetch_all(pool)
    .await?)
}

/// A searchable chunk's embedding, for an in-memory index.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SearchableVector {
    pub chunk_id: String,
    pub embedding_model: String,
    pub embedding: Vec<f32>,
}

/// The embeddings of the searchable chunks of a workspace, or of some of
/// its documents.
pub async fn searchable_vectors(
    pool: &PgPool,
    workspace_id: &str,
    documents: Option<&[Uuid]>,
) -> Result<Vec<SearchableVector>, StoreError> {
    Ok(sqlx::query_as(&format!(
        "SELECT c.chunk_id, c.embedding_model, c.embedding::real[] AS embedding
         FROM {ELIGIBLE}
         WHERE c.workspace_id = $1 AND ($2::uuid[] IS NULL OR c.document_id = ANY($2))
           AND c.embedding IS NOT NULL AND c.embedding_model IS NOT NULL"
    ))
    .persistent(false)
    .bind(workspace_id)
    .bind(documents)
    .fetch_all(pool)
    .await?)
}

/// Nearest chunks to `query` among those embedded with `model`, best first;
/// `score` is the cosine similarity.
pub async fn dense(pool: &PgPool, scope: &SearchScope<'_>, model: &str, query: &[f32], limit: usize) -> Result<Vec<ChunkHit>, StoreError> {
    let dim = query.len();
    if dim == 0 || dim > 2000 || limit == 0 {
        return Ok(Vec::new());
    }
    let literal = format!("[{}]", query.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","));
    // The cast and the predicate match the per-model partial HNSW index
    // (pipeline::ensure_vector_index), so the planner can use it; iterative
    // scans keep filling the limit when the workspace filter drops rows.
    let sql = format!(
        "SELECT {HIT_COLUMNS}, (1 - (c.embedding::vector({dim}) <=> $2::vector({dim})))::float8 AS score
         FROM {ELIGIBLE}
         WHERE c.workspace_id = $1 AND c.embedding_model = $3 AND c.embedding_dimension = {dim}
           AND (cardinality($4::uuid[]) = 0 OR c.document_id = ANY($4))
         ORDER BY c.embedding::vector({dim}) <=> $2::vector({dim}), c.chunk_id
         LIMIT $5"
    );
    let mut tx = pool.begin().await?;
    // pgvector >= 0.8; older versions reject the setting, which is harmless.
    let iterative = sqlx::query("SET LOCAL hnsw.iterative_scan = relaxed_order").execute(&mut *tx).await.is_ok();
    if !iterative {
        tx.rollback().await?;
        tx = pool.begin().await?;
    }
    let hits = sqlx::query_as::<_, ChunkHit>(&sql)
        .persistent(false)
        .bind(scope.workspace_id)
        .bind(&literal)
        .bind(model)
        .bind(scope.document_ids)
        .bind(limit as i64)
        .fetch_all(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(hits)
}

/// Chunks by id within a workspace (for citations and snapshots).
pub async fn chunks_by_id(pool: &PgPool, workspace_id: &str, ids: &[String]) -> Result<Vec<ChunkHit>, StoreError> {
    Ok(sqlx::query_as::<_, ChunkHit>(&format!(
        "SELECT {HIT_COLUMNS}, 0::float8 AS score FROM {ELIGIBLE} WHERE c.workspace_id = $1 AND c.chunk_id = ANY($2)"
    ))
    .bind(workspace_id)
    .bind(ids)
    .fetch_all(pool)
    .await?)
}

/// A segment overlapping a chunk: `(chunk position in the input, segment)`.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ChunkSegment {
    pub chunk: i64,
    pub segment_index: i32,
    pub page_idx: i32,
    pub char_start: i64,
    pub char_end: i64,
}

/// The segments each chunk covers (for a citation's page and segment), in
/// one query that reads only those rows, never whole documents.
pub async fn segments_of_chunks(pool: &PgPool, workspace_id: &str, chunks: &[ChunkHit]) -> Result<Vec<ChunkSegment>, StoreError> {
    let docs: Vec<Uuid> = chunks.iter().map(|c| c.document_id).collect();
    let starts: Vec<i64> = chunks.iter().map(|c| c.char_start).collect();
    let ends: Vec<i64> = chunks.iter().map(|c| c.char_end).collect();
    // A chunk's offsets are in the revision its index version names.
    let revisions: Vec<i32> = chunks.iter().map(|c| rag_model::split_index_version(&c.chunking_version).1).collect();
    Ok(sqlx::query_as(
        "SELECT (r.i - 1)::int8 AS chunk, s.segment_index, s.page_idx, s.char_start, s.char_end
         FROM UNNEST($2::uuid[], $3::int8[], $4::int8[], $5::int[]) WITH ORDINALITY AS r(doc, lo, hi, rev, i)
         JOIN segments s ON s.document_id = r.doc AND s.workspace_id = $1 AND s.revision = r.rev
          AND s.char_end > r.lo AND s.char_start < greatest(r.hi, r.lo + 1)
         ORDER BY r.i, s.segment_index",
    )
    .persistent(false)
    .bind(workspace_id)
    .bind(&docs)
    .bind(&starts)
    .bind(&ends)
    .bind(&revisions)
    .fetch_all(pool)
    .await?)
}

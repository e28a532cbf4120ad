// Kept whole at ~470 lines: the SQL of the document pipeline's read models, one statement per event, transactions spanning them.
//! Read models of the document pipeline: parse, chunk and ingest facts on
//! documents, the segments (raw viewer), the chunk mappings and the search
//! index.

use chrono::{DateTime, Utc};
use rag_events::{DocumentChunked, DocumentIngested, DocumentParsed, Failure};
use rag_model::{Chunk, Segment};
use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

use crate::documents::parse_id as doc_id;
use crate::status::DocumentStatus;
use crate::transitions::{self, RevisionRole, StepOutcome};
use crate::StoreError;

/// A success step of the event's document, when the event is about its
/// newest revision (an older revision's steps say nothing about the status
/// shown); returns where the revision stands.
async fn advance_status(
    tx: &mut Transaction<'_, Postgres>,
    id: Uuid,
    workspace_id: &str,
    step: DocumentStatus,
    envelope: &rag_events::Envelope,
    revision: i32,
) -> Result<RevisionRole, StoreError> {
    let role = transitions::enter_revision(tx, id, workspace_id, revision).await?;
    if role == RevisionRole::Newest {
        let outcome = StepOutcome::Succeeded { step, starts_run: envelope.causation_id.is_none() };
        transitions::apply_step(tx, id, workspace_id, outcome, occurred(envelope)).await?;
        transitions::note_revision(tx, id, workspace_id, revision).await?;
    }
    Ok(role)
}

fn occurred(e: &rag_events::Envelope) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(e.occurred_at).unwrap_or_else(Utc::now)
}

/// A failed step of the event's document.
async fn fail(
    tx: &mut Transaction<'_, Postgres>,
    id: Uuid,
    workspace_id: &str,
    step: DocumentStatus,
    f: &Failure,
    envelope: &rag_events::Envelope,
    revision: i32,
) -> Result<(), StoreError> {
    if transitions::enter_revision(tx, id, workspace_id, revision).await? == RevisionRole::Newest {
        transitions::apply_failure(tx, id, workspace_id, step, &f.code, &f.message, occurred(envelope)).await?;
        transitions::note_revision(tx, id, workspace_id, revision).await?;
    }
    Ok(())
}

/// DocumentParsed: parse facts, the segments (replacing any earlier ones),
/// status parsed; or failed with the reason. The segments are stored as
/// given: the caller gives them their line ranges
/// (`rag_docparse::segments::with_line_ranges` numbers those parsed before
/// line ranges existed).
pub async fn apply_parsed(tx: &mut Transaction<'_, Postgres>, e: &DocumentParsed, segments: &[Segment]) -> Result<(), StoreError> {
    let id = doc_id(&e.document_id)?;
    let ws = &e.envelope.workspace_id;
    if let Some(f) = &e.failure {
        return fail(tx, id, ws, DocumentStatus::Parsed, f, &e.envelope, e.revision).await;
    }
    let role = advance_status(tx, id, ws, DocumentStatus::Parsed, &e.envelope, e.revision).await?;
    let pages = serde_json::to_value(&e.pages).map_err(|err| StoreError::Invalid(err.to_string()))?;
    // Each revision keeps its own parse facts (a citation into it reads its
    // pages); the document's columns are its newest revision's.
    sqlx::query(
        "INSERT INTO document_revisions (document_id, revision, workspace_id, page_count, char_count, line_count,
                                         full_text_uri, pages)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (document_id, revision) DO UPDATE SET page_count = EXCLUDED.page_count,
            char_count = EXCLUDED.char_count, line_count = EXCLUDED.line_count,
            full_text_uri = EXCLUDED.full_text_uri, pages = EXCLUDED.pages
         WHERE document_revisions.workspace_id = EXCLUDED.workspace_id",
    )
    .bind(id)
    .bind(e.revision)
    .bind(ws)
    .bind(e.page_count)
    .bind(e.char_count)
    .bind(e.line_count)
    .bind(&e.full_text_uri)
    .bind(&pages)
    .execute(&mut **tx)
    .await?;
    let newest = role == RevisionRole::Newest;
    sqlx::query(
        "UPDATE documents SET parser = $2, page_count = $3, segment_count = $4, char_count = $5,
                full_text_uri = $6, segments_uri = $7, pages_without_text = $9, ocr_pages = $10,
                line_count = $11, pages = $12
         WHERE id = $1 AND workspace_id = $8 AND $13",
    )
    .bind(id)
    .bind(format!("{}@{}", e.parser_name, e.parser_version))
    .bind(e.page_count)
    .bind(e.segment_count)
    .bind(e.char_count)
    .bind(&e.full_text_uri)
    .bind(&e.segments_uri)
    .bind(ws)
    .bind(&e.pages_without_text)
    .bind(&e.ocr_pages)
    .bind(e.line_count)
    .bind(pages)
    .bind(newest)
    .execute(&mut **tx)
    .await?;
    sqlx::query("DELETE FROM segments WHERE document_id = $1 AND revision = $2").bind(id).bind(e.revision).execute(&mut **tx).await?;
    for batch in segments.chunks(1000) {
        let idx: Vec<i32> = batch.iter().map(|s| s.segment_index as i32).collect();
        let page: Vec<i32> = batch.iter().map(|s| s.page_idx as i32).collect();
        let start: Vec<i64> = batch.iter().map(|s| s.char_start as i64).collect();
        let end: Vec<i64> = batch.iter().map(|s| s.char_end as i64).collect();
        let text: Vec<&str> = batch.iter().map(|s| s.text.as_str()).collect();
        let ls: Vec<Option<i32>> = batch.iter().map(|s| s.line_start.map(|l| l as i32)).collect();
        let le: Vec<Option<i32>> = batch.iter().map(|s| s.line_end.map(|l| l as i32)).collect();
        let boxes: Vec<serde_json::Value> = batch
            .iter()
            .map(|s| serde_json::to_value(&s.boxes))
            .collect::<Result<_, _>>()
            .map_err(|err| StoreError::Invalid(err.to_string()))?;
        let cells: Vec<Option<serde_json::Value>> = batch
            .iter()
            .map(|s| s.cells.as_ref().map(serde_json::to_value).transpose())
            .collect::<Result<_, _>>()
            .map_err(|err| StoreError::Invalid(err.to_string()))?;
        sqlx::query(
            "INSERT INTO segments (document_id, workspace_id, revision, segment_index, page_idx, char_start, char_end, text,
                                   line_start, line_end, boxes, cells)
             SELECT $1, $2, $12, * FROM UNNEST($3::int[], $4::int[], $5::bigint[], $6::bigint[], $7::text[], $8::int[],
                                          $9::int[], $10::jsonb[], $11::jsonb[])",
        )
        .bind(id)
        .bind(ws)
        .bind(&idx)
        .bind(&page)
        .bind(&start)
        .bind(&end)
        .bind(&text)
        .bind(&ls)
        .bind(&le)
        .bind(&boxes)
        .bind(&cells)
        .bind(e.revision)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// DocumentChunked: the chunk mappings of that version, status chunked.
pub async fn apply_chunked(tx: &mut Transaction<'_, Postgres>, e: &DocumentChunked, chunks: &[Chunk]) -> Result<(), StoreError> {
    let id = doc_id(&e.document_id)?;
    let ws = &e.envelope.workspace_id;
    if let Some(f) = &e.failure {
        return fail(tx, id, ws, DocumentStatus::Chunked, f, &e.envelope, e.revision).await;
    }
    let role = advance_status(tx, id, ws, DocumentStatus::Chunked, &e.envelope, e.revision).await?;
    if let (Some(n), RevisionRole::Newest) = (e.instructions_found, role) {
        sqlx::query("UPDATE documents SET instructions_found = $3 WHERE id = $1 AND workspace_id = $2 AND status <> 'deleted'")
            .bind(id)
            .bind(ws)
            .bind(n)
            .execute(&mut **tx)
            .await?;
    }
    let key = rag_model::index_version(&e.chunking_version, e.revision);
    sqlx::query(
        "INSERT INTO document_versions (document_id, workspace_id, chunking_version, chunked_at, revision) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (document_id, chunking_version) DO UPDATE SET chunked_at = GREATEST(document_versions.chunked_at, EXCLUDED.chunked_at)",
    )
    .bind(id)
    .bind(ws)
    .bind(&key)
    .bind(occurred(&e.envelope))
    .bind(e.revision)
    .execute(&mut **tx)
    .await?;
    sqlx::query("DELETE FROM chunk_mappings WHERE document_id = $1 AND chunking_version = $2")
        .bind(id)
        .bind(&key)
        .execute(&mut **tx)
        .await?;
    for batch in chunks.chunks(1000) {
        let ids: Vec<&str> = batch.iter().map(|c| c.chunk_id.as_str()).collect();
        let idx: Vec<i32> = batch.iter().map(|c| c.chunk_index as i32).collect();
        let ps: Vec<i32> = batch.iter().map(|c| c.page_start as i32).collect();
        let pe: Vec<i32> = batch.iter().map(|c| c.page_end as i32).collect();
        let ss: Vec<i32> = batch.iter().map(|c| c.segment_start_index as i32).collect();
        let se: Vec<i32> = batch.iter().map(|c| c.segment_end_index as i32).collect();
        let cs: Vec<i64> = batch.iter().map(|c| c.char_start as i64).collect();
        let ce: Vec<i64> = batch.iter().map(|c| c.char_end as i64).collect();
        let ls: Vec<Option<i32>> = batch.iter().map(|c| c.line_start.map(|l| l as i32)).collect();
        let le: Vec<Option<i32>> = batch.iter().map(|c| c.line_end.map(|l| l as i32)).collect();
        sqlx::query(
            "INSERT INTO chunk_mappings (document_id, workspace_id, chunking_version, chunk_id, chunk_index, page_start,
                                         page_end, segment_start_index, segment_end_index, char_start, char_end,
                                         line_start, line_end)
             SELECT $1, $2, $3, * FROM UNNEST($4::text[], $5::int[], $6::int[], $7::int[], $8::int[], $9::int[],
                                              $10::bigint[], $11::bigint[], $12::int[], $13::int[])
             ON CONFLICT (chunk_id) DO NOTHING",
        )
        .bind(id)
        .bind(ws)
        .bind(&key)
        .bind(&ids)
        .bind(&idx)
        .bind(&ps)
        .bind(&pe)
        .bind(&ss)
        .bind(&se)
        .bind(&cs)
        .bind(&ce)
        .bind(&ls)
        .bind(&le)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// DocumentIngested: the version becomes the document's active one unless
/// a later one is already active: a version of a newer revision, or of the
/// same revision chunked later (then this one is superseded and its rows
/// go). The versions before it leave the search index and the mappings in
/// the same transaction, so a query sees exactly one version of the
/// document at every moment (a new revision, or re-chunking by replay), and
/// the outcome does not depend on the order the events are projected in.
/// An older revision's segments stay: answers cite them.
pub async fn apply_ingested(tx: &mut Transaction<'_, Postgres>, e: &DocumentIngested) -> Result<(), StoreError> {
    let id = doc_id(&e.document_id)?;
    let ws = &e.envelope.workspace_id;
    if let Some(f) = &e.failure {
        return fail(tx, id, ws, DocumentStatus::Ingested, f, &e.envelope, e.revision).await;
    }
    advance_status(tx, id, ws, DocumentStatus::Ingested, &e.envelope, e.revision).await?;
    let key = rag_model::index_version(&e.chunking_version, e.revision);
    let this_at: Option<DateTime<Utc>> =
        sqlx::query_scalar("SELECT chunked_at FROM document_versions WHERE document_id = $1 AND chunking_version = $2")
            .bind(id)
            .bind(&key)
            .fetch_optional(&mut **tx)
            .await?;
    // The active version, when it was chunked, and its revision.
    type Active = (Option<String>, Option<DateTime<Utc>>, Option<i32>);
    let active: Option<Active> = sqlx::query_as(
        "SELECT d.active_chunking_version, v.chunked_at, d.revision FROM documents d
         LEFT JOIN document_versions v ON v.document_id = d.id AND v.chunking_version = d.active_chunking_version
         WHERE d.id = $1 AND d.workspace_id = $2 AND d.status <> 'deleted'",
    )
    .bind(id)
    .bind(ws)
    .fetch_optional(&mut **tx)
    .await?;
    let Some((active_version, active_at, active_revision)) = active else { return Ok(()) };
    let supersedes = match (active_version.as_deref(), active_revision) {
        (Some(v), _) if v == key => true,
        (Some(_), Some(r)) if r != e.revision => e.revision > r,
        _ => match (active_at, this_at) {
            (Some(a), Some(t)) => t >= a,
            // No active version, or times unknown (the chunked event is not
            // projected yet): the latest ingestion wins, as events of one
            // document arrive in order in normal operation.
            _ => true,
        },
    };
    if !supersedes {
        for table in ["search_chunks", "chunk_mappings"] {
            sqlx::query(&format!("DELETE FROM {table} WHERE document_id = $1 AND workspace_id = $2 AND chunking_version = $3"))
                .bind(id)
                .bind(ws)
                .bind(&key)
                .execute(&mut **tx)
                .await?;
        }
        return Ok(());
    }
    sqlx::query(
        "UPDATE documents SET active_chunking_version = $2, chunk_count = $3, embedding_model = $4,
                embedding_dimension = $5, revision = $7
         WHERE id = $1 AND workspace_id = $6",
    )
    .bind(id)
    .bind(&key)
    .bind(e.chunk_count)
    .bind(&e.embedding_model)
    .bind(e.embedding_dimension)
    .bind(ws)
    .bind(e.revision)
    .execute(&mut **tx)
    .await?;
    // The revisions before this one are superseded from now (retention
    // may drop the text of those no answer cites, later).
    sqlx::query(
        "UPDATE document_revisions SET superseded_at = $4
         WHERE document_id = $1 AND workspace_id = $2 AND revision < $3
           AND (superseded_at IS NULL OR superseded_at > $4)",
    )
    .bind(id)
    .bind(ws)
    .bind(e.revision)
    .bind(occurred(&e.envelope))
    .execute(&mut **tx)
    .await?;
    // Versions after this one (a newer revision on its way, a replay in
    // progress) stay. A newer revision is told by its key, not by
    // `document_versions`: the indexer may have written its rows before its
    // DocumentChunked is projected (seen in the chaos harness: an earlier
    // revision's ingestion projected in between took them).
    let row_revision = crate::revision_of_index_version_sql("t.chunking_version");
    for table in ["search_chunks", "chunk_mappings"] {
        sqlx::query(&format!(
            "DELETE FROM {table} t WHERE t.document_id = $1 AND t.workspace_id = $2 AND t.chunking_version <> $3
               AND {row_revision} <= $5
               AND NOT EXISTS (SELECT 1 FROM document_versions v
                               WHERE v.document_id = $1 AND v.chunking_version = t.chunking_version
                                 AND v.revision = $5 AND $4::timestamptz IS NOT NULL AND v.chunked_at > $4)"
        ))
        .bind(id)
        .bind(ws)
        .bind(&key)
        .bind(this_at)
        .bind(e.revision)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// One chunk for the search index, with its lexical terms and embedding.
pub struct IndexedChunk<'a> {
    pub chunk: &'a Chunk,
    pub terms: std::collections::BTreeMap<String, u32>,
    pub term_count: u32,
    pub embedding: Option<Vec<f32>>,
}

/// Replaces a document's chunks of one chunking version in the search
/// index (the indexer is its only writer). `indexed_at` is the time of the
/// DocumentChunked event, so a rebuild writes the same rows.
pub async fn replace_index(
    tx: &mut Transaction<'_, Postgres>,
    workspace_id: &str,
    document_id: &str,
    chunking_version: &str,
    embedding_model: Option<&str>,
    chunks: &[IndexedChunk<'_>],
    indexed_at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let id = doc_id(document_id)?;
    sqlx::query("DELETE FROM search_chunks WHERE document_id = $1 AND chunking_version = $2")
        .bind(id)
        .bind(chunking_version)
        .execute(&mut **tx)
        .await?;
    // One statement for the whole document (UNNEST of column arrays), not
    // one per chunk: a round trip each was most of the indexer's time. A
    // chunk's postings are its row's `terms` and `tfs` (migration
    // 20261124000010); UNNEST cannot carry an array per row, so each goes
    // as one string split in SQL (a term is a UAX #29 word or its folded
    // form: never the separator, a control character).
    let mut ids = Vec::with_capacity(chunks.len());
    let (mut indexes, mut contents, mut term_counts) = (Vec::new(), Vec::new(), Vec::new());
    let (mut page_starts, mut page_ends, mut char_starts, mut char_ends) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut models, mut dimensions, mut embeddings) = (Vec::new(), Vec::new(), Vec::new());
    let (mut line_starts, mut line_ends) = (Vec::new(), Vec::new());
    let (mut terms, mut tfs) = (Vec::with_capacity(chunks.len()), Vec::with_capacity(chunks.len()));
    for c in chunks {
        let embedding = c.embedding.as_ref().map(|v| {
            let parts: Vec<String> = v.iter().map(|x| x.to_string()).collect();
            format!("[{}]", parts.join(","))
        });
        ids.push(c.chunk.chunk_id.as_str());
        indexes.push(c.chunk.chunk_index as i32);
        contents.push(c.chunk.text.as_str());
        term_counts.push(c.term_count as i32);
        page_starts.push(c.chunk.page_start as i32);
        page_ends.push(c.chunk.page_end as i32);
        char_starts.push(c.chunk.char_start as i64);
        char_ends.push(c.chunk.char_end as i64);
        models.push(embedding.as_ref().and(embedding_model));
        dimensions.push(c.embedding.as_ref().map(|v| v.len() as i32));
        embeddings.push(embedding);
        line_starts.push(c.chunk.line_start.map(|l| l as i32));
        line_ends.push(c.chunk.line_end.map(|l| l as i32));
        let (joined_terms, joined_tfs) = postings_strings(&c.terms)?;
        terms.push(joined_terms);
        tfs.push(joined_tfs);
    }
    sqlx::query(
        "INSERT INTO search_chunks (chunk_id, workspace_id, document_id, chunking_version, chunk_index, content,
                                    term_count, page_start, page_end, char_start, char_end,
                                    embedding_model, embedding_dimension, embedding, indexed_at, line_start, line_end,
                                    terms, tfs)
         SELECT u.chunk_id, $2, $3, $4, u.chunk_index, u.content, u.term_count, u.page_start, u.page_end,
                u.char_start, u.char_end, u.model, u.dimension, u.embedding::vector, $5, u.line_start, u.line_end,
                string_to_array(u.terms, E'\\x1f'), string_to_array(u.tfs, ',')::int[]
         FROM UNNEST($1::text[], $6::int[], $7::text[], $8::int[], $9::int[], $10::int[], $11::int8[], $12::int8[],
                     $13::text[], $14::int[], $15::text[], $16::int[], $17::int[], $18::text[], $19::text[])
              AS u(chunk_id, chunk_index, content, term_count, page_start, page_end, char_start, char_end,
                   model, dimension, embedding, line_start, line_end, terms, tfs)
         ON CONFLICT (chunk_id) DO NOTHING",
    )
    .bind(&ids)
    .bind(workspace_id)
    .bind(id)
    .bind(chunking_version)
    .bind(indexed_at)
    .bind(&indexes)
    .bind(&contents)
    .bind(&term_counts)
    .bind(&page_starts)
    .bind(&page_ends)
    .bind(&char_starts)
    .bind(&char_ends)
    .bind(&models)
    .bind(&dimensions)
    .bind(&embeddings)
    .bind(&line_starts)
    .bind(&line_ends)
    .bind(&terms)
    .bind(&tfs)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A chunk's postings as two strings for `string_to_array`: the terms
/// (sorted, the map's order) joined by U+001F, their frequencies by commas.
fn postings_strings(terms: &std::collections::BTreeMap<String, u32>) -> Result<(String, String), StoreError> {
    let mut joined_terms = String::new();
    let mut joined_tfs = String::new();
    for (i, (term, tf)) in terms.iter().enumerate() {
        if term.is_empty() || term.contains(POSTINGS_SEPARATOR) {
            return Err(StoreError::Invalid(format!("index term {term:?} is empty or holds U+001F")));
        }
        if i > 0 {
            joined_terms.push(POSTINGS_SEPARATOR);
            joined_tfs.push(',');
        }
        joined_terms.push_str(term);
        joined_tfs.push_str(&tf.to_string());
    }
    Ok((joined_terms, joined_tfs))
}

const POSTINGS_SEPARATOR: char = '\u{1f}';

/// Creates the HNSW index of one embedding model unless it exists. Each
/// (model, dimension) gets its own partial index, so vectors of different
/// models never meet in one index.
pub async fn ensure_vector_index(pool: &PgPool, model: &str, dimension: usize) -> Result<(), StoreError> {
    if dimension == 0 || dimension > 2000 {
        return Err(StoreError::Invalid(format!("embedding dimension {dimension} (HNSW supports 1..=2000)")));
    }
    let digest: u64 = model.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    let name = format!("search_chunks_hnsw_{digest:016x}_{dimension}");
    let literal = model.replace('\'', "''");
    sqlx::query(&format!(
        "CREATE INDEX IF NOT EXISTS {name} ON search_chunks
         USING hnsw ((embedding::vector({dimension})) vector_cosine_ops)
         WHERE embedding_model = '{literal}' AND embedding_dimension = {dimension}"
    ))
    .execute(pool)
    .await?;
    Ok(())
}

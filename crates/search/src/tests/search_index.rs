//! The in-memory lexical index against the SQL scorer, on the real
//! Postgres, through the store functions the indexer and projector use:
//! after every kind of change (ingest, re-chunking, deletion, purge, an
//! uncommitted transaction, a rebuild's truncation) both rank the same, and
//! nothing of one workspace shows in another.

use std::path::Path;

use rag_chunking::Chunk;
use rag_events::{DocumentDeleted, DocumentIngested, DocumentUploaded, Envelope};
use rag_store::pipeline::IndexedChunk;
use rag_store::search::{self, Bm25, QueryTerm, SearchScope};
use rag_store::sqlx::{PgPool, Postgres, Transaction};
use rag_store::testing::{stack_database_url, TestDatabase};
use uuid::Uuid;

use crate::search_index::SearchIndexes;

const WORDS: &[&str] = &[
    "tăng",
    "trưởng",
    "kinh",
    "tế",
    "ngân",
    "hàng",
    "lãi",
    "suất",
    "đồng",
    "việt",
    "nam",
    "growth",
    "bank",
    "rate",
    "wing",
    "flow",
    "pressure",
    "boundary",
    "layer",
    "heat",
    "transfer",
    "không",
    "có",
    "được",
    "the",
    "of",
    "and",
    "quy",
    "định",
    "hợp",
];

struct Corpus {
    seed: u64,
}

impl Corpus {
    fn next(&mut self, n: u64) -> u64 {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        self.seed % n
    }

    /// Skewed towards the first words, as text is.
    fn text(&mut self) -> String {
        let n = 3 + self.next(25);
        (0..n)
            .map(|_| {
                let a = self.next(WORDS.len() as u64);
                let b = self.next(WORDS.len() as u64);
                WORDS[(a * b / WORDS.len() as u64) as usize]
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

async fn upload(tx: &mut Transaction<'_, Postgres>, workspace: &str, document: Uuid) {
    let uploaded = DocumentUploaded {
        envelope: Envelope::originating(workspace, "test"),
        document_id: document.to_string(),
        blob_uri: format!("s3://test/{document}"),
        filename: format!("{document}.txt"),
        content_type: "text/plain".into(),
        size_bytes: 0,
        sha256: String::new(),
        uploaded_by: "test".into(),
        metadata: Default::default(),
        revision: 1,
        replaces_sha256: None,
    };
    rag_store::documents::apply_uploaded(tx, &uploaded).await.unwrap();
}

/// The indexer's transaction (a version's chunks) and then the projector's
/// (the version becomes active), as the pipeline commits them.
async fn ingest(pool: &PgPool, workspace: &str, document: Uuid, version: &str, texts: &[String]) {
    let id = document.to_string();
    let mut offset = 0u64;
    let chunks: Vec<Chunk> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let len = text.chars().count() as u64;
            let chunk = Chunk {
                chunk_id: rag_chunking::chunk_id(&id, version, offset, text),
                chunk_index: i as u32,
                text: text.clone(),
                token_count: 0,
                page_start: 0,
                page_end: 0,
                segment_start_index: 0,
                segment_end_index: 0,
                char_start: offset,
                char_end: offset + len,
                line_start: None,
                line_end: None,
            };
            offset += len + 1;
            chunk
        })
        .collect();
    let indexed: Vec<IndexedChunk<'_>> = chunks
        .iter()
        .map(|chunk| {
            let (terms, term_count) = rag_lexical::document_terms(&chunk.text, rag_retrieval::document_analysis(&chunk.text));
            IndexedChunk { chunk, terms, term_count, embedding: Some(vector_of(&chunk.text)) }
        })
        .collect();
    let mut tx = pool.begin().await.unwrap();
    rag_store::pipeline::replace_index(&mut tx, workspace, &id, version, Some(MODEL), &indexed, chrono::Utc::now()).await.unwrap();
    tx.commit().await.unwrap();
    let ingested = DocumentIngested {
        envelope: Envelope::originating(workspace, "test"),
        document_id: id,
        chunking_version: version.into(),
        embedding_model: Some(MODEL.into()),
        embedding_dimension: Some(DIMENSION as i32),
        chunk_count: chunks.len() as i32,
        failure: None,
        revision: 1,
    };
    let mut tx = pool.begin().await.unwrap();
    rag_store::pipeline::apply_ingested(&mut tx, &ingested).await.unwrap();
    tx.commit().await.unwrap();
}

const MODEL: &str = "test-model";
const DIMENSION: usize = 12;

/// A text's embedding: the normalised sum of fixed pseudo-random vectors
/// of its words, so similar texts are near each other.
fn vector_of(text: &str) -> Vec<f32> {
    let mut v = [0f32; DIMENSION];
    for word in rag_lexical::words(text) {
        let mut h = word.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3));
        for x in v.iter_mut() {
            h ^= h << 13;
            h ^= h >> 7;
            h ^= h << 17;
            *x += (h % 1000) as f32 / 500.0 - 1.0;
        }
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.iter().map(|x| x / norm).collect()
}

const QUERIES: &[&str] =
    &["tăng trưởng kinh tế", "tang truong", "ngân hàng lãi suất", "boundary layer heat", "the rate of growth", "quy định"];

/// Both scorers on every query, whole workspace and scoped; returns the
/// chunk ids the memory side found.
async fn assert_same_ranking(pool: &PgPool, memory: &SearchIndexes, workspace: &str, scope: &[Uuid]) -> Vec<String> {
    let mut found = Vec::new();
    for query in QUERIES {
        let terms: Vec<QueryTerm> = rag_retrieval::query_terms(query)
            .into_iter()
            .map(|t| QueryTerm { term: t.term, word: t.word as i32, weight: t.weight })
            .collect();
        let sql = search::lexical(pool, &SearchScope { workspace_id: workspace, document_ids: scope }, &terms, Bm25::default(), 20)
            .await
            .unwrap();
        let mem = memory.search(workspace, &terms, scope, Bm25::default(), 20).await.unwrap();
        assert_eq!(mem.len(), sql.len(), "{query:?} in {workspace}: memory {mem:?}\nsql {sql:?}");
        for (m, s) in mem.iter().zip(&sql) {
            assert!(
                (m.score - s.score).abs() <= 1e-9 * s.score.abs().max(1.0),
                "{query:?}: {} {} vs {} {}",
                m.chunk_id,
                m.score,
                s.chunk_id,
                s.score
            );
            if m.chunk_id != s.chunk_id {
                // Only a tie may come in another order.
                let other = sql.iter().find(|h| h.chunk_id == m.chunk_id).map(|h| h.score);
                assert!(other.is_some_and(|o| (o - m.score).abs() <= 1e-9 * o.abs().max(1.0)), "{query:?}: {} out of place", m.chunk_id);
            }
        }
        found.extend(mem.into_iter().map(|m| m.chunk_id));

        // Dense: the exact search in memory against pgvector's exact scan
        // (the test database has no HNSW index).
        let vector = vector_of(query);
        let sql = search::dense(pool, &SearchScope { workspace_id: workspace, document_ids: scope }, MODEL, &vector, 15).await.unwrap();
        let mem = memory.nearest(workspace, MODEL, &vector, scope, 15).await.unwrap().expect("a small workspace's vectors are held");
        assert_eq!(mem.len(), sql.len(), "dense {query:?} in {workspace}");
        for (m, s) in mem.iter().zip(&sql) {
            assert!((m.score - s.score).abs() <= 1e-5, "dense {query:?}: {} {} vs {} {}", m.chunk_id, m.score, s.chunk_id, s.score);
            if m.chunk_id != s.chunk_id {
                let other = sql.iter().find(|h| h.chunk_id == m.chunk_id).map(|h| h.score);
                assert!(other.is_some_and(|o| (o - m.score).abs() <= 1e-5), "dense {query:?}: {} out of place", m.chunk_id);
            }
        }
    }
    assert!(!found.is_empty(), "no query found anything in {workspace}: the comparison proves nothing");
    found
}

async fn chunk_ids(pool: &PgPool, document: Uuid) -> Vec<String> {
    rag_store::sqlx::query_scalar("SELECT chunk_id FROM search_chunks WHERE document_id = $1").bind(document).fetch_all(pool).await.unwrap()
}

#[tokio::test]
async fn the_in_memory_index_ranks_like_sql_after_every_kind_of_change() {
    let url = stack_database_url(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")).expect("run `scripts/stack up` first");
    let db = TestDatabase::create(&url).await.unwrap();
    let pool = db.pool.clone();
    let memory = SearchIndexes::new(pool.clone(), 1_000_000, 1_000);
    let mut corpus = Corpus { seed: 0x2545f4914f6cdd1d };
    let (a, b) = ("ws-a", "ws-b");
    let docs_a: Vec<Uuid> = (0..24).map(|_| Uuid::new_v4()).collect();
    let docs_b: Vec<Uuid> = (0..6).map(|_| Uuid::new_v4()).collect();
    for (workspace, docs) in [(a, &docs_a), (b, &docs_b)] {
        let mut tx = pool.begin().await.unwrap();
        for d in docs.iter() {
            upload(&mut tx, workspace, *d).await;
        }
        tx.commit().await.unwrap();
    }
    // Half of A before the first query (a full load), half after (changes).
    for d in &docs_a[..12] {
        let texts: Vec<String> = (0..1 + corpus.next(4)).map(|_| corpus.text()).collect();
        ingest(&pool, a, *d, "v1", &texts).await;
    }
    assert_same_ranking(&pool, &memory, a, &[]).await;
    for d in docs_a[12..].iter().chain(&docs_b) {
        let workspace = if docs_b.contains(d) { b } else { a };
        let texts: Vec<String> = (0..1 + corpus.next(4)).map(|_| corpus.text()).collect();
        ingest(&pool, workspace, *d, "v1", &texts).await;
    }
    assert_same_ranking(&pool, &memory, a, &[]).await;
    assert_same_ranking(&pool, &memory, a, &docs_a[3..9]).await;
    assert_same_ranking(&pool, &memory, b, &[]).await;

    // A word only B has is never found from A (and B's chunks never show).
    ingest(&pool, b, docs_b[0], "v1", &["zyxwvu boundary layer".to_string()]).await;
    let only_b = [QueryTerm { term: "zyxwvu".into(), word: 0, weight: 1.0 }];
    assert!(memory.search(a, &only_b, &[], Bm25::default(), 10).await.unwrap().is_empty());
    assert_eq!(memory.search(b, &only_b, &[], Bm25::default(), 10).await.unwrap().len(), 1);
    let from_a = assert_same_ranking(&pool, &memory, a, &[]).await;
    let b_chunks: Vec<String> = {
        let mut all = Vec::new();
        for d in &docs_b {
            all.extend(chunk_ids(&pool, *d).await);
        }
        all
    };
    assert!(from_a.iter().all(|c| !b_chunks.contains(c)), "a chunk of B found in A");

    // Re-chunking: the old version's chunks leave the ranking.
    let old = chunk_ids(&pool, docs_a[0]).await;
    ingest(&pool, a, docs_a[0], "v2", &[corpus.text(), "tăng trưởng tăng trưởng".into()]).await;
    let found = assert_same_ranking(&pool, &memory, a, &[]).await;
    assert!(found.iter().all(|c| !old.contains(c)), "a chunk of the replaced version is still found");

    // Deletion, then purge.
    let deleted = chunk_ids(&pool, docs_a[1]).await;
    let mut tx = pool.begin().await.unwrap();
    let event =
        DocumentDeleted { envelope: Envelope::originating(a, "test"), document_id: docs_a[1].to_string(), deleted_by: "test".into() };
    rag_store::documents::apply_deleted(&mut tx, &event).await.unwrap();
    tx.commit().await.unwrap();
    let found = assert_same_ranking(&pool, &memory, a, &[]).await;
    assert!(found.iter().all(|c| !deleted.contains(c)), "a deleted document's chunk is found");
    let mut tx = pool.begin().await.unwrap();
    rag_store::documents::purge(&mut tx, a, docs_a[1]).await.unwrap();
    tx.commit().await.unwrap();
    assert_same_ranking(&pool, &memory, a, &[]).await;

    // An open transaction holds the horizon back: what it writes is not
    // seen before it commits, and is seen by the first query after.
    let late = Uuid::new_v4();
    let mut open = pool.begin().await.unwrap();
    upload(&mut open, a, late).await;
    let late_text = "qwertyuiop tăng trưởng".to_string();
    let lexical = rag_lexical::document_terms(&late_text, rag_retrieval::document_analysis(&late_text));
    let chunk = Chunk {
        chunk_id: rag_chunking::chunk_id(&late.to_string(), "v1", 0, &late_text),
        chunk_index: 0,
        text: late_text.clone(),
        token_count: 0,
        page_start: 0,
        page_end: 0,
        segment_start_index: 0,
        segment_end_index: 0,
        char_start: 0,
        char_end: late_text.chars().count() as u64,
        line_start: None,
        line_end: None,
    };
    let indexed = [IndexedChunk { chunk: &chunk, terms: lexical.0, term_count: lexical.1, embedding: Some(vector_of(&late_text)) }];
    rag_store::pipeline::replace_index(&mut open, a, &late.to_string(), "v1", Some(MODEL), &indexed, chrono::Utc::now()).await.unwrap();
    let ingested = DocumentIngested {
        envelope: Envelope::originating(a, "test"),
        document_id: late.to_string(),
        chunking_version: "v1".into(),
        embedding_model: Some(MODEL.into()),
        embedding_dimension: Some(DIMENSION as i32),
        chunk_count: 1,
        failure: None,
        revision: 1,
    };
    rag_store::pipeline::apply_ingested(&mut open, &ingested).await.unwrap();
    let probe = [QueryTerm { term: "qwertyuiop".into(), word: 0, weight: 1.0 }];
    // Meanwhile other documents change and are caught up with.
    ingest(&pool, a, docs_a[2], "v2", &[corpus.text()]).await;
    assert!(memory.search(a, &probe, &[], Bm25::default(), 10).await.unwrap().is_empty());
    assert_same_ranking(&pool, &memory, a, &[]).await;
    open.commit().await.unwrap();
    let hits = memory.search(a, &probe, &[], Bm25::default(), 10).await.unwrap();
    assert_eq!(hits.iter().map(|h| h.chunk_id.as_str()).collect::<Vec<_>>(), [chunk.chunk_id.as_str()]);
    assert_same_ranking(&pool, &memory, a, &[]).await;

    // A rebuild truncates the read models: the index empties, then follows
    // the new rows.
    rag_store::operations::reset_read_models(&pool, &[]).await.unwrap();
    assert!(memory.search(a, &probe, &[], Bm25::default(), 10).await.unwrap().is_empty());
    let mut tx = pool.begin().await.unwrap();
    upload(&mut tx, a, late).await;
    tx.commit().await.unwrap();
    ingest(&pool, a, late, "v1", &[late_text]).await;
    assert_eq!(memory.search(a, &probe, &[], Bm25::default(), 10).await.unwrap().len(), 1);
    assert_same_ranking(&pool, &memory, a, &[]).await;
    db.drop_database().await;
}

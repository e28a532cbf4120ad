//! In-memory search indexes of the workspaces a process searches, kept in
//! step with the read models: before each query the workspace's index asks
//! Postgres which documents changed since its horizon (one indexed query,
//! migration 20261123000008) and reloads only those. So a query sees every
//! change committed before it started, like a SQL statement would, and the
//! read models stay the only state: a process that restarts, or another
//! machine, loads the workspace again on its first query.
//!
//! Each index holds the BM25 postings, and, for workspaces of at most
//! `dense_max_chunks` chunks, the embeddings for exact nearest neighbours
//! (larger ones are searched through pgvector's HNSW index).
//!
//! Memory: about 12 bytes per posting and 5 per vector component (fp32 and
//! an 8-bit copy; a
//! 10,000-chunk workspace of the bench: 1.08M postings and 3.84M components,
//! ~28 MB, weighing 2.36M postings). Past `max_postings` (vectors counted as a third of a posting per
//! component) the least recently searched workspaces are dropped and load
//! again when next searched.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Instant;

use rag_searchindex::{Bm25, ChunkVector, IndexedChunk, QueryTerm, Scored, WorkspaceIndex};
use rag_store::search::{self, SearchableChunk, SearchableVector};
use rag_store::sqlx::PgPool;
use rag_store::StoreError;
use rag_telemetry::events::{InternalEvent, SearchIndexRefreshed};
use tokio::sync::RwLock;
use uuid::Uuid;

/// Default bound on what the indexes of a process hold, in postings
/// (~12 bytes each by the estimate; 100 workspaces of 10,000 chunks with
/// their vectors weigh ~260M and took 4.6 GB of RSS in the bench). At
/// 250M they did not fit: queries going round them reloaded an index each
/// time (lexical p50 1.0 s). Only searched workspaces are loaded.
pub const DEFAULT_MAX_POSTINGS: usize = 300_000_000;
/// Default size up to which a workspace's vectors are held for exact
/// search (with 8-bit copies for a first pass from 4,096 chunks): 100,000
/// chunks of 384 components take ~190 MB and are searched in a few ms.
pub const DEFAULT_DENSE_MAX_CHUNKS: usize = 200_000;

struct Loaded {
    /// None until the first load.
    epoch: Option<i64>,
    /// Whether the index holds the workspace's vectors.
    vectors: bool,
    index: WorkspaceIndex,
}

struct Entry {
    loaded: Arc<RwLock<Loaded>>,
    /// Changes below it are in `loaded`; raised without the write lock when
    /// a check finds nothing new.
    horizon: AtomicI64,
    weight: AtomicU64,
    last_used: AtomicU64,
}

/// The in-memory search indexes of one process.
pub struct SearchIndexes {
    pool: PgPool,
    max_postings: usize,
    dense_max_chunks: usize,
    started: Instant,
    workspaces: Mutex<HashMap<String, Arc<Entry>>>,
}

impl SearchIndexes {
    /// `dense_max_chunks` 0: vectors are never held.
    pub fn new(pool: PgPool, max_postings: usize, dense_max_chunks: usize) -> Self {
        SearchIndexes { pool, max_postings, dense_max_chunks, started: Instant::now(), workspaces: Mutex::new(HashMap::new()) }
    }

    fn entry(&self, workspace_id: &str) -> Arc<Entry> {
        let mut map = self.workspaces.lock().unwrap_or_else(|p| p.into_inner());
        let entry = map
            .entry(workspace_id.to_string())
            .or_insert_with(|| {
                Arc::new(Entry {
                    loaded: Arc::new(RwLock::new(Loaded { epoch: None, vectors: false, index: WorkspaceIndex::new() })),
                    horizon: AtomicI64::new(i64::MIN),
                    weight: AtomicU64::new(0),
                    last_used: AtomicU64::new(0),
                })
            })
            .clone();
        entry.last_used.store(self.started.elapsed().as_millis() as u64, Ordering::Relaxed);
        entry
    }

    /// BM25 ranking of the workspace's searchable chunks (see
    /// [`rag_searchindex::WorkspaceIndex::search`]), after catching up with
    /// every change committed before the call.
    pub async fn search(
        &self,
        workspace_id: &str,
        terms: &[QueryTerm],
        scope: &[Uuid],
        params: Bm25,
        limit: usize,
    ) -> Result<Vec<Scored>, StoreError> {
        self.ranked(workspace_id, |loaded| loaded.index.search(terms, scope, params, limit)).await
    }

    /// Exact nearest neighbours (cosine) among the workspace's chunks
    /// embedded by `model`, after catching up; None when the workspace is
    /// too large for its vectors to be held (search pgvector instead).
    pub async fn nearest(
        &self,
        workspace_id: &str,
        model: &str,
        query: &[f32],
        scope: &[Uuid],
        limit: usize,
    ) -> Result<Option<Vec<Scored>>, StoreError> {
        if self.dense_max_chunks == 0 {
            return Ok(None);
        }
        self.ranked(workspace_id, |loaded| loaded.vectors.then(|| loaded.index.nearest(model, query, scope, limit))).await
    }

    /// `rank` on the workspace's index caught up with every change
    /// committed before the call. The usual case, nothing changed since
    /// the index's horizon, is one round trip that overlaps `rank` on the
    /// index as it stands: the check is sent first, the ranking runs while
    /// Postgres answers (under the read lock, so on the state the check is
    /// about) and is kept if nothing changed. Otherwise the index catches
    /// up and `rank` runs again.
    async fn ranked<T>(&self, workspace_id: &str, rank: impl Fn(&Loaded) -> T) -> Result<T, StoreError> {
        let entry = self.entry(workspace_id);
        {
            let loaded = entry.loaded.clone().read_owned().await;
            if let Some(epoch) = loaded.epoch {
                let since = entry.horizon.load(Ordering::Acquire);
                let mut check = std::pin::pin!(search::search_changes_since(&self.pool, workspace_id, Some(since)));
                // One poll sends the statement (or finds the answer).
                let early = std::future::poll_fn(|cx| Poll::Ready(check.as_mut().poll(cx))).await;
                let ranked = rank(&loaded);
                let changes = match early {
                    Poll::Ready(changes) => changes,
                    Poll::Pending => check.await,
                }?;
                if changes.epoch == epoch && changes.documents.is_empty() {
                    // Nothing changed in [since, horizon): the index is current up to it.
                    entry.horizon.fetch_max(changes.horizon, Ordering::AcqRel);
                    return Ok(ranked);
                }
            }
        }
        let mut loaded = entry.loaded.clone().write_owned().await;
        self.catch_up(workspace_id, &entry, &mut loaded).await?;
        Ok(rank(&loaded.downgrade()))
    }

    /// Under the write lock: a full load, or the changed documents.
    async fn catch_up(&self, workspace_id: &str, entry: &Entry, loaded: &mut Loaded) -> Result<(), StoreError> {
        let started = Instant::now();
        let since = entry.horizon.load(Ordering::Acquire);
        let changes = search::search_changes_since(&self.pool, workspace_id, loaded.epoch.map(|_| since)).await?;
        let full = loaded.epoch != Some(changes.epoch);
        let (documents, chunks) = if full {
            // Horizon first, rows after: a change that commits in between
            // is in the rows and in the next check (reloading is idempotent).
            let rows = search::searchable_chunks(&self.pool, workspace_id, None).await?;
            let vectors = rows.len() <= self.dense_max_chunks;
            let embeddings = if vectors { search::searchable_vectors(&self.pool, workspace_id, None).await? } else { Vec::new() };
            let mut index = WorkspaceIndex::new();
            let chunks = rows.len();
            let by_document = group_by_document(rows, embeddings);
            let documents = by_document.len();
            for (document, chunks) in by_document {
                index.replace_document(document, chunks);
            }
            *loaded = Loaded { epoch: loaded.epoch, vectors, index };
            (documents, chunks)
        } else if changes.documents.is_empty() {
            (0, 0)
        } else {
            let rows = search::searchable_chunks(&self.pool, workspace_id, Some(&changes.documents)).await?;
            let embeddings = if loaded.vectors {
                search::searchable_vectors(&self.pool, workspace_id, Some(&changes.documents)).await?
            } else {
                Vec::new()
            };
            let chunks = rows.len();
            let mut by_document = group_by_document(rows, embeddings);
            for document in &changes.documents {
                loaded.index.replace_document(*document, by_document.remove(document).unwrap_or_default());
            }
            if loaded.vectors && loaded.index.chunks() > self.dense_max_chunks as u64 {
                // Outgrown: pgvector's index from now on.
                loaded.index.drop_vectors();
                loaded.vectors = false;
            }
            (changes.documents.len(), chunks)
        };
        loaded.epoch = Some(changes.epoch);
        entry.horizon.store(changes.horizon, Ordering::Release);
        entry.weight.store(loaded.index.weight_in_postings() as u64, Ordering::Relaxed);
        if changes.rows > changes.documents.len() as i64 {
            // Superseded change rows only cost reads; a failure here is harmless.
            if let Err(e) = search::prune_search_changes(&self.pool, workspace_id, changes.horizon).await {
                tracing::debug!(workspace_id, error = %e, "pruning search changes failed");
            }
        }
        let process_postings = self.evict_beyond_budget(workspace_id);
        SearchIndexRefreshed { workspace_id, full, documents, chunks, elapsed: started.elapsed(), process_postings }.emit();
        Ok(())
    }

    /// Drops the least recently searched workspaces (never `keep`) while
    /// the process holds more than its budget; returns what it holds.
    fn evict_beyond_budget(&self, keep: &str) -> usize {
        let mut map = self.workspaces.lock().unwrap_or_else(|p| p.into_inner());
        let mut total: usize = map.values().map(|e| e.weight.load(Ordering::Relaxed) as usize).sum();
        while total > self.max_postings {
            let oldest = map
                .iter()
                .filter(|(ws, _)| ws.as_str() != keep)
                .min_by_key(|(_, e)| e.last_used.load(Ordering::Relaxed))
                .map(|(ws, e)| (ws.clone(), e.weight.load(Ordering::Relaxed) as usize));
            let Some((ws, weight)) = oldest else { break };
            // An in-flight search keeps its Arc; the index is freed after it.
            map.remove(&ws);
            total -= weight;
        }
        total
    }
}

fn group_by_document(rows: Vec<SearchableChunk>, embeddings: Vec<SearchableVector>) -> HashMap<Uuid, Vec<IndexedChunk>> {
    let mut vectors: HashMap<String, ChunkVector> =
        embeddings.into_iter().map(|v| (v.chunk_id, ChunkVector { model: v.embedding_model, values: v.embedding })).collect();
    let mut by_document: HashMap<Uuid, Vec<IndexedChunk>> = HashMap::new();
    for row in rows {
        let terms = row.terms.into_iter().zip(row.tfs.into_iter().map(|tf| tf.max(0) as u32)).collect();
        let vector = vectors.remove(&row.chunk_id);
        by_document.entry(row.document_id).or_default().push(IndexedChunk {
            chunk_id: row.chunk_id,
            document_id: row.document_id,
            term_count: row.term_count.max(0) as u32,
            terms,
            vector,
        });
    }
    by_document
}

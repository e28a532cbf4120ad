//! In-memory lexical indexes of the workspaces a process searches, kept in
//! step with the read models: before each query the workspace's index asks
//! Postgres which documents changed since its horizon (one indexed query,
//! migration 20261123000008) and reloads only those. So a query sees every
//! change committed before it started, like the SQL scorer did, and the
//! read models stay the only state: a process that restarts, or another
//! machine, loads the workspace again on its first query.
//!
//! Memory: about 12 bytes per posting (a 100,000-chunk workspace of the
//! bench holds ~6M postings). Past `max_postings` the least recently
//! searched workspaces are dropped and load again when next searched.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rag_lexindex::{IndexedChunk, QueryTerm, Scored, WorkspaceIndex};
use rag_store::search::{self, SearchableChunk};
use rag_store::sqlx::PgPool;
use rag_store::StoreError;
use rag_telemetry::events::{InternalEvent, LexicalIndexRefreshed};
use tokio::sync::RwLock;
use uuid::Uuid;

/// Default bound on the postings held in memory (~12 bytes each).
pub const DEFAULT_MAX_POSTINGS: usize = 40_000_000;

struct Loaded {
    /// None until the first load.
    epoch: Option<i64>,
    index: WorkspaceIndex,
}

struct Entry {
    loaded: RwLock<Loaded>,
    /// Changes below it are in `loaded`; raised without the write lock when
    /// a check finds nothing new.
    horizon: AtomicI64,
    postings: AtomicU64,
    last_used: AtomicU64,
}

/// The in-memory lexical indexes of one process.
pub struct LexicalIndexes {
    pool: PgPool,
    max_postings: usize,
    started: Instant,
    workspaces: Mutex<HashMap<String, Arc<Entry>>>,
}

impl LexicalIndexes {
    pub fn new(pool: PgPool, max_postings: usize) -> Self {
        LexicalIndexes { pool, max_postings, started: Instant::now(), workspaces: Mutex::new(HashMap::new()) }
    }

    fn entry(&self, workspace_id: &str) -> Arc<Entry> {
        let mut map = self.workspaces.lock().unwrap_or_else(|p| p.into_inner());
        let entry = map
            .entry(workspace_id.to_string())
            .or_insert_with(|| {
                Arc::new(Entry {
                    loaded: RwLock::new(Loaded { epoch: None, index: WorkspaceIndex::new() }),
                    horizon: AtomicI64::new(i64::MIN),
                    postings: AtomicU64::new(0),
                    last_used: AtomicU64::new(0),
                })
            })
            .clone();
        entry.last_used.store(self.started.elapsed().as_millis() as u64, Ordering::Relaxed);
        entry
    }

    /// BM25 ranking of the workspace's searchable chunks (see
    /// [`rag_lexindex::WorkspaceIndex::search`]), after catching up with
    /// every change committed before the call.
    pub async fn search(
        &self,
        workspace_id: &str,
        terms: &[QueryTerm],
        scope: &[Uuid],
        params: rag_lexindex::Bm25,
        limit: usize,
    ) -> Result<Vec<Scored>, StoreError> {
        let entry = self.entry(workspace_id);
        {
            let loaded = entry.loaded.read().await;
            if let Some(epoch) = loaded.epoch {
                let since = entry.horizon.load(Ordering::Acquire);
                let changes = search::search_changes_since(&self.pool, workspace_id, Some(since)).await?;
                if changes.epoch == epoch && changes.documents.is_empty() {
                    // Nothing changed in [since, horizon): the index is current up to it.
                    entry.horizon.fetch_max(changes.horizon, Ordering::AcqRel);
                    return Ok(loaded.index.search(terms, scope, params, limit));
                }
            }
        }
        let mut loaded = entry.loaded.write().await;
        self.catch_up(workspace_id, &entry, &mut loaded).await?;
        let loaded = loaded.downgrade();
        Ok(loaded.index.search(terms, scope, params, limit))
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
            let mut index = WorkspaceIndex::new();
            let chunks = rows.len();
            let by_document = group_by_document(rows);
            let documents = by_document.len();
            for (document, chunks) in by_document {
                index.replace_document(document, chunks);
            }
            loaded.index = index;
            (documents, chunks)
        } else if changes.documents.is_empty() {
            (0, 0)
        } else {
            let rows = search::searchable_chunks(&self.pool, workspace_id, Some(&changes.documents)).await?;
            let chunks = rows.len();
            let mut by_document = group_by_document(rows);
            for document in &changes.documents {
                loaded.index.replace_document(*document, by_document.remove(document).unwrap_or_default());
            }
            (changes.documents.len(), chunks)
        };
        loaded.epoch = Some(changes.epoch);
        entry.horizon.store(changes.horizon, Ordering::Release);
        entry.postings.store(loaded.index.postings() as u64, Ordering::Relaxed);
        if changes.rows > changes.documents.len() as i64 {
            // Superseded change rows only cost reads; a failure here is harmless.
            if let Err(e) = search::prune_search_changes(&self.pool, workspace_id, changes.horizon).await {
                tracing::debug!(workspace_id, error = %e, "pruning search changes failed");
            }
        }
        let process_postings = self.evict_beyond_budget(workspace_id);
        LexicalIndexRefreshed { workspace_id, full, documents, chunks, elapsed: started.elapsed(), process_postings }.emit();
        Ok(())
    }

    /// Drops the least recently searched workspaces (never `keep`) while
    /// the process holds more than its budget; returns what it holds.
    fn evict_beyond_budget(&self, keep: &str) -> usize {
        let mut map = self.workspaces.lock().unwrap_or_else(|p| p.into_inner());
        let mut total: usize = map.values().map(|e| e.postings.load(Ordering::Relaxed) as usize).sum();
        while total > self.max_postings {
            let oldest = map
                .iter()
                .filter(|(ws, _)| ws.as_str() != keep)
                .min_by_key(|(_, e)| e.last_used.load(Ordering::Relaxed))
                .map(|(ws, e)| (ws.clone(), e.postings.load(Ordering::Relaxed) as usize));
            let Some((ws, postings)) = oldest else { break };
            // An in-flight search keeps its Arc; the index is freed after it.
            map.remove(&ws);
            total -= postings;
        }
        total
    }
}

fn group_by_document(rows: Vec<SearchableChunk>) -> HashMap<Uuid, Vec<IndexedChunk>> {
    let mut by_document: HashMap<Uuid, Vec<IndexedChunk>> = HashMap::new();
    for row in rows {
        let terms = row.terms.into_iter().zip(row.tfs.into_iter().map(|tf| tf.max(0) as u32)).collect();
        by_document.entry(row.document_id).or_default().push(IndexedChunk {
            chunk_id: row.chunk_id,
            document_id: row.document_id,
            term_count: row.term_count.max(0) as u32,
            terms,
        });
    }
    by_document
}

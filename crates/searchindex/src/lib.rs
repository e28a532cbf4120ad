//! One workspace's search index, held in memory: an inverted index (term
//! -> chunks with their term frequency) with BM25 of exactly the formula
//! and statistics of the SQL scorer (`rag_store::search::lexical`), so
//! moving the scoring here changes no ranking; and, when the caller loads
//! them, the chunks' embedding vectors for exact nearest neighbours (a
//! small workspace in a large shared HNSW index is slow to search: the
//! scan walks past the other workspaces' vectors). No I/O: the caller
//! loads chunks from the read models and tells the index which documents
//! changed.
//!
//! Why not a search library: tantivy scores with index-wide statistics,
//! one-byte length norms and a sum over terms, while this ranking takes the
//! best of a word's variants (`tăng` or `~tang`), and statistics of the
//! queried documents only. Exact scoring of the matching postings in memory
//! costs a few milliseconds at 100,000 chunks (see `rag-dev bench`), where
//! the same scoring in SQL took seconds.
//!
//! Removing a document marks its chunks dead (their postings are skipped);
//! [`WorkspaceIndex::compact`] rewrites the lists once a quarter of the
//! postings are dead.

use std::cmp::Ordering;
use std::collections::HashMap;

use uuid::Uuid;

mod dense;
mod lexical;
mod quantized;
#[cfg(test)]
mod tests;

use dense::dot;
use quantized::QuantizedVectors;

/// BM25 parameters and query terms are `rag-model`'s: the SQL scorer
/// takes the same input.
pub use rag_model::{Bm25, QueryTerm};

/// A searchable chunk as the read models hold it.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedChunk {
    pub chunk_id: String,
    pub document_id: Uuid,
    /// Length in words (BM25's document length).
    pub term_count: u32,
    /// Each term once, with its frequency.
    pub terms: Vec<(String, u32)>,
    /// The chunk's embedding, when the caller holds vectors.
    pub vector: Option<ChunkVector>,
}

/// An embedding and the model that made it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkVector {
    pub model: String,
    pub values: Vec<f32>,
}

/// A ranked chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub chunk_id: String,
    pub document_id: Uuid,
    pub score: f64,
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    slot: u32,
    tf: u32,
}

#[derive(Debug)]
struct Slot {
    chunk_id: String,
    document_id: Uuid,
    term_ids: Vec<u32>,
}

/// An embedding as held: its model (an index into `models`), its norm
/// (computed once, not per query) and its components.
type HeldVector = (u16, f64, Box<[f32]>);

/// The inverted index of one workspace's searchable chunks.
#[derive(Debug, Default)]
pub struct WorkspaceIndex {
    term_ids: HashMap<String, u32>,
    postings: Vec<Vec<Posting>>,
    /// Live postings per term: the document frequency of a whole-workspace
    /// query without a scan.
    live_df: Vec<u32>,
    /// Highest term frequency a term ever had (an upper bound once chunks
    /// go): bounds the term's score for early termination.
    max_tf: Vec<u32>,
    slots: Vec<Slot>,
    /// Per slot, apart from `slots` so scoring reads compact arrays.
    lengths: Vec<u32>,
    alive: Vec<bool>,
    /// Per slot: the embedding, if held.
    vectors: Vec<Option<HeldVector>>,
    models: Vec<String>,
    vector_floats: usize,
    /// The held vectors in 8 bits, for the first pass of `nearest`.
    quantized: QuantizedVectors,
    documents: HashMap<Uuid, Vec<u32>>,
    live_chunks: u64,
    live_length: u64,
    total_postings: usize,
    dead_postings: usize,
}

impl WorkspaceIndex {
    pub fn new() -> Self {
        Self::default()
    }

    /// Live chunks.
    pub fn chunks(&self) -> u64 {
        self.live_chunks
    }

    /// Documents with at least one live chunk.
    pub fn documents(&self) -> usize {
        self.documents.len()
    }

    /// Postings held, dead ones included.
    pub fn postings(&self) -> usize {
        self.total_postings
    }

    /// What the index weighs, in postings (~12 bytes): postings plus a
    /// third of a posting per vector component (4 bytes).
    pub fn weight_in_postings(&self) -> usize {
        self.total_postings + self.vector_floats / 3 + self.quantized.bytes() / 12
    }

    /// Forgets every vector (the workspace outgrew exact search).
    pub fn drop_vectors(&mut self) {
        self.vectors.iter_mut().for_each(|v| *v = None);
        self.vector_floats = 0;
        self.quantized.clear();
    }

    /// Replaces everything the index holds of `document_id` by `chunks`
    /// (none: the document is no longer searchable).
    pub fn replace_document(&mut self, document_id: Uuid, chunks: Vec<IndexedChunk>) {
        self.remove_document(document_id);
        let mut slots = Vec::with_capacity(chunks.len());
        for chunk in chunks {
            let slot = self.slots.len() as u32;
            let mut term_ids = Vec::with_capacity(chunk.terms.len());
            for (term, tf) in chunk.terms {
                let next = self.postings.len() as u32;
                let id = *self.term_ids.entry(term).or_insert(next);
                if id == next {
                    self.postings.push(Vec::new());
                    self.live_df.push(0);
                    self.max_tf.push(0);
                }
                self.postings[id as usize].push(Posting { slot, tf });
                self.live_df[id as usize] += 1;
                self.max_tf[id as usize] = self.max_tf[id as usize].max(tf);
                term_ids.push(id);
            }
            self.total_postings += term_ids.len();
            self.live_chunks += 1;
            self.live_length += u64::from(chunk.term_count);
            self.slots.push(Slot { chunk_id: chunk.chunk_id, document_id: chunk.document_id, term_ids });
            self.lengths.push(chunk.term_count);
            self.alive.push(true);
            let vector = chunk.vector.map(|v| {
                let model = match self.models.iter().position(|m| *m == v.model) {
                    Some(i) => i,
                    None => {
                        self.models.push(v.model);
                        self.models.len() - 1
                    }
                };
                self.vector_floats += v.values.len();
                (model as u16, f64::from(dot(&v.values, &v.values)).sqrt(), v.values.into_boxed_slice())
            });
            self.quantized.push(vector.as_ref().map(|(m, norm, v)| (*m, &v[..], *norm)));
            self.vectors.push(vector);
            slots.push(slot);
        }
        if !slots.is_empty() {
            self.documents.insert(document_id, slots);
        }
        if self.dead_postings > 4096 && self.dead_postings * 4 > self.total_postings {
            self.compact();
        }
    }

    /// Drops a document's chunks.
    pub fn remove_document(&mut self, document_id: Uuid) {
        let Some(slots) = self.documents.remove(&document_id) else { return };
        for slot in slots {
            let i = slot as usize;
            if !self.alive[i] {
                continue;
            }
            self.alive[i] = false;
            for &t in &self.slots[i].term_ids {
                self.live_df[t as usize] -= 1;
            }
            self.dead_postings += self.slots[i].term_ids.len();
            if let Some((_, _, v)) = self.vectors[i].take() {
                self.vector_floats -= v.len();
            }
            self.quantized.clear_slot(i);
            self.live_chunks -= 1;
            self.live_length -= u64::from(self.lengths[i]);
        }
    }

    /// Rewrites the lists without dead chunks (slots are renumbered).
    pub fn compact(&mut self) {
        let mut renumbered: Vec<Option<u32>> = Vec::with_capacity(self.slots.len());
        let mut slots = Vec::with_capacity(self.live_chunks as usize);
        let mut lengths = Vec::with_capacity(self.live_chunks as usize);
        let mut vectors = Vec::with_capacity(self.live_chunks as usize);
        for (i, slot) in self.slots.drain(..).enumerate() {
            if self.alive[i] {
                renumbered.push(Some(slots.len() as u32));
                slots.push(slot);
                lengths.push(self.lengths[i]);
                vectors.push(self.vectors[i].take());
            } else {
                renumbered.push(None);
            }
        }
        self.quantized.retain(&self.alive);
        self.alive = vec![true; slots.len()];
        self.lengths = lengths;
        self.vectors = vectors;
        for list in &mut self.postings {
            list.retain_mut(|p| match renumbered[p.slot as usize] {
                Some(slot) => {
                    p.slot = slot;
                    true
                }
                None => false,
            });
        }
        for list in self.documents.values_mut() {
            for slot in list.iter_mut() {
                // Documents only list live slots.
                *slot = renumbered[*slot as usize].unwrap_or(u32::MAX);
            }
            list.retain(|s| *s != u32::MAX);
        }
        // Terms no chunk has any more keep their id with an empty list: ids
        // stay stable and the map small enough not to matter.
        self.slots = slots;
        self.total_postings -= self.dead_postings;
        self.dead_postings = 0;
    }

    fn top(&self, mut ranked: Vec<(u32, f64)>, limit: usize) -> Vec<Scored> {
        let by_rank = |a: &(u32, f64), b: &(u32, f64)| -> Ordering {
            b.1.total_cmp(&a.1).then_with(|| self.slots[a.0 as usize].chunk_id.cmp(&self.slots[b.0 as usize].chunk_id))
        };
        if ranked.len() > limit {
            ranked.select_nth_unstable_by(limit - 1, by_rank);
            ranked.truncate(limit);
        }
        ranked.sort_unstable_by(by_rank);
        ranked
            .into_iter()
            .map(|(slot, score)| {
                let s = &self.slots[slot as usize];
                Scored { chunk_id: s.chunk_id.clone(), document_id: s.document_id, score }
            })
            .collect()
    }
}

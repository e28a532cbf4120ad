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
//! costs a few milliseconds at 100,000 chunks (see `rag-engine bench`), where
//! the same scoring in SQL took seconds.
//!
//! Removing a document marks its chunks dead (their postings are skipped);
//! [`WorkspaceIndex::compact`] rewrites the lists once a quarter of the
//! postings are dead.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};

use uuid::Uuid;

mod quantized;
use quantized::QuantizedVectors;

/// From this many live chunks, a whole-workspace nearest-neighbour search
/// first scans the 8-bit copies and scores exactly only the vectors that
/// can still be among the best; below it the plain exact scan is as fast.
const QUANTIZED_SCAN_FROM: u64 = 4096;

/// BM25 parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25 {
    pub k1: f64,
    pub b: f64,
}

impl Default for Bm25 {
    fn default() -> Self {
        Bm25 { k1: 1.2, b: 0.75 }
    }
}

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

/// A query term: its word (a word's terms do not add up, the best counts)
/// and weight.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTerm {
    pub term: String,
    pub word: i32,
    pub weight: f64,
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

    /// BM25 ranking, best first (ties by chunk id), of the live chunks of
    /// `scope` (empty: the whole workspace). Statistics (chunk count,
    /// average length, document frequencies) are those of the scope, as in
    /// the SQL scorer. A whole-workspace query stops reading a list once it
    /// cannot change the top `limit` (MaxScore); a scoped one reads every
    /// posting of its terms (it needs their counts within the scope).
    pub fn search(&self, terms: &[QueryTerm], scope: &[Uuid], params: Bm25, limit: usize) -> Vec<Scored> {
        if terms.is_empty() || limit == 0 {
            return Vec::new();
        }
        let in_scope: Option<Vec<bool>> = if scope.is_empty() {
            None
        } else {
            let mut mask = vec![false; self.slots.len()];
            let unique: HashSet<&Uuid> = scope.iter().collect();
            for doc in unique {
                for &slot in self.documents.get(doc).map(Vec::as_slice).unwrap_or_default() {
                    mask[slot as usize] = true;
                }
            }
            Some(mask)
        };
        let (n, length) = match &in_scope {
            None => (self.live_chunks, self.live_length),
            Some(mask) => mask
                .iter()
                .enumerate()
                .filter(|(i, inside)| **inside && self.alive[*i])
                .fold((0u64, 0u64), |(n, len), (i, _)| (n + 1, len + u64::from(self.lengths[i]))),
        };
        if n == 0 {
            return Vec::new();
        }
        let n = n as f64;
        let stats = Stats { avgdl: (length as f64 / n).max(1.0), k1: params.k1, b: params.b };

        // Words in order of first appearance, each with its terms present
        // in the index and their weight x idf.
        let mut words: Vec<Word<'_>> = Vec::new();
        for t in terms {
            let position = match words.iter().position(|w| w.id == t.word) {
                Some(p) => p,
                None => {
                    words.push(Word { id: t.word, terms: Vec::new(), bound: 0.0 });
                    words.len() - 1
                }
            };
            let Some(&id) = self.term_ids.get(&t.term) else { continue };
            let list = &self.postings[id as usize];
            let df = match &in_scope {
                None => f64::from(self.live_df[id as usize]),
                Some(mask) => list.iter().filter(|p| self.alive[p.slot as usize] && mask[p.slot as usize]).count() as f64,
            };
            if df == 0.0 {
                continue;
            }
            let scale = t.weight * (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            let max_tf = f64::from(self.max_tf[id as usize]);
            let word = &mut words[position];
            // The score with the highest frequency and a length of 0.
            word.bound = word.bound.max(scale * max_tf * (stats.k1 + 1.0) / (max_tf + stats.k1 * (1.0 - stats.b)));
            word.terms.push(TermList { list, scale, pos: 0 });
        }
        let prunable = in_scope.is_none()
            && (0.0..=1.0).contains(&stats.b)
            && stats.k1 >= 0.0
            && words.iter().all(|w| w.terms.iter().all(|t| t.scale >= 0.0) && w.bound.is_finite());
        let ranked = match in_scope {
            Some(mask) => self.score_every_posting(&words, &stats, |slot| self.alive[slot] && mask[slot]),
            None if !prunable => self.score_every_posting(&words, &stats, |slot| self.alive[slot]),
            None => self.max_score(&mut words, &stats, limit),
        };
        self.top(ranked, limit)
    }

    /// Exact nearest neighbours of `query` among the live chunks of
    /// `scope` (empty: all) embedded by `model` with as many components,
    /// best first (ties by chunk id); the score is the cosine similarity.
    pub fn nearest(&self, model: &str, query: &[f32], scope: &[Uuid], limit: usize) -> Vec<Scored> {
        let Some(model) = self.models.iter().position(|m| m == model).map(|m| m as u16) else { return Vec::new() };
        if query.is_empty() || limit == 0 {
            return Vec::new();
        }
        let query_norm = f64::from(dot(query, query)).sqrt();
        if query_norm == 0.0 {
            return Vec::new();
        }
        let score = |slot: usize| -> Option<(u32, f64)> {
            let (m, norm, v) = self.vectors[slot].as_ref()?;
            if *m != model || v.len() != query.len() || !self.alive[slot] {
                return None;
            }
            (*norm > 0.0).then(|| (slot as u32, f64::from(dot(query, v)) / (query_norm * norm)))
        };
        let ranked: Vec<(u32, f64)> = if scope.is_empty() && self.live_chunks >= QUANTIZED_SCAN_FROM && self.quantized.dim() == query.len()
        {
            // Exact scores only for the vectors whose approximate score,
            // give or take its error bound, can still reach the `limit`-th
            // best lower bound: every other vector has at least `limit`
            // vectors strictly better, so the result is the exact ranking.
            let approximate = self.quantized.approximate(model, query, &self.alive);
            if approximate.len() <= limit {
                approximate.iter().filter_map(|a| score(a.slot as usize)).collect()
            } else {
                let mut lower: Vec<f32> = approximate.iter().map(|a| a.cosine - a.error).collect();
                let (_, threshold, _) = lower.select_nth_unstable_by(limit - 1, |a, b| b.total_cmp(a));
                let threshold = *threshold;
                approximate.iter().filter(|a| a.cosine + a.error >= threshold).filter_map(|a| score(a.slot as usize)).collect()
            }
        } else if scope.is_empty() {
            (0..self.slots.len()).filter_map(score).collect()
        } else {
            let unique: HashSet<&Uuid> = scope.iter().collect();
            unique
                .into_iter()
                .flat_map(|doc| self.documents.get(doc).map(Vec::as_slice).unwrap_or_default())
                .filter_map(|&slot| score(slot as usize))
                .collect()
        };
        self.top(ranked, limit)
    }

    fn score(&self, stats: &Stats, scale: f64, tf: u32, slot: usize) -> f64 {
        let tf = f64::from(tf);
        let dl = f64::from(self.lengths[slot]);
        // The SQL scorer's order of operations, for the same floating-point result.
        scale * tf * (stats.k1 + 1.0) / (tf + stats.k1 * (1.0 - stats.b + stats.b * dl / stats.avgdl))
    }

    /// Every posting of every term: (slot, score) of each matching chunk.
    fn score_every_posting(&self, words: &[Word<'_>], stats: &Stats, eligible: impl Fn(usize) -> bool) -> Vec<(u32, f64)> {
        let mut total = vec![f64::NEG_INFINITY; self.slots.len()];
        let mut best = vec![f64::NEG_INFINITY; self.slots.len()];
        let mut touched_total: Vec<u32> = Vec::new();
        let mut touched_word: Vec<u32> = Vec::new();
        for word in words {
            for term in &word.terms {
                for p in term.list {
                    let slot = p.slot as usize;
                    if !eligible(slot) {
                        continue;
                    }
                    let s = self.score(stats, term.scale, p.tf, slot);
                    if best[slot] == f64::NEG_INFINITY {
                        touched_word.push(p.slot);
                        best[slot] = s;
                    } else if s > best[slot] {
                        best[slot] = s;
                    }
                }
            }
            for slot in touched_word.drain(..) {
                let i = slot as usize;
                if total[i] == f64::NEG_INFINITY {
                    total[i] = 0.0;
                    touched_total.push(slot);
                }
                total[i] += best[i];
                best[i] = f64::NEG_INFINITY;
            }
        }
        touched_total.into_iter().map(|slot| (slot, total[slot as usize])).collect()
    }

    /// MaxScore, document at a time: words sorted by their bound; those
    /// whose bounds together cannot reach the current `limit`-th score are
    /// only looked up for chunks the others found, and a chunk is dropped
    /// as soon as its bound falls below it. Per-word scores are summed in
    /// the words' order, as the exhaustive scorer does.
    fn max_score(&self, words: &mut [Word<'_>], stats: &Stats, limit: usize) -> Vec<(u32, f64)> {
        let mut order: Vec<usize> = (0..words.len()).filter(|&w| !words[w].terms.is_empty()).collect();
        order.sort_by(|a, b| words[*a].bound.total_cmp(&words[*b].bound));
        // cumulative[i]: the bounds of order[..=i] together.
        let cumulative: Vec<f64> = order
            .iter()
            .scan(0.0, |sum, &w| {
                *sum += words[w].bound;
                Some(*sum)
            })
            .collect();
        let mut top: BinaryHeap<Worst<'_>> = BinaryHeap::with_capacity(limit + 1);
        let mut threshold = f64::NEG_INFINITY;
        // order[..essential_from] are looked up only.
        let mut essential_from = 0;
        let mut per_word = vec![0f64; words.len()];
        let mut found = vec![false; words.len()];
        while let Some(slot) = order[essential_from..].iter().map(|&w| words[w].current()).min().filter(|s| *s != u32::MAX) {
            let i = slot as usize;
            let mut partial = 0.0;
            for &w in &order {
                found[w] = false;
            }
            for &w in &order[essential_from..] {
                if words[w].current() == slot {
                    let s = words[w].score_at(self, stats, slot);
                    per_word[w] = s;
                    found[w] = true;
                    partial += s;
                    words[w].advance_past(slot);
                }
            }
            if !self.alive[i] {
                continue;
            }
            let mut complete = true;
            for k in (0..essential_from).rev() {
                if below(partial + cumulative[k], threshold) {
                    complete = false;
                    break;
                }
                let w = order[k];
                words[w].seek(slot);
                if words[w].current() == slot {
                    let s = words[w].score_at(self, stats, slot);
                    per_word[w] = s;
                    found[w] = true;
                    partial += s;
                }
            }
            if !complete {
                continue;
            }
            let score = (0..words.len()).filter(|&w| found[w]).fold(0.0, |sum, w| sum + per_word[w]);
            let candidate = Worst { score, chunk_id: &self.slots[i].chunk_id, slot };
            if top.len() < limit {
                top.push(candidate);
            } else if top.peek().is_some_and(|worst| candidate < *worst) {
                top.pop();
                top.push(candidate);
            } else {
                continue;
            }
            if top.len() == limit {
                threshold = top.peek().map_or(f64::NEG_INFINITY, |w| w.score);
                while essential_from < order.len() && below(cumulative[essential_from], threshold) {
                    essential_from += 1;
                }
                if essential_from == order.len() {
                    break;
                }
            }
        }
        top.into_iter().map(|w| (w.slot, w.score)).collect()
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

/// Dot product in eight lanes, which the compiler turns into vector
/// instructions.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a8.remainder().iter().zip(b8.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in a8.zip(b8) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// Whether `upper` cannot reach `threshold`, with room for the rounding
/// of a bound computed in another order than the score it bounds (a tie
/// at the threshold may still win on its chunk id).
fn below(upper: f64, threshold: f64) -> bool {
    upper < threshold - threshold.abs() * 1e-9
}

struct Stats {
    avgdl: f64,
    k1: f64,
    b: f64,
}

struct TermList<'a> {
    list: &'a [Posting],
    /// weight x idf.
    scale: f64,
    pos: usize,
}

/// A query word: its terms' lists read together (the best term counts).
struct Word<'a> {
    id: i32,
    terms: Vec<TermList<'a>>,
    /// No chunk scores more on this word.
    bound: f64,
}

impl Word<'_> {
    /// The lowest slot at or after the cursors (`u32::MAX`: none left).
    fn current(&self) -> u32 {
        self.terms.iter().map(|t| t.list.get(t.pos).map_or(u32::MAX, |p| p.slot)).min().unwrap_or(u32::MAX)
    }

    fn score_at(&self, index: &WorkspaceIndex, stats: &Stats, slot: u32) -> f64 {
        let mut best = f64::NEG_INFINITY;
        for t in &self.terms {
            if let Some(p) = t.list.get(t.pos).filter(|p| p.slot == slot) {
                best = best.max(index.score(stats, t.scale, p.tf, slot as usize));
            }
        }
        best
    }

    fn advance_past(&mut self, slot: u32) {
        for t in &mut self.terms {
            if t.list.get(t.pos).is_some_and(|p| p.slot == slot) {
                t.pos += 1;
            }
        }
    }

    /// Moves every cursor to the first posting at or after `slot`.
    fn seek(&mut self, slot: u32) {
        for t in &mut self.terms {
            t.pos += t.list[t.pos..].partition_point(|p| p.slot < slot);
        }
    }
}

/// A top-list entry ordered so the heap's greatest is the one to drop: the
/// lowest score, and among equal scores the highest chunk id.
struct Worst<'a> {
    score: f64,
    chunk_id: &'a str,
    slot: u32,
}

impl PartialEq for Worst<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Worst<'_> {}

impl PartialOrd for Worst<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Worst<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        other.score.total_cmp(&self.score).then_with(|| self.chunk_id.cmp(other.chunk_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quantized_first_pass_keeps_nearest_neighbours_exact() {
        // Clustered vectors (many near-ties), exact duplicates (ties by
        // chunk id), a second model, removals and a compaction: above
        // QUANTIZED_SCAN_FROM chunks the result must still be the exact
        // ranking, and every approximate score within its error bound.
        let mut seed = 0x2545f4914f6cdd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 20001) as f32 / 10000.0 - 1.0
        };
        let dim = 48;
        let centres: Vec<Vec<f32>> = (0..8).map(|_| (0..dim).map(|_| next()).collect()).collect();
        let mut index = WorkspaceIndex::new();
        let mut all: Vec<(String, Uuid, String, Vec<f32>)> = Vec::new();
        for d in 0..90u128 {
            let doc = Uuid::from_u128(d);
            let chunks: Vec<IndexedChunk> = (0..60)
                .map(|c| {
                    let model = if c % 13 == 0 { "other" } else { "m" }.to_string();
                    let centre = &centres[(d as usize + c) % centres.len()];
                    let mut values: Vec<f32> = centre.iter().map(|x| x + 0.05 * next()).collect();
                    if c % 17 == 0 {
                        values = centre.clone();
                    }
                    let id = format!("c{d:03}-{c:02}");
                    all.push((id.clone(), doc, model.clone(), values.clone()));
                    IndexedChunk { vector: Some(ChunkVector { model, values }), ..chunk(&id, doc, &["w"]) }
                })
                .collect();
            index.replace_document(doc, chunks);
        }
        for gone in [5u128, 6, 40] {
            index.remove_document(Uuid::from_u128(gone));
        }
        assert!(index.chunks() >= QUANTIZED_SCAN_FROM, "the test must exercise the quantized pass");
        let cosine = |a: &[f32], b: &[f32]| {
            let d: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
            let n = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
            d / (n(a) * n(b))
        };
        let live = |doc: &Uuid| ![5u128, 6, 40].contains(&doc.as_u128());
        for round in 0..2 {
            if round == 1 {
                index.compact();
            }
            let model = index.models.iter().position(|m| m == "m").unwrap() as u16;
            for q in 0..12 {
                let query: Vec<f32> = if q % 3 == 0 { centres[q % centres.len()].clone() } else { (0..dim).map(|_| next()).collect() };
                for a in index.quantized.approximate(model, &query, &index.alive) {
                    let (_, _, v) = index.vectors[a.slot as usize].as_ref().unwrap();
                    let exact = cosine(&query, v) as f32;
                    assert!((a.cosine - exact).abs() <= a.error, "slot {}: {} vs {exact} (bound {})", a.slot, a.cosine, a.error);
                }
                // The plain scan's arithmetic (f32 dot, f64 norms), so
                // near-ties order the same way.
                let plain = |v: &[f32]| f64::from(dot(&query, v)) / (f64::from(dot(&query, &query)).sqrt() * f64::from(dot(v, v)).sqrt());
                let mut want: Vec<(String, f64)> =
                    all.iter().filter(|(_, doc, model, _)| model == "m" && live(doc)).map(|(id, _, _, v)| (id.clone(), plain(v))).collect();
                want.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                for limit in [1, 10, 100, 700] {
                    let got: Vec<String> = index.nearest("m", &query, &[], limit).into_iter().map(|g| g.chunk_id).collect();
                    let want: Vec<String> = want.iter().take(limit).map(|w| w.0.clone()).collect();
                    assert_eq!(got, want, "query {q}, limit {limit}, round {round}");
                }
            }
        }
    }

    fn chunk(id: &str, doc: Uuid, words: &[&str]) -> IndexedChunk {
        let mut tf: std::collections::BTreeMap<String, u32> = Default::default();
        for w in words {
            *tf.entry(w.to_string()).or_default() += 1;
        }
        IndexedChunk {
            chunk_id: id.into(),
            document_id: doc,
            term_count: words.len() as u32,
            terms: tf.into_iter().collect(),
            vector: None,
        }
    }

    fn q(term: &str, word: i32, weight: f64) -> QueryTerm {
        QueryTerm { term: term.into(), word, weight }
    }

    /// BM25 as the SQL scorer defines it, written the plain way: every
    /// eligible chunk, every query term.
    fn reference(chunks: &[IndexedChunk], terms: &[QueryTerm], scope: &[Uuid], p: Bm25, limit: usize) -> Vec<(String, f64)> {
        let eligible: Vec<&IndexedChunk> = chunks.iter().filter(|c| scope.is_empty() || scope.contains(&c.document_id)).collect();
        if eligible.is_empty() {
            return Vec::new();
        }
        let n = eligible.len() as f64;
        let avgdl = (eligible.iter().map(|c| c.term_count as f64).sum::<f64>() / n).max(1.0);
        let tf_of = |c: &IndexedChunk, t: &str| c.terms.iter().find(|(x, _)| x == t).map(|(_, f)| *f);
        let mut out = Vec::new();
        for c in &eligible {
            let mut per_word: std::collections::BTreeMap<i32, f64> = Default::default();
            for t in terms {
                let Some(tf) = tf_of(c, &t.term) else { continue };
                let df = eligible.iter().filter(|o| tf_of(o, &t.term).is_some()).count() as f64;
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                let tf = tf as f64;
                let s = t.weight * idf * tf * (p.k1 + 1.0) / (tf + p.k1 * (1.0 - p.b + p.b * c.term_count as f64 / avgdl));
                let e = per_word.entry(t.word).or_insert(s);
                *e = e.max(s);
            }
            if !per_word.is_empty() {
                out.push((c.chunk_id.clone(), per_word.values().sum::<f64>()));
            }
        }
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out.truncate(limit);
        out
    }

    fn assert_same(got: Vec<Scored>, want: Vec<(String, f64)>) {
        assert_eq!(got.len(), want.len(), "{got:?}\n{want:?}");
        for (g, (id, score)) in got.iter().zip(&want) {
            assert!((g.score - score).abs() <= 1e-9 * score.abs().max(1.0), "{} {} vs {id} {score}", g.chunk_id, g.score);
            // Equal scores may come in either order only if they tie.
            if g.chunk_id != *id {
                let theirs = want.iter().find(|(i, _)| *i == g.chunk_id).map(|(_, s)| *s);
                assert!(theirs.is_some_and(|s| (s - g.score).abs() <= 1e-9), "{} ranked where {id} should be", g.chunk_id);
            }
        }
    }

    #[test]
    fn ranks_like_the_plain_definition() {
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let chunks = vec![
            chunk("a0", a, &["tăng", "~tang", "trưởng", "~truong", "kinh", "tế"]),
            chunk("a1", a, &["kinh", "tế", "kinh", "doanh"]),
            chunk("b0", b, &["tang", "truong", "nhanh"]),
            chunk("b1", b, &["không", "~khong", "liên", "quan"]),
        ];
        let mut index = WorkspaceIndex::new();
        index.replace_document(a, chunks[..2].to_vec());
        index.replace_document(b, chunks[2..].to_vec());
        let terms = vec![q("tăng", 0, 1.0), q("~tang", 0, 0.6), q("kinh", 1, 1.0), q("tế", 2, 1.0)];
        let p = Bm25::default();
        assert_same(index.search(&terms, &[], p, 10), reference(&chunks, &terms, &[], p, 10));
        // Scoped: statistics of document b only.
        assert_same(index.search(&terms, &[b], p, 10), reference(&chunks[2..], &terms, &[b], p, 10));
        assert!(index.search(&[q("absent", 0, 1.0)], &[], p, 10).is_empty());
        assert!(index.search(&terms, &[Uuid::from_u128(9)], p, 10).is_empty());
    }

    #[test]
    fn replacing_and_removing_documents_keeps_statistics_exact() {
        // A deterministic pseudo-random corpus: documents come, are replaced
        // and go; after every change the index ranks like the definition
        // over what is left.
        let mut seed = 0x9e3779b97f4a7c15u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let vocab: Vec<String> = (0..40).map(|i| format!("w{i}")).collect();
        let mut live: std::collections::BTreeMap<u128, Vec<IndexedChunk>> = Default::default();
        let mut index = WorkspaceIndex::new();
        for round in 0..400 {
            let doc = next(30) as u128;
            let id = Uuid::from_u128(doc);
            if next(5) == 0 {
                index.remove_document(id);
                live.remove(&doc);
            } else {
                let chunks: Vec<IndexedChunk> = (0..1 + next(4))
                    .map(|c| {
                        let words: Vec<&str> = (0..1 + next(12)).map(|_| vocab[(next(40) * next(40) / 40) as usize].as_str()).collect();
                        chunk(&format!("{doc}-{round}-{c}"), id, &words)
                    })
                    .collect();
                index.replace_document(id, chunks.clone());
                live.insert(doc, chunks);
            }
            if round % 7 == 0 {
                index.compact();
            }
            let all: Vec<IndexedChunk> = live.values().flatten().cloned().collect();
            let terms: Vec<QueryTerm> =
                (0..1 + next(4)).map(|w| q(&vocab[next(40) as usize], w as i32 % 3, 0.5 + next(2) as f64)).collect();
            let p = Bm25 { k1: 1.2, b: 0.75 };
            let limit = [1, 2, 5, 20][round % 4];
            assert_same(index.search(&terms, &[], p, limit), reference(&all, &terms, &[], p, limit));
            let scope = [Uuid::from_u128(next(30) as u128), Uuid::from_u128(next(30) as u128)];
            assert_same(index.search(&terms, &scope, p, 5), reference(&all, &terms, &scope, p, 5));
            assert_eq!(index.chunks() as usize, all.len());
        }
        let before = index.postings();
        index.compact();
        assert!(index.postings() <= before);
        assert_eq!(index.postings(), live.values().flatten().map(|c| c.terms.len()).sum::<usize>());
    }

    #[test]
    fn ties_are_broken_by_chunk_id_even_when_lists_are_skipped() {
        // Many identical chunks (equal scores) among others: the top is the
        // best scores, then the lowest chunk ids, whatever gets pruned.
        let d = Uuid::from_u128(4);
        let mut chunks: Vec<IndexedChunk> = (0..60).map(|i| chunk(&format!("t{:02}", 59 - i), d, &["rare", "common", "filler"])).collect();
        chunks.extend((0..200).map(|i| chunk(&format!("c{i:03}"), d, &["common", "filler", "filler", "more"])));
        let mut index = WorkspaceIndex::new();
        index.replace_document(d, chunks.clone());
        let terms = [q("common", 0, 1.0), q("rare", 1, 1.0), q("filler", 2, 0.6)];
        for limit in [1, 3, 59, 60, 61, 100, 300] {
            let got: Vec<String> = index.search(&terms, &[], Bm25::default(), limit).into_iter().map(|s| s.chunk_id).collect();
            let want: Vec<String> = reference(&chunks, &terms, &[], Bm25::default(), limit).into_iter().map(|(id, _)| id).collect();
            assert_eq!(got, want, "limit {limit}");
        }
    }

    #[test]
    fn nearest_neighbours_are_exact_within_the_scope_and_the_model() {
        let mut seed = 0x853c49e6748fea9bu64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 2001) as f32 / 1000.0 - 1.0
        };
        let mut index = WorkspaceIndex::new();
        let mut all: Vec<(String, Uuid, String, Vec<f32>)> = Vec::new();
        for d in 0..20u128 {
            let doc = Uuid::from_u128(d);
            let chunks: Vec<IndexedChunk> = (0..5)
                .map(|c| {
                    let model = if c == 4 { "other" } else { "m" }.to_string();
                    let mut values: Vec<f32> = (0..19).map(|_| next()).collect();
                    if d == 3 && c < 2 {
                        // Two chunks with one vector: a tie, broken by chunk id.
                        values = vec![0.5; 19];
                    }
                    let id = format!("c{d:02}-{c}");
                    all.push((id.clone(), doc, model.clone(), values.clone()));
                    IndexedChunk { vector: Some(ChunkVector { model, values }), ..chunk(&id, doc, &["w"]) }
                })
                .collect();
            index.replace_document(doc, chunks);
        }
        index.remove_document(Uuid::from_u128(7));
        index.compact();
        let cosine = |a: &[f32], b: &[f32]| {
            let d: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
            let n = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
            d / (n(a) * n(b))
        };
        for (query, scope) in
            [(vec![0.5f32; 19], vec![]), ((0..19).map(|_| next()).collect(), vec![Uuid::from_u128(3), Uuid::from_u128(7)])]
        {
            let mut want: Vec<(String, f64)> = all
                .iter()
                .filter(|(_, doc, model, _)| model == "m" && *doc != Uuid::from_u128(7) && (scope.is_empty() || scope.contains(doc)))
                .map(|(id, _, _, v)| (id.clone(), cosine(&query, v)))
                .collect();
            want.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            want.truncate(6);
            let got = index.nearest("m", &query, &scope, 6);
            assert_eq!(got.iter().map(|g| g.chunk_id.clone()).collect::<Vec<_>>(), want.iter().map(|w| w.0.clone()).collect::<Vec<_>>());
            for (g, w) in got.iter().zip(&want) {
                assert!((g.score - w.1).abs() < 1e-5, "{} {} vs {}", g.chunk_id, g.score, w.1);
            }
        }
        assert!(index.nearest("absent", &[1.0; 19], &[], 5).is_empty());
        assert!(index.nearest("m", &[1.0; 7], &[], 5).is_empty(), "another dimension matches nothing");
        index.drop_vectors();
        assert!(index.nearest("m", &[0.5; 19], &[], 5).is_empty());
        assert_eq!(index.weight_in_postings(), index.postings());
    }

    #[test]
    fn a_limit_keeps_the_best() {
        let d = Uuid::from_u128(3);
        let chunks: Vec<IndexedChunk> =
            (0..50).map(|i| chunk(&format!("c{i:02}"), d, &vec!["x"; 1 + i % 7].into_iter().chain(["y"]).collect::<Vec<_>>())).collect();
        let mut index = WorkspaceIndex::new();
        index.replace_document(d, chunks.clone());
        let terms = [q("x", 0, 1.0)];
        assert_same(index.search(&terms, &[], Bm25::default(), 3), reference(&chunks, &terms, &[], Bm25::default(), 3));
        assert!(index.search(&terms, &[], Bm25::default(), 0).is_empty());
    }
}

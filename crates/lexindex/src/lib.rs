//! The lexical side of retrieval for one workspace, held in memory: an
//! inverted index (term -> chunks with their term frequency) and BM25 with
//! exactly the formula and statistics of the SQL scorer
//! (`rag_store::search::lexical`), so moving the scoring here changes no
//! ranking. No I/O: the caller loads chunks from the read models and tells
//! the index which documents changed.
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
use std::collections::{HashMap, HashSet};

use uuid::Uuid;

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
    term_count: u32,
    term_ids: Vec<u32>,
    alive: bool,
}

/// The inverted index of one workspace's searchable chunks.
#[derive(Debug, Default)]
pub struct WorkspaceIndex {
    term_ids: HashMap<String, u32>,
    postings: Vec<Vec<Posting>>,
    /// Live postings per term: the document frequency of a whole-workspace
    /// query without a scan.
    live_df: Vec<u32>,
    slots: Vec<Slot>,
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

    /// Postings held, dead ones included (what the memory is spent on).
    pub fn postings(&self) -> usize {
        self.total_postings
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
                }
                self.postings[id as usize].push(Posting { slot, tf });
                self.live_df[id as usize] += 1;
                term_ids.push(id);
            }
            self.total_postings += term_ids.len();
            self.live_chunks += 1;
            self.live_length += u64::from(chunk.term_count);
            self.slots.push(Slot {
                chunk_id: chunk.chunk_id,
                document_id: chunk.document_id,
                term_count: chunk.term_count,
                term_ids,
                alive: true,
            });
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
            let s = &mut self.slots[slot as usize];
            if !s.alive {
                continue;
            }
            s.alive = false;
            for &t in &s.term_ids {
                self.live_df[t as usize] -= 1;
            }
            self.dead_postings += s.term_ids.len();
            self.live_chunks -= 1;
            self.live_length -= u64::from(s.term_count);
        }
    }

    /// Rewrites the lists without dead chunks (slots are renumbered).
    pub fn compact(&mut self) {
        let mut renumbered: Vec<Option<u32>> = Vec::with_capacity(self.slots.len());
        let mut slots = Vec::with_capacity(self.live_chunks as usize);
        for slot in self.slots.drain(..) {
            if slot.alive {
                renumbered.push(Some(slots.len() as u32));
                slots.push(slot);
            } else {
                renumbered.push(None);
            }
        }
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
    /// the SQL scorer.
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
        let eligible = |slot: u32| -> bool {
            let s = &self.slots[slot as usize];
            s.alive && in_scope.as_ref().is_none_or(|m| m[slot as usize])
        };
        let (n, length) = match &in_scope {
            None => (self.live_chunks, self.live_length),
            Some(mask) => mask
                .iter()
                .enumerate()
                .filter(|(i, inside)| **inside && self.slots[*i].alive)
                .fold((0u64, 0u64), |(n, len), (i, _)| (n + 1, len + u64::from(self.slots[i].term_count))),
        };
        if n == 0 {
            return Vec::new();
        }
        let n = n as f64;
        let avgdl = (length as f64 / n).max(1.0);
        let (k1, b) = (params.k1, params.b);

        // Words in order of first appearance; each word's best per chunk is
        // added to the chunk's total once the word is done.
        let mut words: Vec<i32> = Vec::new();
        for t in terms {
            if !words.contains(&t.word) {
                words.push(t.word);
            }
        }
        let mut total = vec![0f64; self.slots.len()];
        let mut best = vec![0f64; self.slots.len()];
        let mut matched = vec![false; self.slots.len()];
        let mut ranked = vec![false; self.slots.len()];
        let mut touched_total: Vec<u32> = Vec::new();
        let mut touched_word: Vec<u32> = Vec::new();
        for word in words {
            for t in terms.iter().filter(|t| t.word == word) {
                let Some(&id) = self.term_ids.get(&t.term) else { continue };
                let list = &self.postings[id as usize];
                let df = match in_scope {
                    None => f64::from(self.live_df[id as usize]),
                    Some(_) => list.iter().filter(|p| eligible(p.slot)).count() as f64,
                };
                if df == 0.0 {
                    continue;
                }
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                let scale = t.weight * idf;
                for p in list {
                    if !eligible(p.slot) {
                        continue;
                    }
                    let slot = p.slot as usize;
                    let tf = f64::from(p.tf);
                    let dl = f64::from(self.slots[slot].term_count);
                    // The SQL scorer's order of operations, for the same
                    // floating-point result.
                    let s = scale * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * dl / avgdl));
                    if !matched[slot] {
                        matched[slot] = true;
                        best[slot] = s;
                        touched_word.push(p.slot);
                    } else if s > best[slot] {
                        best[slot] = s;
                    }
                }
            }
            for slot in touched_word.drain(..) {
                let i = slot as usize;
                if !ranked[i] {
                    ranked[i] = true;
                    touched_total.push(slot);
                }
                total[i] += best[i];
                matched[i] = false;
            }
        }
        let by_rank = |a: &u32, b: &u32| -> Ordering {
            total[*b as usize]
                .total_cmp(&total[*a as usize])
                .then_with(|| self.slots[*a as usize].chunk_id.cmp(&self.slots[*b as usize].chunk_id))
        };
        if touched_total.len() > limit {
            touched_total.select_nth_unstable_by(limit - 1, by_rank);
            touched_total.truncate(limit);
        }
        touched_total.sort_unstable_by(by_rank);
        touched_total
            .into_iter()
            .map(|slot| {
                let s = &self.slots[slot as usize];
                Scored { chunk_id: s.chunk_id.clone(), document_id: s.document_id, score: total[slot as usize] }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: &str, doc: Uuid, words: &[&str]) -> IndexedChunk {
        let mut tf: std::collections::BTreeMap<String, u32> = Default::default();
        for w in words {
            *tf.entry(w.to_string()).or_default() += 1;
        }
        IndexedChunk { chunk_id: id.into(), document_id: doc, term_count: words.len() as u32, terms: tf.into_iter().collect() }
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
            assert_same(index.search(&terms, &[], p, 5), reference(&all, &terms, &[], p, 5));
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

//! BM25 over the inverted index: every posting of a scoped query, and
//! MaxScore (stop reading a list once it cannot change the top) for a
//! whole-workspace one.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashSet};

use uuid::Uuid;

use crate::{Bm25, Posting, QueryTerm, Scored, WorkspaceIndex};

impl WorkspaceIndex {
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

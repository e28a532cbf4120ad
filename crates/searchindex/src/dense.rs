//! Exact nearest neighbours over the held vectors, with a first pass over
//! their 8-bit copies for a large workspace.

use std::collections::HashSet;

use uuid::Uuid;

use crate::{Scored, WorkspaceIndex};

/// From this many live chunks, a whole-workspace nearest-neighbour search
/// first scans the 8-bit copies and scores exactly only the vectors that
/// can still be among the best; below it the plain exact scan is as fast.
pub(crate) const QUANTIZED_SCAN_FROM: u64 = 4096;

impl WorkspaceIndex {
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
}

/// Dot product in eight lanes, which the compiler turns into vector
/// instructions.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
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

//! IR metrics as BEIR reports them (pytrec_eval): linear gains for nDCG,
//! binary relevance (grade > 0) for recall and MRR.

use std::collections::HashMap;

/// nDCG@k of `ranked` ids against graded judgements.
pub fn ndcg_at(ranked: &[String], qrels: &HashMap<String, i32>, k: usize) -> f64 {
    let dcg: f64 =
        ranked.iter().take(k).enumerate().map(|(i, id)| qrels.get(id).copied().unwrap_or(0).max(0) as f64 / ((i + 2) as f64).log2()).sum();
    let mut ideal: Vec<i32> = qrels.values().copied().filter(|g| *g > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal.iter().take(k).enumerate().map(|(i, g)| *g as f64 / ((i + 2) as f64).log2()).sum();
    if idcg == 0.0 {
        0.0
    } else {
        dcg / idcg
    }
}

/// Share of the relevant ids found in the top k.
pub fn recall_at(ranked: &[String], qrels: &HashMap<String, i32>, k: usize) -> f64 {
    let relevant = qrels.values().filter(|g| **g > 0).count();
    if relevant == 0 {
        return 0.0;
    }
    let found = ranked.iter().take(k).filter(|id| qrels.get(*id).is_some_and(|g| *g > 0)).count();
    found as f64 / relevant as f64
}

/// Reciprocal rank of the first relevant id within the top k (0 if none).
pub fn mrr_at(ranked: &[String], qrels: &HashMap<String, i32>, k: usize) -> f64 {
    ranked.iter().take(k).position(|id| qrels.get(id).is_some_and(|g| *g > 0)).map(|i| 1.0 / (i + 1) as f64).unwrap_or(0.0)
}

/// Mean of the four metrics over queries, as `eval retrieval` prints them.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Summary {
    #[serde(rename = "ndcg@10")]
    pub ndcg_10: f64,
    #[serde(rename = "recall@10")]
    pub recall_10: f64,
    #[serde(rename = "recall@100")]
    pub recall_100: f64,
    #[serde(rename = "mrr@10")]
    pub mrr_10: f64,
    pub queries: usize,
}

impl Summary {
    /// Averages over `(ranking, judgements)` pairs.
    pub fn of<'a>(runs: impl IntoIterator<Item = (&'a [String], &'a HashMap<String, i32>)>) -> Summary {
        let mut s = Summary::default();
        for (ranked, qrels) in runs {
            s.ndcg_10 += ndcg_at(ranked, qrels, 10);
            s.recall_10 += recall_at(ranked, qrels, 10);
            s.recall_100 += recall_at(ranked, qrels, 100);
            s.mrr_10 += mrr_at(ranked, qrels, 10);
            s.queries += 1;
        }
        if s.queries > 0 {
            let n = s.queries as f64;
            s.ndcg_10 /= n;
            s.recall_10 /= n;
            s.recall_100 /= n;
            s.mrr_10 /= n;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, i32)]) -> HashMap<String, i32> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn r(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn perfect_and_hand_computed_values() {
        let qrels = q(&[("a", 3), ("b", 1)]);
        assert!((ndcg_at(&r(&["a", "b"]), &qrels, 10) - 1.0).abs() < 1e-12);
        // b first, then a: DCG = 1/log2(2) + 3/log2(3); IDCG = 3 + 1/log2(3).
        let want = (1.0 + 3.0 / 3f64.log2()) / (3.0 + 1.0 / 3f64.log2());
        assert!((ndcg_at(&r(&["b", "a"]), &qrels, 10) - want).abs() < 1e-12);
        assert_eq!(recall_at(&r(&["x", "a"]), &qrels, 10), 0.5);
        assert_eq!(recall_at(&r(&["x", "a"]), &qrels, 1), 0.0);
        assert_eq!(mrr_at(&r(&["x", "y", "b"]), &qrels, 10), 1.0 / 3.0);
        assert_eq!(mrr_at(&r(&["x"]), &qrels, 10), 0.0);
        let s = Summary::of([(r(&["a", "b"]).as_slice(), &qrels), (r(&[]).as_slice(), &qrels)]);
        assert_eq!(s.queries, 2);
        assert!((s.ndcg_10 - 0.5).abs() < 1e-12);
    }
}

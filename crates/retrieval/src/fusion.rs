//! Hybrid fusion of the lexical and dense candidates.

use std::collections::HashMap;

use serde::Serialize;

use crate::{EmbedderLanguages, Language};

/// One side's candidate as the fusion sees it: the chunk, its score on
/// that side (BM25 or cosine) and the chunk's language.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub id: String,
    pub score: f64,
    pub language: Language,
    /// Whether the dense side holds a vector for the chunk under the
    /// query's model at all (always, for a dense candidate). A lexical hit
    /// without one, a document not yet re-embedded while a workspace moves
    /// to another model, is one the dense side cannot rank, not one it
    /// ranked low.
    pub dense_can_rank: bool,
}

impl Candidate {
    /// A candidate the dense side can rank (every dense hit, and a lexical
    /// hit embedded under the query's model).
    pub fn new(id: impl Into<String>, score: f64, language: Language) -> Self {
        Candidate { id: id.into(), score, language, dense_can_rank: true }
    }
}

/// A fused result: ranks are 1-based positions in each input list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fused {
    pub id: String,
    pub score: f64,
    pub lexical_rank: Option<usize>,
    pub dense_rank: Option<usize>,
}

/// What the fusion knew about a query and made of it (in a search's and an
/// answer's metadata, so a ranking can be explained).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FusionDecision {
    /// Share of the dense candidates (the query's neighbourhood in the
    /// workspace) written in the query's language: what the lexical side
    /// can match at all.
    pub same_language_share: f64,
    /// Share of the dense candidates in a language the embedder reads:
    /// what the dense side can rank at all.
    pub readable_share: f64,
    /// Share of the query's words the best lexical hit holds.
    pub lexical_coverage: f64,
    /// Weight of the dense side by the languages (the lexical side has
    /// `1 - dense_share`, times `lexical_coverage`).
    pub dense_share: f64,
    /// How far the lexical side's best hit stands above its second (scores
    /// normalised as fused): 0 for a tie, 1 for a lone hit.
    pub lexical_gap: f64,
    /// The same for the dense side.
    pub dense_gap: f64,
}

/// Added to each side's gap before it weighs the side: a side whose top is
/// a tie still counts (its order below the top is worth something), and
/// two tied sides keep the split the languages and coverage gave them.
/// Anywhere from 0.05 to 0.7 meets the fusion target on every development
/// set; 0.2 is best on eval/en-dev and within 0.002 of the best on
/// Cranfield (docs/performance.md).
pub const GAP_FLOOR: f64 = 0.2;

/// The gap between the best and the second score of a side, after `norm`.
fn top_gap(scores: impl Iterator<Item = f64>, norm: impl Fn(f64) -> f64) -> f64 {
    let (mut first, mut second) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for s in scores {
        if s > first {
            second = first;
            first = s;
        } else if s > second {
            second = s;
        }
    }
    match (first.is_finite(), second.is_finite()) {
        (true, true) => (norm(first) - norm(second)).clamp(0.0, 1.0),
        (true, false) => 1.0,
        _ => 0.0,
    }
}

/// Share of `query`'s distinct words (diacritics folded) found in `text`:
/// how much of the question a lexical hit actually matched.
pub fn query_coverage(query: &str, text: &str) -> f64 {
    let folded = |t: &str| -> std::collections::HashSet<String> { rag_lexical::words(t).iter().map(|w| rag_lexical::fold(w)).collect() };
    let wanted = folded(query);
    if wanted.is_empty() {
        return 0.0;
    }
    let have = folded(text);
    wanted.iter().filter(|w| have.contains(*w)).count() as f64 / wanted.len() as f64
}

/// Hybrid fusion: a convex combination of each side's normalised scores,
/// weighted by what is known at query time. Reciprocal rank fusion (what
/// this replaced) lets any lexical hit that the dense side also ranks near
/// the top beat the dense side's best, however weakly it matched: an
/// English question about Vietnamese passages got the English passages
/// sharing one word with it first (e5 dense 0.969, RRF hybrid 0.730 on
/// eval/vi-dev; docs/performance.md has the comparison).
///
/// - **Languages.** The lexical side can only match text in the query's
///   language, the dense side only text its embedder reads; the dense
///   candidates sample the workspace around the query. With `s` the share
///   of them in the query's language and `r` the share the embedder
///   reads, the dense side weighs `a·r / (a·r + (1 - a)·s)`, where `a =
///   dense_weight / (1 + dense_weight)` (one half by default): a query in
///   the workspace's own language splits evenly, a cross-lingual one is
///   ranked by a multilingual dense side.
/// - **Matched terms.** The lexical side's weight is scaled by the share of
///   the query's words its best hit holds (`lexical_top_coverage`): a best
///   hit matching one word in eight is weak evidence whatever its rank.
/// - **Score gaps.** Each side's scores are normalised, not ranked: BM25 by
///   the best hit's score, cosines min-max over all the dense candidates.
///   A clear winner on one side keeps its lead; near-ties stay near. And a
///   side is weighed by how clearly its best hit stands above its second
///   (`GAP_FLOOR` plus that gap): a side that cannot tell its top two
///   apart is unsure of its whole top. On eval/en-dev the lexical side's
///   best two for "paid time off for new mothers and fathers" were the
///   annual-leave and holiday passages, 0.2% apart, while e5 put the
///   parental-leave passage first by 13% of its range; without the gap
///   the lexical tie won (hybrid 0.953 against dense 0.969, now 0.974).
///
/// - **Chunks the dense side cannot rank.** A lexical hit with no vector
///   under the query's model (a workspace half moved to another embedder)
///   joins the languages' sample as text the dense side cannot see, and
///   its score is the lexical one over both sides' weights: the side that
///   cannot judge it is taken to agree with the one that can, the usual
///   treatment of a missing value in a weighted sum. Without that, the
///   dense candidates (only the re-embedded documents, often in another
///   language) set the dense side's weight to all of it, and an exact
///   lexical match scored 0 against any re-embedded chunk.
///
/// Dense hits on chunks in a language the embedder does not read are
/// dropped, and none count when the query's language is not read: then the
/// fused list is exactly the lexical one. Ties keep lexical-first order.
pub fn fuse(
    lexical: &[Candidate],
    lexical_top_coverage: f64,
    dense: &[Candidate],
    query_language: Language,
    embedder: &EmbedderLanguages,
    dense_weight: f64,
) -> (Vec<Fused>, FusionDecision) {
    let dense_on = embedder.understands(query_language) && dense_weight > 0.0 && !dense.is_empty();
    // The languages' sample: the dense candidates, and the lexical hits
    // the dense side cannot rank (part of the workspace it does not see).
    let unranked: Vec<&Candidate> = if dense_on { lexical.iter().filter(|c| !c.dense_can_rank).collect() } else { Vec::new() };
    let sample = dense.len() + unranked.len();
    let share = |keep: &dyn Fn(&Candidate) -> bool, unranked_count: bool| -> f64 {
        if sample == 0 {
            1.0
        } else {
            let extra = if unranked_count { unranked.iter().filter(|c| keep(c)).count() } else { 0 };
            (dense.iter().filter(|c| keep(c)).count() + extra) as f64 / sample as f64
        }
    };
    let same_language_share = share(&|c| c.language == query_language, true);
    let readable_share = share(&|c| embedder.understands(c.language), false);
    // Never zero: with the dense side off, the lexical order must survive.
    let lexical_coverage = lexical_top_coverage.clamp(0.0, 1.0).max(0.01);
    let dense_share = if !dense_on {
        0.0
    } else if lexical.is_empty() {
        1.0
    } else {
        // Each side weighs what it can see: the lexical side the text in
        // the query's language, the dense side the text its embedder reads.
        let base = dense_weight / (1.0 + dense_weight);
        let (dense_sees, lexical_sees) = (base * readable_share, (1.0 - base) * same_language_share);
        if dense_sees + lexical_sees > 0.0 {
            dense_sees / (dense_sees + lexical_sees)
        } else {
            base
        }
    };
    let lexical_top = lexical.iter().map(|c| c.score).fold(f64::MIN, f64::max);
    let lexical_norm = |score: f64| if lexical_top > 0.0 { score / lexical_top } else { 1.0 };
    // Scaled over every candidate, readable or not: the neighbourhood's
    // spread is the measure of a gap, and a handful of readable chunks must
    // not be stretched over the whole range.
    let dense_top = dense.iter().map(|c| c.score).fold(f64::MIN, f64::max);
    let dense_bottom = dense.iter().map(|c| c.score).fold(f64::MAX, f64::min);
    let dense_norm = |score: f64| if dense_top > dense_bottom { (score - dense_bottom) / (dense_top - dense_bottom) } else { 1.0 };
    let usable = || dense.iter().filter(|c| embedder.understands(c.language));
    let lexical_gap = top_gap(lexical.iter().map(|c| c.score), lexical_norm);
    let dense_gap = if dense_on { top_gap(usable().map(|c| c.score), dense_norm) } else { 0.0 };
    let lexical_side = (1.0 - dense_share) * lexical_coverage * (GAP_FLOOR + lexical_gap);
    let dense_side = dense_share * (GAP_FLOOR + dense_gap);
    let decision = FusionDecision { same_language_share, readable_share, lexical_coverage, dense_share, lexical_gap, dense_gap };
    let mut by_id: HashMap<&str, Fused> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    for (i, c) in lexical.iter().enumerate() {
        if by_id.contains_key(c.id.as_str()) {
            continue;
        }
        order.push(&c.id);
        let weight = if dense_on && !c.dense_can_rank { lexical_side + dense_side } else { lexical_side };
        by_id.insert(&c.id, Fused { id: c.id.clone(), score: weight * lexical_norm(c.score), lexical_rank: Some(i + 1), dense_rank: None });
    }
    if dense_on {
        for (i, c) in usable().enumerate() {
            let add = dense_side * dense_norm(c.score);
            match by_id.get_mut(c.id.as_str()) {
                Some(f) if f.dense_rank.is_none() => {
                    f.score += add;
                    f.dense_rank = Some(i + 1);
                }
                Some(_) => {}
                None => {
                    order.push(&c.id);
                    by_id.insert(&c.id, Fused { id: c.id.clone(), score: add, lexical_rank: None, dense_rank: Some(i + 1) });
                }
            }
        }
    }
    let mut out: Vec<Fused> = order.into_iter().filter_map(|id| by_id.remove(id)).collect();
    // Stable: equal scores keep lexical-first order.
    out.sort_by(|a, b| b.score.partial_cmp(&a.score).unwrap_or(std::cmp::Ordering::Equal));
    (out, decision)
}

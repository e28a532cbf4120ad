//! The answerer's evidence ranker: the workspace's embedder scores each
//! evidence sentence against the question, so a model is shown the few
//! sentences that can answer it (`ANSWER_EVIDENCE_SENTENCES`).

use std::future::Future;
use std::pin::Pin;

use rag_answer::EvidenceRanker;
use rag_embed::{Embedder, InputKind};
use tracing::warn;

/// Cosine of the query's and each sentence's vectors, with the embedder's
/// own query/passage convention (e5's `query: ` / `passage: `).
pub struct EmbedderRanker<'a> {
    pub embedder: &'a Embedder,
    /// What the question was retrieved with: a follow-up ("Còn năm 2022
    /// thì sao?") condensed into a standalone question, which says what
    /// the sentences must be about where the follow-up alone does not.
    pub query: &'a str,
}

impl EvidenceRanker for EmbedderRanker<'_> {
    fn rank<'a>(&'a self, _question: &'a str, texts: &'a [String]) -> Pin<Box<dyn Future<Output = Option<Vec<f64>>> + Send + 'a>> {
        Box::pin(async move {
            let query = match self.embedder.embed(&[self.query.to_string()], InputKind::Query).await {
                Ok(mut v) if v.len() == 1 => v.remove(0),
                Ok(_) => return None, // no embedder: nothing to rank by
                Err(e) => {
                    warn!(error = %e, "evidence sentences not ranked: the question was not embedded");
                    return None;
                }
            };
            let sentences = match self.embedder.embed(texts, InputKind::Passage).await {
                Ok(v) if v.len() == texts.len() => v,
                Ok(_) => return None,
                Err(e) => {
                    warn!(error = %e, "evidence sentences not ranked: they were not embedded");
                    return None;
                }
            };
            Some(sentences.iter().map(|s| cosine(&query, s)).collect())
        })
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        dot += f64::from(*x) * f64::from(*y);
        na += f64::from(*x) * f64::from(*x);
        nb += f64::from(*y) * f64::from(*y);
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

//! The answerer's evidence ranker: the workspace's embedder scores each
//! evidence sentence against the question, so a model is shown the few
//! sentences that can answer it (`ANSWER_EVIDENCE_SENTENCES`); the same
//! embeddings, when they are the ones the instruction classifier was
//! fitted on (multilingual-e5-small with its `passage: ` prefix), say
//! which sentences read as written to the model (issue 61).

use std::future::Future;
use std::pin::Pin;

use rag_answer::injection::classifier::InstructionClassifier;
use rag_answer::{EvidenceRanker, RankedEvidence};
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
    fn rank<'a>(&'a self, _question: &'a str, texts: &'a [String]) -> Pin<Box<dyn Future<Output = Option<RankedEvidence>> + Send + 'a>> {
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
            let closeness = sentences.iter().map(|s| cosine(&query, s)).collect();
            let instructions = match reads(self.embedder) {
                Some(classifier) => sentences.iter().map(|s| classifier.flags(s)).collect(),
                None => Vec::new(),
            };
            Some(RankedEvidence { closeness, instructions })
        })
    }
}

/// The shipped classifier, when `embedder` makes the embeddings it reads:
/// its model, as passages with e5's prefix. Another model's vectors (of
/// the same length, all-MiniLM-L6-v2's) would be read as noise.
fn reads(embedder: &Embedder) -> Option<&'static InstructionClassifier> {
    let classifier = rag_answer::injection::shipped_classifier()?;
    let (identity, _) = embedder.identity()?;
    let prefixed = embedder.convention() == rag_embed::InputConvention::Prefix && classifier.prefix() == "passage: ";
    (prefixed && identity == format!("{}+prefix", classifier.model())).then_some(classifier)
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

#[cfg(test)]
mod tests {
    use super::*;
    use rag_embed::{InputConvention, OpenAiConfig};

    fn embedder(model: &str, convention: InputConvention) -> Embedder {
        let cfg = OpenAiConfig {
            base_url: "http://127.0.0.1:9/v1".into(),
            model: model.into(),
            api_key: secrecy::SecretString::from("unused"),
            dimension: 384,
            batch_size: 8,
            timeout: std::time::Duration::from_secs(1),
            max_retries: 0,
            retry_backoff: std::time::Duration::from_millis(1),
        };
        Embedder::openai(cfg, convention).unwrap()
    }

    #[test]
    fn the_classifier_reads_only_the_embeddings_it_was_fitted_on() {
        assert!(reads(&embedder("multilingual-e5-small", InputConvention::Prefix)).is_some());
        // Another model of the same length, or e5 without its prefixes.
        assert!(reads(&embedder("all-MiniLM-L6-v2", InputConvention::None)).is_none());
        assert!(reads(&embedder("all-MiniLM-L6-v2", InputConvention::Prefix)).is_none());
        assert!(reads(&embedder("multilingual-e5-small", InputConvention::None)).is_none());
        assert!(reads(&Embedder::none()).is_none());
    }
}

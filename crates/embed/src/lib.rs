//! Embeddings for the search index.
//!
//! The model name and dimension are the index identity: vectors of two
//! models are never mixed (the indexer stores them per model and the search
//! side only compares vectors of the same model).

mod openai;

use std::sync::Arc;
use std::time::Duration;

pub use openai::{OpenAiConfig, OpenAiEmbedder};
pub use rag_bert::{LoadError, SentenceEncoder};

#[derive(Debug, Clone, thiserror::Error)]
pub enum EmbedError {
    /// May succeed later (timeouts, 429, 5xx, connection trouble).
    #[error("embedding provider unavailable: {0}")]
    Transient(String),
    /// Will not succeed as configured (401, 400, wrong dimension, ...).
    #[error("embedding failed: {0}")]
    Permanent(String),
}

impl EmbedError {
    pub fn is_transient(&self) -> bool {
        matches!(self, EmbedError::Transient(_))
    }
}

/// The configured embedder.
#[derive(Debug, Clone)]
pub enum Embedder {
    /// Lexical search only.
    None,
    /// In-process sentence encoder (CPU, blocking work off the runtime).
    Local(Arc<SentenceEncoder>),
    OpenAi(OpenAiEmbedder),
}

impl Embedder {
    /// `(model, dimension)`, or None when lexical only.
    pub fn identity(&self) -> Option<(&str, usize)> {
        match self {
            Embedder::None => None,
            Embedder::Local(e) => Some((e.name(), e.dimension())),
            Embedder::OpenAi(e) => Some((e.model(), e.dimension())),
        }
    }

    /// Loads an in-process model directory (sentence-transformers layout).
    pub fn local(dir: &std::path::Path, threads: usize) -> Result<Self, LoadError> {
        Ok(Embedder::Local(Arc::new(SentenceEncoder::load(dir, threads)?)))
    }

    /// One L2-normalised vector per input, in order.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        match self {
            Embedder::None => Ok(Vec::new()),
            Embedder::Local(e) => {
                let (encoder, texts) = (e.clone(), texts.to_vec());
                tokio::task::spawn_blocking(move || {
                    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                    encoder.encode(&refs)
                })
                .await
                .map_err(|e| EmbedError::Transient(format!("encoder task: {e}")))?
                // A text the tokenizer refuses will be refused again.
                .map_err(|e| EmbedError::Permanent(e.to_string()))
            }
            Embedder::OpenAi(e) => e.embed(texts).await,
        }
    }
}

/// Scales a vector to unit length (cosine similarity becomes a dot product).
pub fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Exponential backoff: `base * 2^attempt`, capped.
pub(crate) fn backoff(base: Duration, attempt: u32, cap: Duration) -> Duration {
    base.saturating_mul(2u32.saturating_pow(attempt.min(16))).min(cap)
}

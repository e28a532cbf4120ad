//! Embeddings for the search index.
//!
//! The model name and dimension are the index identity: vectors of two
//! models are never mixed (the indexer stores them per model and the search
//! side only compares vectors of the same model).

mod openai;

use std::time::Duration;

pub use openai::{OpenAiConfig, OpenAiEmbedder};

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
    OpenAi(OpenAiEmbedder),
}

impl Embedder {
    /// `(model, dimension)`, or None when lexical only.
    pub fn identity(&self) -> Option<(&str, usize)> {
        match self {
            Embedder::None => None,
            Embedder::OpenAi(e) => Some((e.model(), e.dimension())),
        }
    }

    /// One L2-normalised vector per input, in order.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        match self {
            Embedder::None => Ok(Vec::new()),
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

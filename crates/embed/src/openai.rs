//! Any OpenAI-compatible `/v1/embeddings` endpoint.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use tracing::warn;

use crate::{backoff, l2_normalize, EmbedError, InputKind};

#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Base URL including the API version, e.g. `https://api.openai.com/v1`;
    /// requests go to `{base_url}/embeddings`.
    pub base_url: String,
    pub model: String,
    pub api_key: SecretString,
    /// Expected vector length; a response of another length is refused.
    pub dimension: usize,
    /// Inputs per request.
    pub batch_size: usize,
    pub timeout: Duration,
    /// Attempts after the first on 429, 5xx, timeouts and malformed bodies.
    pub max_retries: u32,
    pub retry_backoff: Duration,
}

#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    cfg: OpenAiConfig,
    http: reqwest::Client,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    index: usize,
    embedding: Vec<f32>,
}

impl OpenAiEmbedder {
    pub fn new(cfg: OpenAiConfig) -> Result<Self, EmbedError> {
        let http =
            reqwest::Client::builder().timeout(cfg.timeout).build().map_err(|e| EmbedError::Permanent(format!("HTTP client: {e}")))?;
        Ok(OpenAiEmbedder { cfg, http })
    }

    pub fn model(&self) -> &str {
        &self.cfg.model
    }

    pub fn dimension(&self) -> usize {
        self.cfg.dimension
    }

    /// `input_type`: sent as the request's `input_type` field when given.
    pub async fn embed(&self, texts: &[String], input_type: Option<InputKind>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.cfg.batch_size.max(1)) {
            out.extend(self.embed_batch(batch, input_type).await?);
        }
        Ok(out)
    }

    async fn embed_batch(&self, batch: &[String], input_type: Option<InputKind>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut attempt = 0;
        loop {
            match self.request(batch, input_type).await {
                Ok(v) => return Ok(v),
                Err((e, retry_after)) if e.is_transient() && attempt < self.cfg.max_retries => {
                    let wait = retry_after.unwrap_or_else(|| backoff(self.cfg.retry_backoff, attempt, Duration::from_secs(30)));
                    warn!(attempt = attempt + 1, ?wait, error = %e, "embedding request failed, retrying");
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                Err((e, _)) => return Err(e),
            }
        }
    }

    async fn request(&self, batch: &[String], input_type: Option<InputKind>) -> Result<Vec<Vec<f32>>, (EmbedError, Option<Duration>)> {
        let url = format!("{}/embeddings", self.cfg.base_url.trim_end_matches('/'));
        let mut body = serde_json::json!({"model": self.cfg.model, "input": batch, "encoding_format": "float"});
        if let Some(kind) = input_type {
            body["input_type"] = kind.as_str().into();
        }
        let resp = self
            .http
            .post(&url)
            .bearer_auth(self.cfg.api_key.expose_secret())
            .json(&body)
            .send()
            .await
            .map_err(|e| (EmbedError::Transient(format!("{url}: {e}")), None))?;
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .map(|s| Duration::from_secs(s.min(60)));
        let text = resp.text().await.map_err(|e| (EmbedError::Transient(format!("reading the response: {e}")), None))?;
        if status.as_u16() == 429 || status.is_server_error() {
            return Err((EmbedError::Transient(format!("HTTP {status}: {}", snippet(&text))), retry_after));
        }
        if !status.is_success() {
            return Err((EmbedError::Permanent(format!("HTTP {status}: {}", snippet(&text))), None));
        }
        // A malformed body from a gateway is usually passing: retry it.
        let parsed: Response = serde_json::from_str(&text)
            .map_err(|e| (EmbedError::Transient(format!("malformed response ({e}): {}", snippet(&text))), None))?;
        if parsed.data.len() != batch.len() {
            return Err((EmbedError::Transient(format!("asked for {} embeddings, got {}", batch.len(), parsed.data.len())), None));
        }
        let mut vectors = vec![Vec::new(); batch.len()];
        for item in parsed.data {
            if item.embedding.len() != self.cfg.dimension {
                return Err((
                    EmbedError::Permanent(format!(
                        "model {} returned {} dimensions, EMBEDDING_DIMENSION is {}",
                        self.cfg.model,
                        item.embedding.len(),
                        self.cfg.dimension
                    )),
                    None,
                ));
            }
            let slot = vectors
                .get_mut(item.index)
                .ok_or_else(|| (EmbedError::Transient(format!("response index {} out of range", item.index)), None))?;
            let mut v = item.embedding;
            l2_normalize(&mut v);
            *slot = v;
        }
        if vectors.iter().any(Vec::is_empty) {
            return Err((EmbedError::Transient("response is missing an index".into()), None));
        }
        Ok(vectors)
    }
}

fn snippet(text: &str) -> String {
    text.chars().take(200).collect()
}

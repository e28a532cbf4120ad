//! An optional reranker: any Cohere/Jina-style `/v1/rerank` endpoint (what
//! llama.cpp's server, Text Embeddings Inference, Jina and Cohere speak).
//!
//! No reranker weights are obtainable from the package registries, so the
//! default is none; a user with an endpoint sets `RERANK_BASE_URL` and
//! `RERANK_MODEL`. A reranker is an improvement, never a dependency: one
//! try within its timeout, and any failure is the caller's cue to keep the
//! fused order.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};

#[derive(Debug, Clone)]
pub struct RerankConfig {
    /// Base URL including the API version, e.g. `http://127.0.0.1:8012/v1`;
    /// requests go to `{base_url}/rerank`.
    pub base_url: String,
    pub model: String,
    /// Sent as a bearer token when set (local servers need none).
    pub api_key: Option<SecretString>,
    /// The whole call, connection included: past it the fused order stands.
    pub timeout: Duration,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RerankError {
    #[error("reranker unavailable: {0}")]
    Unavailable(String),
    #[error("reranker answered HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("reranker's answer cannot be read: {0}")]
    Malformed(String),
}

#[derive(Debug, Clone)]
pub struct Reranker {
    cfg: RerankConfig,
    http: reqwest::Client,
}

impl Reranker {
    pub fn new(cfg: RerankConfig) -> Result<Self, RerankError> {
        let http =
            reqwest::Client::builder().timeout(cfg.timeout).build().map_err(|e| RerankError::Unavailable(format!("HTTP client: {e}")))?;
        Ok(Reranker { cfg, http })
    }

    pub fn model(&self) -> &str {
        &self.cfg.model
    }

    /// `documents` in the server's order of relevance to `query`: each
    /// document's index and score, best first, every index exactly once.
    pub async fn rerank(&self, query: &str, documents: &[String]) -> Result<Vec<(usize, f64)>, RerankError> {
        if documents.is_empty() {
            return Ok(Vec::new());
        }
        let url = format!("{}/rerank", self.cfg.base_url.trim_end_matches('/'));
        // `documents` for Cohere, Jina and llama.cpp; `texts` for TEI's
        // native route. `top_n` asks for every one back.
        let body = serde_json::json!({
            "model": self.cfg.model, "query": query, "documents": documents, "texts": documents, "top_n": documents.len(),
        });
        let mut req = self.http.post(&url).json(&body);
        if let Some(key) = &self.cfg.api_key {
            req = req.bearer_auth(key.expose_secret());
        }
        let resp = req.send().await.map_err(|e| RerankError::Unavailable(without_url(e)))?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| RerankError::Unavailable(format!("reading the answer: {}", without_url(e))))?;
        if !status.is_success() {
            return Err(RerankError::Status { status: status.as_u16(), body: text.chars().take(200).collect() });
        }
        read_ranking(&text, documents.len())
    }
}

/// The error without the URL reqwest puts in it (it may carry a key in a
/// query string): the kind of failure is what the log needs.
fn without_url(e: reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "cannot connect".into()
    } else {
        e.without_url().to_string()
    }
}

/// Reads `{"results": [{"index", "relevance_score"}]}` (Cohere, Jina,
/// llama.cpp) or `[{"index", "score"}]` (TEI). An index out of range or
/// seen twice makes the answer unreadable; indices the server left out
/// follow the ranked ones in their given order, scoreless (NaN never
/// compares, so they are put last explicitly).
pub fn read_ranking(text: &str, n: usize) -> Result<Vec<(usize, f64)>, RerankError> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| RerankError::Malformed(format!("not JSON: {e}")))?;
    let items = match &v {
        serde_json::Value::Array(a) => a,
        serde_json::Value::Object(o) => match o.get("results").or_else(|| o.get("data")) {
            Some(serde_json::Value::Array(a)) => a,
            _ => return Err(RerankError::Malformed("no `results` array".into())),
        },
        _ => return Err(RerankError::Malformed("neither an object nor an array".into())),
    };
    let mut seen = vec![false; n];
    let mut ranked: Vec<(usize, f64)> = Vec::with_capacity(n);
    for item in items {
        let index = item
            .get("index")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| RerankError::Malformed("a result without an index".into()))?;
        let index = usize::try_from(index)
            .ok()
            .filter(|i| *i < n)
            .ok_or_else(|| RerankError::Malformed(format!("index {index} of {n} documents")))?;
        if std::mem::replace(&mut seen[index], true) {
            return Err(RerankError::Malformed(format!("index {index} twice")));
        }
        let score = item
            .get("relevance_score")
            .or_else(|| item.get("score"))
            .and_then(serde_json::Value::as_f64)
            .filter(|s| s.is_finite())
            .ok_or_else(|| RerankError::Malformed(format!("no score for index {index}")))?;
        ranked.push((index, score));
    }
    // Best first whatever order the server listed them in; ties keep the
    // given (fused) order.
    ranked.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal).then(a.0.cmp(&b.0)));
    ranked.extend((0..n).filter(|i| !seen[*i]).map(|i| (i, f64::NEG_INFINITY)));
    Ok(ranked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_answer_shapes_are_read_best_first_with_the_missing_last() {
        let cohere = r#"{"results": [{"index": 2, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}]}"#;
        assert_eq!(read_ranking(cohere, 3).unwrap(), [(2, 0.9), (0, 0.1), (1, f64::NEG_INFINITY)]);
        let tei = r#"[{"index": 0, "score": 0.2}, {"index": 1, "score": 0.7}]"#;
        assert_eq!(read_ranking(tei, 2).unwrap(), [(1, 0.7), (0, 0.2)]);
    }

    #[test]
    fn what_cannot_be_trusted_is_refused() {
        for bad in [
            "not json",
            r#"{"oops": []}"#,
            r#"{"results": [{"index": 5, "relevance_score": 1.0}]}"#,
            r#"{"results": [{"index": 0, "relevance_score": 1.0}, {"index": 0, "relevance_score": 0.5}]}"#,
            r#"{"results": [{"index": 0}]}"#,
            r#"{"results": [{"relevance_score": 0.3}]}"#,
        ] {
            assert!(matches!(read_ranking(bad, 2), Err(RerankError::Malformed(_))), "{bad}");
        }
    }
}

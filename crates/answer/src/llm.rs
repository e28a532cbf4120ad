//! OpenAI-compatible chat completions (`{base_url}/chat/completions`) with
//! JSON output, timeouts, and retries with backoff on 429, 5xx and
//! transport errors (honouring Retry-After).

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use tracing::warn;

use crate::prompt::ChatMessage;

#[derive(Debug, Clone)]
pub struct ChatConfig {
    /// Base URL including the API version, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    pub model: String,
    pub api_key: SecretString,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub timeout: Duration,
    /// Attempts after the first on 429, 5xx and transport errors.
    pub max_retries: u32,
    pub retry_backoff: Duration,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// Timeouts, 429, 5xx, connection trouble: retried, then reported.
    #[error("LLM unavailable: {0}")]
    Unavailable(String),
    /// 4xx other than 429, or a body that is not a chat completion.
    #[error("LLM request failed: {0}")]
    Failed(String),
}

/// Token counts as the provider reports them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmUsage {
    pub model: String,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub total_tokens: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub content: String,
    pub usage: LlmUsage,
}

#[derive(Debug, Clone)]
pub struct ChatClient {
    cfg: ChatConfig,
    http: reqwest::Client,
}

#[derive(Deserialize)]
struct Response {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
struct Choice {
    message: Message,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize, Default)]
struct Usage {
    #[serde(default)]
    prompt_tokens: i64,
    #[serde(default)]
    completion_tokens: i64,
    #[serde(default)]
    total_tokens: i64,
}

impl ChatClient {
    pub fn new(cfg: ChatConfig) -> Result<Self, LlmError> {
        let http = reqwest::Client::builder().timeout(cfg.timeout).build().map_err(|e| LlmError::Failed(format!("HTTP client: {e}")))?;
        Ok(ChatClient { cfg, http })
    }

    pub fn model(&self) -> &str {
        &self.cfg.model
    }

    pub async fn complete(&self, messages: &[ChatMessage]) -> Result<Completion, LlmError> {
        let url = format!("{}/chat/completions", self.cfg.base_url.trim_end_matches('/'));
        let mut body = serde_json::json!({
            "model": self.cfg.model,
            "messages": messages,
            "response_format": {"type": "json_object"},
        });
        if let Some(t) = self.cfg.max_tokens {
            body["max_tokens"] = t.into();
        }
        if let Some(t) = self.cfg.temperature {
            body["temperature"] = t.into();
        }
        let mut attempt = 0u32;
        loop {
            let (err, retry_after) = match self.http.post(&url).bearer_auth(self.cfg.api_key.expose_secret()).json(&body).send().await {
                Err(e) => (LlmError::Unavailable(if e.is_timeout() { "timed out".into() } else { e.to_string() }), None),
                Ok(resp) => {
                    let status = resp.status();
                    let retry_after = resp
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(Duration::from_secs);
                    if status.is_success() {
                        let text = resp.text().await.map_err(|e| LlmError::Unavailable(e.to_string()));
                        match text.and_then(|t| {
                            serde_json::from_str::<Response>(&t).map_err(|e| LlmError::Failed(format!("not a chat completion: {e}")))
                        }) {
                            Ok(r) => return self.completion(r),
                            Err(e) => (e, None),
                        }
                    } else if status.as_u16() == 429 || status.is_server_error() {
                        (LlmError::Unavailable(format!("HTTP {status}")), retry_after)
                    } else {
                        let text = resp.text().await.unwrap_or_default();
                        return Err(LlmError::Failed(format!("HTTP {status}: {}", text.chars().take(300).collect::<String>())));
                    }
                }
            };
            if attempt >= self.cfg.max_retries || matches!(err, LlmError::Failed(_)) {
                return Err(err);
            }
            let backoff = self.cfg.retry_backoff.saturating_mul(2u32.saturating_pow(attempt.min(10)));
            let wait = retry_after.unwrap_or(backoff).min(Duration::from_secs(30));
            warn!(attempt = attempt + 1, error = %err, wait_ms = wait.as_millis() as u64, "LLM call failed; retrying");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    fn completion(&self, r: Response) -> Result<Completion, LlmError> {
        let content = r
            .choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .ok_or_else(|| LlmError::Failed("no choices in the completion".into()))?;
        let u = r.usage.unwrap_or_default();
        Ok(Completion {
            content,
            usage: LlmUsage {
                model: r.model.unwrap_or_else(|| self.cfg.model.clone()),
                prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens,
                total_tokens: u.total_tokens,
            },
        })
    }
}

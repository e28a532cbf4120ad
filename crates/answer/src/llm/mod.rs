//! OpenAI-compatible chat completions (`{base_url}/chat/completions`):
//! schema-constrained JSON output, streamed (server-sent events) or not,
//! timeouts, and retries with backoff on 429, 5xx, transport errors and
//! streams cut short (honouring Retry-After).

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use tracing::{debug, warn};

use crate::prompt::ChatMessage;

mod reply;

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
    /// Sent as `seed` (providers that accept one sample reproducibly).
    pub seed: Option<u64>,
    /// Send llama.cpp's `cache_prompt: true` (reuse the KV cache of the
    /// prompt prefix shared with the last request). Other providers may
    /// reject the unknown field, so it is off unless asked for.
    pub cache_prompt: bool,
    /// Ask for `stream: true` and read the answer as it is generated.
    pub stream: bool,
    /// Write the output contract's fixed opening for the model (an
    /// assistant message it continues, under a GBNF `grammar`: llama.cpp's
    /// server, not OpenAI's API), so its first words stream without it
    /// decoding that opening token by token ([`crate::contract::prefill`]).
    pub prefill: bool,
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

/// What the reply must be.
#[derive(Debug, Clone, Copy)]
pub enum Format<'a> {
    Text,
    /// `response_format: json_object`.
    JsonObject,
    /// `response_format: json_schema` with this schema (strict).
    Schema(&'a serde_json::Value),
    /// [`Format::Schema`], with these property names sent before the
    /// others wherever they occur. llama.cpp's server makes the model write
    /// an object's properties in the order the schema lists them, and
    /// serde_json's maps list them sorted ("cites" before "text"): a model
    /// made to choose its citations first tends to copy the cited sentence
    /// as its text.
    SchemaKeysFirst(&'a serde_json::Value, &'a [&'a str]),
    /// llama.cpp's GBNF `grammar` (not OpenAI's), at most `max_tokens`
    /// (None: the client's own bound): with the chat ending in an
    /// assistant message, what continues that message
    /// ([`crate::contract::prefill`]).
    Grammar {
        grammar: &'a str,
        max_tokens: Option<u32>,
    },
}

/// `value` serialized with the object keys of `first` before the others,
/// in that order, at every depth; the rest stay in serde_json's order.
struct KeysFirst<'a> {
    value: &'a serde_json::Value,
    first: &'a [&'a str],
}

impl serde::Serialize for KeysFirst<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        let nested = |value| KeysFirst { value, first: self.first };
        match self.value {
            serde_json::Value::Object(map) => {
                let mut entries: Vec<(&String, &serde_json::Value)> = map.iter().collect();
                // A stable sort: the keys not in `first` keep their order.
                entries.sort_by_key(|(k, _)| self.first.iter().position(|f| f == k).unwrap_or(usize::MAX));
                let mut out = serializer.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    out.serialize_entry(k, &nested(v))?;
                }
                out.end()
            }
            serde_json::Value::Array(items) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for v in items {
                    out.serialize_element(&nested(v))?;
                }
                out.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// The time a call spent inside llama.cpp's server (prefill + decode),
/// from the `timings` it returns; None when they are not given.
pub fn server_ms(timings: &serde_json::Value) -> Option<u64> {
    Some((timings["prompt_ms"].as_f64()? + timings["predicted_ms"].as_f64()?) as u64)
}

/// Adds the usage of one more call to `total` (None: no call yet).
pub(crate) fn add_usage(total: &mut Option<LlmUsage>, u: &LlmUsage) {
    *total = Some(match total.take() {
        None => u.clone(),
        Some(t) => LlmUsage {
            model: u.model.clone(),
            prompt_tokens: t.prompt_tokens + u.prompt_tokens,
            completion_tokens: t.completion_tokens + u.completion_tokens,
            total_tokens: t.total_tokens + u.total_tokens,
        },
    });
}

#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub content: String,
    pub usage: LlmUsage,
    /// From sending the request to the first content received.
    pub first_token: Option<Duration>,
    /// From sending the request to the end of the answer.
    pub elapsed: Duration,
    /// llama.cpp's `timings` (prompt and decode tokens/s), when given.
    pub timings: Option<serde_json::Value>,
    /// The answer came as server-sent events, piece by piece.
    pub streamed: bool,
    /// Each generated token with its most likely alternatives, when asked
    /// for ([`ChatClient::complete_with_logprobs`]) and the provider gives
    /// them (llama.cpp and OpenAI do; others may not).
    pub logprobs: Vec<TokenLogprobs>,
}

/// One generated token and the candidates the model weighed for its place.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprobs {
    pub token: String,
    pub logprob: f64,
    pub top_logprobs: Vec<TokenLogprob>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprob {
    pub token: String,
    pub logprob: f64,
}

/// An error with its causes ("error sending request …: connection closed
/// before message completed"): reqwest's own message names only the URL.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// Whether a request was written into a kept-alive connection the server
/// had already closed, so no reply began: "connection closed before
/// message completed", or reset by the peer when the request reached a
/// closed socket. llama.cpp's server closes the connection after every
/// streamed reply while its headers say keep-alive, so the check's call
/// after an answer's stream met one about once in five answers.
fn on_a_closed_connection(e: &reqwest::Error) -> bool {
    if e.is_connect() || e.is_timeout() {
        return false;
    }
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        if c.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_incomplete_message) {
            return true;
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return matches!(io.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe);
        }
        cause = c.source();
    }
    false
}

/// Sends of one call that may meet a closed kept-alive connection and be
/// sent again at once, beside the retries of `max_retries` (the pool may
/// hold one such connection per earlier stream).
const CLOSED_CONNECTION_RESENDS: u32 = 2;

#[derive(Debug, Clone)]
pub struct ChatClient {
    cfg: ChatConfig,
    http: reqwest::Client,
}

impl ChatClient {
    pub fn new(cfg: ChatConfig) -> Result<Self, LlmError> {
        let http = reqwest::Client::builder().timeout(cfg.timeout).build().map_err(|e| LlmError::Failed(format!("HTTP client: {e}")))?;
        Ok(ChatClient { cfg, http })
    }

    pub fn model(&self) -> &str {
        &self.cfg.model
    }

    /// Whether the answer's opening is written for the model
    /// ([`ChatConfig::prefill`]).
    pub fn prefills(&self) -> bool {
        self.cfg.prefill
    }

    /// The model's answer to `messages` in `format`.
    /// `on_text` is called with the whole content received so far each time
    /// a streamed piece arrives (from the start again if a retry begins).
    pub async fn complete(
        &self,
        messages: &[ChatMessage],
        format: Format<'_>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Completion, LlmError> {
        self.request(messages, format, None, on_text).await
    }

    /// As [`Self::complete`], also asking for the `top` most likely
    /// candidates of each generated token (`logprobs`, `top_logprobs`): how
    /// sure the model was, not only what it chose.
    pub async fn complete_with_logprobs(&self, messages: &[ChatMessage], format: Format<'_>, top: u8) -> Result<Completion, LlmError> {
        self.request(messages, format, Some(top), &mut |_| {}).await
    }

    /// [`Self::complete`] and [`Self::complete_with_logprobs`] in one: the
    /// reply streamed to `on_text`, with the `top` candidates of each token.
    pub async fn complete_streamed_with_logprobs(
        &self,
        messages: &[ChatMessage],
        format: Format<'_>,
        top: u8,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Completion, LlmError> {
        self.request(messages, format, Some(top), on_text).await
    }

    async fn request(
        &self,
        messages: &[ChatMessage],
        format: Format<'_>,
        top_logprobs: Option<u8>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Completion, LlmError> {
        let url = format!("{}/chat/completions", self.cfg.base_url.trim_end_matches('/'));
        let mut body = serde_json::json!({
            "model": self.cfg.model,
            "messages": messages,
            "temperature": self.cfg.temperature.unwrap_or(0.0),
        });
        match format {
            Format::Text => {}
            Format::JsonObject => body["response_format"] = serde_json::json!({"type": "json_object"}),
            Format::Schema(s) | Format::SchemaKeysFirst(s, _) => {
                body["response_format"] =
                    serde_json::json!({"type": "json_schema", "json_schema": {"name": "answer", "strict": true, "schema": s}})
            }
            Format::Grammar { grammar, .. } => body["grammar"] = grammar.into(),
        }
        let keys_first: &[&str] = match format {
            Format::SchemaKeysFirst(_, first) => first,
            _ => &[],
        };
        let max_tokens = match format {
            Format::Grammar { max_tokens: Some(t), .. } => Some(t),
            _ => self.cfg.max_tokens,
        };
        if let Some(t) = max_tokens {
            body["max_tokens"] = t.into();
        }
        if let Some(seed) = self.cfg.seed {
            body["seed"] = seed.into();
        }
        if self.cfg.cache_prompt {
            body["cache_prompt"] = true.into();
        }
        if let Some(top) = top_logprobs {
            body["logprobs"] = true.into();
            body["top_logprobs"] = top.into();
        }
        if self.cfg.stream {
            body["stream"] = true.into();
            body["stream_options"] = serde_json::json!({"include_usage": true});
        }
        let body = KeysFirst { value: &body, first: keys_first };
        let mut attempt = 0u32;
        let mut resends = 0u32;
        loop {
            let started = std::time::Instant::now();
            let (err, retry_after) = match self.http.post(&url).bearer_auth(self.cfg.api_key.expose_secret()).json(&body).send().await {
                Err(e) if on_a_closed_connection(&e) && resends < CLOSED_CONNECTION_RESENDS => {
                    // No reply began, and the connection was one the
                    // server had closed: sent again at once on a new one,
                    // not counted as a failure (at worst, a server that died
                    // mid-request is asked twice more, then retried).
                    debug!(error = %with_causes(&e), "LLM connection closed by the server before the request; sending again");
                    resends += 1;
                    continue;
                }
                Err(e) => (LlmError::Unavailable(if e.is_timeout() { "timed out".into() } else { with_causes(&e) }), None),
                Ok(resp) => {
                    let status = resp.status();
                    let retry_after = resp
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(Duration::from_secs);
                    let is_stream = resp
                        .headers()
                        .get(reqwest::header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok())
                        .is_some_and(|v| v.starts_with("text/event-stream"));
                    if status.is_success() {
                        let read = if is_stream {
                            self.read_stream(resp, started, on_text).await
                        } else {
                            self.read_whole(resp, started, on_text).await
                        };
                        match read {
                            Ok(c) => return Ok(c),
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
}

#[cfg(test)]
mod keys_first_tests {
    use super::KeysFirst;

    #[test]
    fn the_keys_asked_first_are_written_first_at_every_depth() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"sections": {"type": "array", "items": {"properties": {"cites": {"type": "array"}, "quote": {}, "text": {}}}}},
        });
        let text = serde_json::to_string(&KeysFirst { value: &schema, first: &["text", "cites"] }).unwrap();
        assert_eq!(
            text,
            r#"{"properties":{"sections":{"items":{"properties":{"text":{},"cites":{"type":"array"},"quote":{}}},"type":"array"}},"type":"object"}"#
        );
        // Nothing asked first: serde_json's own order.
        assert_eq!(serde_json::to_string(&KeysFirst { value: &schema, first: &[] }).unwrap(), schema.to_string());
    }
}

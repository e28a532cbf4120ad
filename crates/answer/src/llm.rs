//! OpenAI-compatible chat completions (`{base_url}/chat/completions`):
//! schema-constrained JSON output, streamed (server-sent events) or not,
//! timeouts, and retries with backoff on 429, 5xx, transport errors and
//! streams cut short (honouring Retry-After).

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
    /// Sent as `seed` (providers that accept one sample reproducibly).
    pub seed: Option<u64>,
    /// Send llama.cpp's `cache_prompt: true` (reuse the KV cache of the
    /// prompt prefix shared with the last request). Other providers may
    /// reject the unknown field, so it is off unless asked for.
    pub cache_prompt: bool,
    /// Ask for `stream: true` and read the answer as it is generated.
    pub stream: bool,
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

#[derive(Debug, Clone)]
pub struct ChatClient {
    cfg: ChatConfig,
    http: reqwest::Client,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    timings: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<Message>,
    /// A streamed chunk's piece of the answer.
    #[serde(default)]
    delta: Option<Message>,
    #[serde(default)]
    finish_reason: Option<String>,
    /// Read best-effort ([`token_logprobs`]): a shape this client does not
    /// know costs the probabilities, never the answer.
    #[serde(default)]
    logprobs: Option<serde_json::Value>,
}

/// `choices[0].logprobs.content` as OpenAI and llama.cpp give it; tokens or
/// candidates that do not read are skipped.
fn token_logprobs(logprobs: Option<serde_json::Value>) -> Vec<TokenLogprobs> {
    let Some(serde_json::Value::Array(tokens)) = logprobs.and_then(|mut l| l.get_mut("content").map(serde_json::Value::take)) else {
        return Vec::new();
    };
    let candidate = |c: &serde_json::Value| Some(TokenLogprob { token: c["token"].as_str()?.to_string(), logprob: c["logprob"].as_f64()? });
    tokens
        .iter()
        .filter_map(|t| {
            Some(TokenLogprobs {
                token: t["token"].as_str()?.to_string(),
                logprob: t["logprob"].as_f64().unwrap_or(f64::NEG_INFINITY),
                top_logprobs: t["top_logprobs"].as_array().map(|a| a.iter().filter_map(candidate).collect()).unwrap_or_default(),
            })
        })
        .collect()
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
            Format::Schema(s) => {
                body["response_format"] =
                    serde_json::json!({"type": "json_schema", "json_schema": {"name": "answer", "strict": true, "schema": s}})
            }
        }
        if let Some(t) = self.cfg.max_tokens {
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
        let mut attempt = 0u32;
        loop {
            let started = std::time::Instant::now();
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

    async fn read_whole(
        &self,
        resp: reqwest::Response,
        started: std::time::Instant,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Completion, LlmError> {
        let text = resp.text().await.map_err(|e| LlmError::Unavailable(if e.is_timeout() { "timed out".into() } else { e.to_string() }))?;
        let r = serde_json::from_str::<Response>(&text).map_err(|e| LlmError::Failed(format!("not a chat completion: {e}")))?;
        let choice = r.choices.into_iter().next().ok_or_else(|| LlmError::Failed("no choices in the completion".into()))?;
        let logprobs = token_logprobs(choice.logprobs);
        let content = choice.message.and_then(|m| m.content).ok_or_else(|| LlmError::Failed("no message in the completion".into()))?;
        on_text(&content);
        let elapsed = started.elapsed();
        let read =
            StreamRead { content, model: r.model, usage: r.usage, timings: r.timings, first_token: Some(elapsed), done: true, logprobs };
        Ok(self.completion(read, elapsed, false))
    }

    /// Server-sent events: `data: {chunk}` lines, `data: [DONE]` at the end.
    /// A stream that ends without `[DONE]` or a finish reason was cut, and
    /// is an error (retried).
    async fn read_stream(
        &self,
        mut resp: reqwest::Response,
        started: std::time::Instant,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Completion, LlmError> {
        let mut buf: Vec<u8> = Vec::new();
        let mut read = StreamRead::default();
        loop {
            let piece = resp
                .chunk()
                .await
                .map_err(|e| LlmError::Unavailable(if e.is_timeout() { "timed out".into() } else { format!("stream: {e}") }))?;
            let Some(piece) = piece else { break };
            buf.extend_from_slice(&piece);
            // Lines are cut at the newline byte, so a character split
            // between two network pieces is decoded whole.
            while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=nl).collect();
                read.line(&String::from_utf8_lossy(&line), started, on_text)?;
            }
        }
        // The last line, when the server did not end it with a newline.
        if !buf.is_empty() {
            read.line(&String::from_utf8_lossy(&buf), started, on_text)?;
        }
        if !read.done {
            return Err(LlmError::Unavailable("the stream ended before the answer did".into()));
        }
        Ok(self.completion(read, started.elapsed(), true))
    }

    fn completion(&self, read: StreamRead, elapsed: Duration, streamed: bool) -> Completion {
        let u = read.usage.unwrap_or_default();
        Completion {
            content: read.content,
            usage: LlmUsage {
                model: read.model.unwrap_or_else(|| self.cfg.model.clone()),
                prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens,
                total_tokens: u.total_tokens,
            },
            first_token: read.first_token,
            elapsed,
            timings: read.timings,
            streamed,
            logprobs: read.logprobs,
        }
    }
}

/// What a reply (a stream so far, or a whole completion) said.
#[derive(Default)]
struct StreamRead {
    content: String,
    model: Option<String>,
    usage: Option<Usage>,
    timings: Option<serde_json::Value>,
    first_token: Option<Duration>,
    /// `[DONE]` or a finish reason was seen.
    done: bool,
    logprobs: Vec<TokenLogprobs>,
}

impl StreamRead {
    fn line(&mut self, line: &str, started: std::time::Instant, on_text: &mut (dyn FnMut(&str) + Send)) -> Result<(), LlmError> {
        let Some(data) = line.trim().strip_prefix("data:") else { return Ok(()) };
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Response = serde_json::from_str(data).map_err(|e| LlmError::Failed(format!("not a chat completion chunk: {e}")))?;
        self.model = chunk.model.or(self.model.take());
        self.usage = chunk.usage.or(self.usage.take());
        self.timings = chunk.timings.or(self.timings.take());
        if let Some(choice) = chunk.choices.into_iter().next() {
            self.done |= choice.finish_reason.is_some();
            self.logprobs.extend(token_logprobs(choice.logprobs));
            if let Some(piece) = choice.delta.or(choice.message).and_then(|m| m.content).filter(|p| !p.is_empty()) {
                self.first_token.get_or_insert_with(|| started.elapsed());
                self.content.push_str(&piece);
                on_text(&self.content);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_probabilities_are_read_across_streamed_chunks_and_best_effort() {
        let started = std::time::Instant::now();
        let mut read = StreamRead::default();
        let chunk = |content: &str, lp: serde_json::Value| {
            format!("data: {}", serde_json::json!({"choices": [{"delta": {"content": content}, "logprobs": lp}]}))
        };
        let lines = [
            chunk("{\"answers\":", serde_json::json!({"content": [{"token": "{\"answers\":", "logprob": -0.01, "top_logprobs": null}]})),
            chunk(
                " true",
                serde_json::json!({"content": [{"token": " true", "logprob": -0.2,
                "top_logprobs": [{"token": " true", "logprob": -0.2}, {"token": " false", "logprob": -1.7}, {"logprob": -3.0}]}]}),
            ),
            // Shapes this client does not know cost the probabilities only.
            chunk("}", serde_json::json!("unexpected")),
            "data: [DONE]".to_string(),
        ];
        for l in &lines {
            read.line(l, started, &mut |_| {}).unwrap();
        }
        assert_eq!(read.content, "{\"answers\": true}");
        assert_eq!(read.logprobs.len(), 2);
        assert!(read.logprobs[0].top_logprobs.is_empty());
        assert_eq!(read.logprobs[1].top_logprobs.len(), 2, "the candidate without a token is skipped");
        let p = crate::contract::verdict_probability(&read.logprobs).unwrap();
        assert!((p - 1.0 / (1.0 + (-1.5f64).exp())).abs() < 1e-9, "{p}");
    }
}

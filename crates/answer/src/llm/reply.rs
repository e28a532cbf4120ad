//! Reading a reply: a whole chat completion, or server-sent events as they
//! arrive, into a [`Completion`].

use std::time::Duration;

use serde::Deserialize;

use super::{ChatClient, Completion, LlmError, LlmUsage, TokenLogprob, TokenLogprobs};

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
    pub(super) async fn read_whole(
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
    pub(super) async fn read_stream(
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

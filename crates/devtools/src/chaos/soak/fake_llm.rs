//! An OpenAI-compatible chat server for the soak, speaking the real wire
//! protocol (JSON and Server-Sent Events), so that a run of hours measures
//! the service rather than a model on two cores.
//!
//! What it answers: a call without a response format (a follow-up to
//! condense, a section to rewrite) gets its last message back; the check of
//! an answer (`{"answers": bool}`) is always yes; an answer cites the
//! prompt's first evidence sentence with that sentence as its text, so the
//! grounding and figure checks pass on their own merits. Streamed calls send
//! the content a few characters at a time with `delay` between pieces, like a
//! slow local model.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

/// Between two streamed pieces of 12 characters. The model's time is not
/// what a soak measures, and it sets how many questions the answer path can
/// take: each answerer answers its partitions' questions one at a time. At
/// 25 ms (an answer took 1.1 to 1.5 s at the answerer, p50) the hour's 120 questions a
/// minute were all that two answerers could answer, and a queue with no
/// headroom grows after any stall and never drains: in the fifth hour
/// (2026-12-03) the answerers' lag rose from 11 to 60 at minute 43 and every
/// door's p99 with it. At 10 ms an answer takes some 0.5 s (p50) and each
/// answerer is busy about half of the time at the same rates.
pub const PIECE_DELAY: Duration = Duration::from_millis(10);

pub struct FakeLlm {
    /// `http://127.0.0.1:PORT/v1`, what ANSWER_LLM_BASE_URL takes.
    pub base_url: String,
    calls: Arc<Served>,
    server: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
struct Served {
    calls: AtomicU64,
    delay: Duration,
}

impl FakeLlm {
    pub async fn start(delay: Duration) -> anyhow::Result<FakeLlm> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let calls = Arc::new(Served { calls: AtomicU64::new(0), delay });
        let app = Router::new().route("/v1/chat/completions", post(chat)).with_state(calls.clone());
        let server = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!(error = %e, "the fake LLM server stopped");
            }
        });
        Ok(FakeLlm { base_url: format!("http://{addr}/v1"), calls, server })
    }

    pub fn calls(&self) -> u64 {
        self.calls.calls.load(Ordering::Relaxed)
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// The content the model "writes" for one request body.
pub fn content_for(body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if body.get("response_format").is_none() {
        return messages.last().and_then(|m| m["content"].as_str()).unwrap_or_default().to_string();
    }
    if body["response_format"]["json_schema"]["schema"]["required"] == json!(["answers"]) {
        return json!({"answers": true}).to_string();
    }
    // The first evidence line, `[S1] text`, of any message.
    let first = messages.iter().filter_map(|m| m["content"].as_str()).flat_map(str::lines).find(|l| l.starts_with("[S"));
    match first.and_then(|l| l.split_once(' ')) {
        Some((id, text)) => {
            let id = id.trim_matches(['[', ']']);
            json!({"answerable": true, "sections": [{"text": text.trim(), "cites": [id]}]}).to_string()
        }
        None => json!({"answerable": false, "sections": []}).to_string(),
    }
}

async fn chat(State(served): State<Arc<Served>>, Json(body): Json<Value>) -> Response {
    served.calls.fetch_add(1, Ordering::Relaxed);
    let content = content_for(&body);
    let usage = json!({"prompt_tokens": 200, "completion_tokens": 40, "total_tokens": 240});
    if body["stream"] != true {
        return Json(json!({
            "id": "soak", "object": "chat.completion", "model": "soak-llm",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": usage
        }))
        .into_response();
    }
    let chars: Vec<char> = content.chars().collect();
    let mut events: Vec<String> = chars
        .chunks(12)
        .map(|c| {
            let piece: String = c.iter().collect();
            format!("data: {}\n\n", json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": piece}}]}))
        })
        .collect();
    events.push(format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})));
    events.push(format!("data: {}\n\n", json!({"choices": [], "usage": usage})));
    events.push("data: [DONE]\n\n".into());
    let delay = served.delay;
    let stream = futures::stream::unfold(events.into_iter(), move |mut it| async move {
        let next = it.next()?;
        tokio::time::sleep(delay).await;
        Some((Ok::<_, std::io::Error>(next), it))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "").into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_cite_the_first_evidence_sentence_and_checks_pass() {
        let answer = json!({"response_format": {"type": "json_schema", "json_schema": {"schema": {"required": ["answerable", "sections"]}}},
            "messages": [{"role": "system", "content": "rules"}, {"role": "user", "content": "Evidence:\n[S3] Doanh thu tăng 12%.\n[S4] Khác."}]});
        let v: Value = serde_json::from_str(&content_for(&answer)).unwrap();
        assert_eq!(v["sections"][0]["cites"], json!(["S3"]));
        assert_eq!(v["sections"][0]["text"], "Doanh thu tăng 12%.");
        let check = json!({"response_format": {"json_schema": {"schema": {"required": ["answers"]}}}, "messages": []});
        assert_eq!(content_for(&check), r#"{"answers":true}"#);
        let plain = json!({"messages": [{"role": "user", "content": "Còn quý 3?"}]});
        assert_eq!(content_for(&plain), "Còn quý 3?");
        let nothing = json!({"response_format": {"json_schema": {"schema": {}}}, "messages": [{"role": "user", "content": "?"}]});
        assert_eq!(serde_json::from_str::<Value>(&content_for(&nothing)).unwrap()["answerable"], false);
    }
}

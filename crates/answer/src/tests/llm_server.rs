//! A small HTTP server speaking the OpenAI chat-completions protocol,
//! whole or streamed (server-sent events), answering call by call as a
//! test tells it, and the chunks and question the tests of `llm.rs` ask
//! the answer orchestrator about.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::llm::{ChatClient, ChatConfig};
use crate::StreamedSection;
use crate::{answer_question, AnswerOptions, LlmFallback, SegmentSpan, SourceChunk};

/// No check: each test below gives the model's replies call by call.
pub(super) const UNCHECKED: AnswerOptions = AnswerOptions {
    fallback: LlmFallback::Fail,
    evidence_chars: 10_000,
    verify: false,
    thresholds: crate::decision::FormThresholds::uniform(0.5),
    part_of_several: false,
    without_marks: false,
    decision: crate::decision::CHECK_ONLY,
    retrieval: crate::RetrievalConfidence { best_cosine: None, lexical_coverage: None },
    llm_chunks: usize::MAX,
    evidence_sentences: 0,
    second_attempt: true,
    cite_support: true,
    instruction_filter: crate::InstructionFilter::PhrasesAndMeaning,
};

/// The same, falling back to the extractive answer.
pub(super) const EXTRACTIVE: AnswerOptions = AnswerOptions { fallback: LlmFallback::Extractive, ..UNCHECKED };
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};

/// What the fake server answers, call by call (the last one repeats).
#[derive(Clone)]
pub(super) enum Reply {
    Content(String),
    /// Server-sent events carrying the content in pieces of this many
    /// chars; `cut`: the connection closes halfway, without `[DONE]`.
    Stream {
        content: String,
        piece: usize,
        cut: bool,
    },
    Status(u16),
    Sleep(Duration),
    /// The check's reply `{"answers": true}` with token probabilities as
    /// llama.cpp gives them: P(" true") at the value's token.
    Judged(f64),
    /// An answer `{"answerable": true, ...}` (the content given, which
    /// must begin so) with token probabilities: P(" true") at the
    /// `answerable` value's token.
    Answered(String, f64),
    /// The value after a prefilled `{"answerable":` (llama.cpp continuing
    /// an assistant message): ` true` when P(" true") is above a half, with
    /// the token probabilities of both.
    Value(f64),
}

pub(super) struct Server {
    replies: Vec<Reply>,
    pub(super) calls: AtomicUsize,
    pub(super) requests: std::sync::Mutex<Vec<serde_json::Value>>,
    /// The same requests as sent, keys in their order.
    pub(super) raw_requests: std::sync::Mutex<Vec<String>>,
}

fn usage() -> serde_json::Value {
    serde_json::json!({"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150})
}

async fn completions(State(s): State<Arc<Server>>, headers: HeaderMap, raw: String) -> Response {
    assert_eq!(headers.get("authorization").unwrap(), "Bearer test-key");
    assert_eq!(headers.get("content-type").unwrap(), "application/json");
    let body: serde_json::Value = serde_json::from_str(&raw).unwrap();
    s.requests.lock().unwrap().push(body.clone());
    s.raw_requests.lock().unwrap().push(raw);
    let n = s.calls.fetch_add(1, Ordering::SeqCst);
    let reply = s.replies.get(n).or(s.replies.last()).cloned().unwrap();
    match reply {
        Reply::Status(code) => {
            let mut r = (StatusCode::from_u16(code).unwrap(), Json(serde_json::json!({"error": {"message": "slow down"}}))).into_response();
            if code == 429 {
                r.headers_mut().insert("retry-after", "0".parse().unwrap());
            }
            r
        }
        Reply::Sleep(d) => {
            tokio::time::sleep(d).await;
            StatusCode::OK.into_response()
        }
        Reply::Content(content) => Json(serde_json::json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": usage()
        }))
        .into_response(),
        Reply::Answered(content, p_true) => {
            let rest =
                content.strip_prefix("{\"answerable\": true").or_else(|| content.strip_prefix("{\"answerable\":true")).unwrap_or(&content);
            let value =
                serde_json::json!([{"token": " true", "logprob": p_true.ln()}, {"token": " false", "logprob": (1.0 - p_true).ln()}]);
            Json(serde_json::json!({
                "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop",
                    "logprobs": {"content": [
                        {"token": "{\"answerable\":", "logprob": -0.01, "top_logprobs": []},
                        {"token": " true", "logprob": p_true.ln(), "top_logprobs": value},
                        {"token": rest, "logprob": -0.2, "top_logprobs": []}]}}],
                "usage": usage()
            }))
            .into_response()
        }
        Reply::Value(p_true) => {
            let value =
                serde_json::json!([{"token": " true", "logprob": p_true.ln()}, {"token": " false", "logprob": (1.0 - p_true).ln()}]);
            let (token, p) = if p_true > 0.5 { (" true", p_true) } else { (" false", 1.0 - p_true) };
            Json(serde_json::json!({
                "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": token}, "finish_reason": "stop",
                    "logprobs": {"content": [{"token": token, "logprob": p.ln(), "top_logprobs": value}]}}],
                "usage": usage(),
                "timings": {"prompt_n": 120, "prompt_ms": 1500.0, "predicted_n": 1, "predicted_ms": 100.0}
            }))
            .into_response()
        }
        Reply::Judged(p_true) => {
            let token = |t: &str, top: serde_json::Value| serde_json::json!({"token": t, "logprob": -0.01, "top_logprobs": top});
            let value =
                serde_json::json!([{"token": " true", "logprob": p_true.ln()}, {"token": " false", "logprob": (1.0 - p_true).ln()}]);
            Json(serde_json::json!({
                "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"answers\": true}"}, "finish_reason": "stop",
                    "logprobs": {"content": [token("{\"", serde_json::json!([])), token("answers", serde_json::json!([])),
                        token("\":", serde_json::json!([])), token(" true", value), token("}", serde_json::json!([]))]}}],
                "usage": usage()
            }))
            .into_response()
        }
        Reply::Stream { content, piece, cut } => {
            let chars: Vec<char> = content.chars().collect();
            let pieces: Vec<String> = chars.chunks(piece.max(1)).map(|c| c.iter().collect()).collect();
            let keep = if cut { pieces.len() / 2 } else { pieces.len() };
            let mut events: Vec<String> = pieces[..keep]
                .iter()
                .map(|p| {
                    let chunk = serde_json::json!({"object": "chat.completion.chunk", "model": body["model"],
                        "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": null}]});
                    format!("data: {chunk}\n\n")
                })
                .collect();
            if !cut {
                let last = serde_json::json!({"object": "chat.completion.chunk", "model": body["model"], "choices": [], "usage": usage(),
                    "timings": {"prompt_per_second": 100.0, "predicted_per_second": 20.0}});
                events.push(format!("data: {last}\n\n"));
                events.push("data: [DONE]\n\n".into());
            }
            let stream = futures_lite_stream(events);
            Response::builder().header("content-type", "text/event-stream").body(Body::from_stream(stream)).unwrap()
        }
    }
}

/// The events one by one, with a pause between them (so the client reads
/// them as separate pieces).
fn futures_lite_stream(events: Vec<String>) -> impl futures::Stream<Item = Result<String, std::io::Error>> {
    futures::stream::unfold(events.into_iter(), |mut it| async move {
        let next = it.next()?;
        tokio::time::sleep(Duration::from_millis(2)).await;
        Some((Ok(next), it))
    })
}

pub(super) async fn serve(replies: Vec<Reply>) -> (String, Arc<Server>) {
    let state = Arc::new(Server { replies, calls: AtomicUsize::new(0), requests: Default::default(), raw_requests: Default::default() });
    let app = Router::new().route("/v1/chat/completions", post(completions)).with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), state)
}

pub(super) fn client(base_url: &str, timeout_ms: u64) -> ChatClient {
    client_with(base_url, timeout_ms, false)
}

/// [`client`], writing the answer's opening for the model when `prefill`.
pub(super) fn client_with(base_url: &str, timeout_ms: u64, prefill: bool) -> ChatClient {
    ChatClient::new(ChatConfig {
        base_url: base_url.into(),
        model: "fake-gpt".into(),
        api_key: "test-key".into(),
        max_tokens: Some(500),
        temperature: None,
        timeout: Duration::from_millis(timeout_ms),
        max_retries: 2,
        retry_backoff: Duration::from_millis(10),
        seed: Some(7),
        cache_prompt: true,
        prefill,
        stream: true,
    })
    .unwrap()
}

const TEXT: &str = "Doanh thu thuần năm 2023 đạt 1.245,6 tỷ đồng, tăng 12,4%.\n\nLợi nhuận sau thuế đạt 187,3 tỷ đồng.";

pub(super) fn chunks() -> Vec<SourceChunk> {
    vec![chunk(
        "doc-1",
        TEXT,
        "bao-cao.pdf",
        vec![
            SegmentSpan { segment_index: 0, page_idx: 0, char_start: 0, char_end: 59 },
            SegmentSpan { segment_index: 1, page_idx: 1, char_start: 59, char_end: 96 },
        ],
    )]
}

/// A chunk that is the whole of document `document_id`, laid out on the
/// pages of its `segments`.
pub(super) fn chunk(document_id: &str, text: &str, filename: &str, segments: Vec<SegmentSpan>) -> SourceChunk {
    SourceChunk {
        chunk_id: format!("chunk-{document_id}"),
        document_id: document_id.into(),
        content: text.into(),
        char_start: 0,
        char_end: text.chars().count() as u64,
        filename: Some(filename.into()),
        page_start: segments.first().map_or(0, |s| s.page_idx),
        page_end: segments.last().map_or(0, |s| s.page_idx),
        lines: None,
        revision: 1,
        segments,
    }
}

pub(super) const QUESTION: &str = "Doanh thu năm 2023 tăng bao nhiêu?";

pub(super) fn answer_json(cites: &[&str]) -> String {
    serde_json::json!({"answerable": true, "sections": [{"text": "Doanh thu tăng 12,4%.", "cites": cites}]}).to_string()
}

pub(super) async fn ask(
    client: &ChatClient,
    fallback: LlmFallback,
    question: &str,
) -> (Result<crate::AnswerOutcome, crate::AnswerError>, Vec<Vec<StreamedSection>>) {
    let mut partials = Vec::new();
    let out = answer_question(Some(client), question, &[], &chunks(), AnswerOptions { fallback, ..UNCHECKED }, None, &mut |p| {
        partials.push(p.to_vec())
    })
    .await;
    (out, partials)
}

//! The answer orchestrator against a small HTTP server speaking the OpenAI
//! chat-completions protocol: valid, fenced and invalid JSON, invented
//! source ids, quotes in and not in the chunk, 429 then success, timeouts.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::llm::{ChatClient, ChatConfig};
use crate::{answer_question, AnswerMode, LlmFallback, SegmentSpan, SourceChunk};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};

/// What the fake server answers, call by call (the last one repeats).
#[derive(Clone)]
enum Reply {
    Content(String),
    Status(u16),
    Sleep(Duration),
}

struct Server {
    replies: Vec<Reply>,
    calls: AtomicUsize,
    last_request: std::sync::Mutex<serde_json::Value>,
}

async fn completions(State(s): State<Arc<Server>>, headers: HeaderMap, Json(body): Json<serde_json::Value>) -> Response {
    assert_eq!(headers.get("authorization").unwrap(), "Bearer test-key");
    *s.last_request.lock().unwrap() = body.clone();
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
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
        }))
        .into_response(),
    }
}

async fn serve(replies: Vec<Reply>) -> (String, Arc<Server>) {
    let state = Arc::new(Server { replies, calls: AtomicUsize::new(0), last_request: Default::default() });
    let app = Router::new().route("/v1/chat/completions", post(completions)).with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), state)
}

fn client(base_url: &str, timeout_ms: u64) -> ChatClient {
    ChatClient::new(ChatConfig {
        base_url: base_url.into(),
        model: "fake-gpt".into(),
        api_key: "test-key".into(),
        max_tokens: Some(500),
        temperature: Some(0.0),
        timeout: Duration::from_millis(timeout_ms),
        max_retries: 2,
        retry_backoff: Duration::from_millis(10),
    })
    .unwrap()
}

fn chunks() -> Vec<SourceChunk> {
    let text = "Doanh thu thuần năm 2023 đạt 1.245,6 tỷ đồng, tăng 12,4%.\n\nLợi nhuận sau thuế đạt 187,3 tỷ đồng.";
    vec![SourceChunk {
        chunk_id: "chunk-aaa".into(),
        document_id: "doc-1".into(),
        content: text.into(),
        char_start: 0,
        char_end: text.chars().count() as u64,
        filename: Some("bao-cao.pdf".into()),
        page_start: 0,
        page_end: 0,
        lines: None,
        segments: vec![
            SegmentSpan { segment_index: 0, page_idx: 0, char_start: 0, char_end: 59 },
            SegmentSpan { segment_index: 1, page_idx: 1, char_start: 59, char_end: 96 },
        ],
    }]
}

const QUESTION: &str = "Doanh thu năm 2023 tăng bao nhiêu?";

fn answer_json(ids: &[&str], quote: &str) -> String {
    serde_json::json!({"sections": [{"text": "Doanh thu tăng 12,4%.", "source_ids": ids, "quotes": [quote]}]}).to_string()
}

#[tokio::test]
async fn valid_json_gives_exact_citations_and_usage() {
    let (url, server) = serve(vec![Reply::Content(answer_json(&["chunk-aaa"], "tăng 12,4%"))]).await;
    let out = answer_question(Some(&client(&url, 5000)), LlmFallback::Extractive, QUESTION, &[], &chunks()).await.unwrap();
    assert_eq!(out.mode, AnswerMode::Llm);
    let c = &out.sections[0].citations[0];
    assert!(c.exact);
    assert_eq!(c.text, "tăng 12,4%");
    assert_eq!((c.char_start, c.char_end), (46, 56));
    assert_eq!(out.usage.as_ref().unwrap().total_tokens, 150);
    assert_eq!(out.usage.as_ref().unwrap().model, "fake-gpt");
    // The request: JSON output, the chunk block, the question last.
    let req = server.last_request.lock().unwrap().clone();
    assert_eq!(req["response_format"]["type"], "json_object");
    assert_eq!(req["max_tokens"], 500);
    let msgs = req["messages"].as_array().unwrap();
    assert!(msgs.iter().any(|m| m["content"].as_str().unwrap().contains("[CHUNK_ID=chunk-aaa]")));
    assert_eq!(msgs.last().unwrap()["content"], QUESTION);
}

#[tokio::test]
async fn fenced_json_is_accepted() {
    let fenced = format!("```json\n{}\n```", answer_json(&["chunk-aaa"], "1.245,6 tỷ đồng"));
    let (url, _) = serve(vec![Reply::Content(fenced)]).await;
    let out = answer_question(Some(&client(&url, 5000)), LlmFallback::Extractive, QUESTION, &[], &chunks()).await.unwrap();
    assert_eq!(out.mode, AnswerMode::Llm);
    assert_eq!(out.sections[0].citations[0].text, "1.245,6 tỷ đồng");
}

#[tokio::test]
async fn invented_ids_are_dropped_and_unfound_quotes_cite_the_chunk() {
    let (url, _) = serve(vec![Reply::Content(answer_json(&["chunk-aaa", "chunk-invented", "doc-1"], "doanh thu giảm mạnh"))]).await;
    let out = answer_question(Some(&client(&url, 5000)), LlmFallback::Extractive, QUESTION, &[], &chunks()).await.unwrap();
    assert_eq!(out.report.dropped_source_ids, vec!["chunk-invented", "doc-1"]);
    assert_eq!(out.sections[0].source_ids, vec!["chunk-aaa"]);
    let c = &out.sections[0].citations[0];
    assert!(!c.exact);
    assert_eq!((c.char_start, c.char_end), (0, 96));
    assert_eq!(out.report.unlocated_quotes, 1);
}

#[tokio::test]
async fn invalid_json_twice_falls_back_to_extractive_or_fails() {
    let (url, server) = serve(vec![Reply::Content("Doanh thu tăng 12,4% (I forgot the JSON).".into())]).await;
    let out = answer_question(Some(&client(&url, 5000)), LlmFallback::Extractive, QUESTION, &[], &chunks()).await.unwrap();
    assert_eq!(server.calls.load(Ordering::SeqCst), 2, "one retry for invalid JSON");
    assert_eq!(out.mode, AnswerMode::Extractive);
    assert!(out.llm_error.as_deref().unwrap().contains("not JSON"));
    assert_eq!(out.usage.as_ref().unwrap().total_tokens, 300, "both calls are counted");
    assert!(out.sections[0].citations[0].exact);
    let (url, _) = serve(vec![Reply::Content("not json".into())]).await;
    let err = answer_question(Some(&client(&url, 5000)), LlmFallback::Fail, QUESTION, &[], &chunks()).await.unwrap_err();
    assert!(err.contains("not JSON"), "{err}");
}

#[tokio::test]
async fn rate_limited_then_success() {
    let (url, server) = serve(vec![Reply::Status(429), Reply::Status(503), Reply::Content(answer_json(&["chunk-aaa"], "12,4%"))]).await;
    let out = answer_question(Some(&client(&url, 5000)), LlmFallback::Fail, QUESTION, &[], &chunks()).await.unwrap();
    assert_eq!(server.calls.load(Ordering::SeqCst), 3);
    assert_eq!(out.mode, AnswerMode::Llm);
}

#[tokio::test]
async fn timeouts_fall_back_or_fail() {
    let (url, server) = serve(vec![Reply::Sleep(Duration::from_secs(5))]).await;
    let out = answer_question(Some(&client(&url, 200)), LlmFallback::Extractive, QUESTION, &[], &chunks()).await.unwrap();
    assert_eq!(server.calls.load(Ordering::SeqCst), 3, "first try and two retries");
    assert_eq!(out.mode, AnswerMode::Extractive);
    assert!(out.llm_error.as_deref().unwrap().contains("timed out"));
    let err = answer_question(Some(&client(&url, 200)), LlmFallback::Fail, QUESTION, &[], &chunks()).await.unwrap_err();
    assert!(err.contains("unavailable"), "{err}");
}

#[tokio::test]
async fn a_bad_request_is_not_retried() {
    let (url, server) = serve(vec![Reply::Status(400)]).await;
    let err = answer_question(Some(&client(&url, 5000)), LlmFallback::Fail, QUESTION, &[], &chunks()).await.unwrap_err();
    assert_eq!(server.calls.load(Ordering::SeqCst), 1);
    assert!(err.contains("400"), "{err}");
}

#[tokio::test]
async fn nothing_retrieved_means_no_answer_without_citations() {
    let (url, server) = serve(vec![Reply::Content(answer_json(&["chunk-aaa"], "x"))]).await;
    let out = answer_question(Some(&client(&url, 5000)), LlmFallback::Extractive, QUESTION, &[], &[]).await.unwrap();
    assert_eq!(out.mode, AnswerMode::NoAnswer);
    assert!(out.citations().is_empty());
    assert_eq!(server.calls.load(Ordering::SeqCst), 0);
    let out = answer_question(None, LlmFallback::Extractive, "What about quantum gravity?", &[], &chunks()).await.unwrap();
    assert_eq!(out.mode, AnswerMode::NoAnswer);
    assert_eq!(out.text(), "The documents hold no answer to this question.");
}

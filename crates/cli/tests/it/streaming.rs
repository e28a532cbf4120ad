//! A streamed answer through the real pipeline and API: the conversation's
//! event stream carries the text as the model writes it (`message.delta`),
//! and killing `run all` in the middle of the stream still ends in exactly
//! one answer: one AnswerProduced, one done message with the text once,
//! one final `message.status_updated` on the stream of the restarted server.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::json;

use crate::api_client::*;
use crate::common::*;

const ANSWER_TEXT: &str = "Ngọn hải đăng đứng trên vách đá granite phía trên bến cảng, và người gác thắp đèn mỗi tối lúc hoàng hôn.";

/// Streams an answer citing the prompt's first evidence sentence, three
/// characters every 40 ms (about 3 s in all), like a slow local model.
async fn chat(State(calls): State<Arc<AtomicUsize>>, Json(body): Json<serde_json::Value>) -> Response {
    calls.fetch_add(1, Ordering::SeqCst);
    let evidence = body["messages"][1]["content"].as_str().unwrap_or_default();
    let id = evidence.lines().find(|l| l.starts_with("[S")).and_then(|l| l.split(']').next()).unwrap_or("[S1").trim_start_matches('[');
    let is_check = body["response_format"]["json_schema"]["schema"]["required"] == json!(["answers"]);
    let content = if is_check {
        json!({"answers": true}).to_string()
    } else {
        json!({"answerable": true, "sections": [{"text": ANSWER_TEXT, "cites": [id]}]}).to_string()
    };
    let chars: Vec<char> = content.chars().collect();
    let mut events: Vec<String> = chars
        .chunks(3)
        .map(|c| {
            let piece: String = c.iter().collect();
            format!("data: {}\n\n", json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": piece}}]}))
        })
        .collect();
    events.push(format!(
        "data: {}\n\n",
        json!({"choices": [], "usage": {"prompt_tokens": 90, "completion_tokens": 40, "total_tokens": 130}})
    ));
    events.push("data: [DONE]\n\n".into());
    let stream = futures::stream::unfold(events.into_iter(), |mut it| async move {
        let next = it.next()?;
        tokio::time::sleep(Duration::from_millis(40)).await;
        Some((Ok::<_, std::io::Error>(next), it))
    });
    Response::builder().header("content-type", "text/event-stream").body(Body::from_stream(stream)).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streamed_answer_survives_a_kill_mid_stream_as_exactly_one_answer() {
    let calls = Arc::new(AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let llm = format!("http://{}/v1", listener.local_addr().unwrap());
    let app = Router::new().route("/v1/chat/completions", post(chat)).with_state(calls.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let t = TestEnv::new().await;
    let env = [("ANSWER_LLM_BASE_URL", llm.as_str()), ("ANSWER_LLM_MODEL", "slow-llm"), ("ANSWER_LLM_API_KEY", "k")];
    let mut first = t.spawn(&["run", "all"], &env);
    let api = Api::new(first.api_port);
    api.wait_ready().await;
    let alice = token(&t, "alice").await;
    let (_, ws) = api.post("/v1/workspaces", &alice, json!({"name": "Hải đăng"})).await;
    let ws = ws["id"].as_str().unwrap().to_string();
    let text = "Ngọn hải đăng đứng trên vách đá granite phía trên bến cảng.\n\nNgười gác thắp đèn mỗi tối lúc hoàng hôn.\n";
    let (_, doc) = api.upload(&ws, &alice, "hai-dang.txt", "text/plain", text.as_bytes().to_vec()).await;
    let doc = doc["document_id"].as_str().unwrap().to_string();
    wait_until("the document to be ingested", Duration::from_secs(120), || async {
        api.get(&format!("/v1/workspaces/{ws}/documents/{doc}"), &alice).await.1["status"] == "ingested"
    })
    .await;
    let (_, conv) = api.post(&format!("/v1/workspaces/{ws}/conversations"), &alice, json!({"title": "stream"})).await;
    let conv = conv["id"].as_str().unwrap().to_string();
    let events_path = format!("/v1/workspaces/{ws}/conversations/{conv}/events");
    let mut events = open_events(&api, &events_path, &alice, None).await;
    let (_, posted) =
        api.post(&format!("/v1/workspaces/{ws}/conversations/{conv}/messages"), &alice, json!({"content": "Hải đăng ở đâu?"})).await;
    let assistant = posted["assistant_message"]["id"].as_str().unwrap().to_string();

    // The text arrives while it is written: a delta with part of it.
    let partial = loop {
        let e = next_event(&mut events, Duration::from_secs(90)).await;
        assert_ne!(e.event, "message.status_updated", "the answer came before any delta: {:?}", e.data);
        if e.event == "message.delta" && e.data["message_id"] == assistant.as_str() {
            let so_far = e.data["sections"][0]["text"].as_str().unwrap_or_default().to_string();
            if !so_far.is_empty() {
                break so_far;
            }
        }
    };
    assert!(ANSWER_TEXT.starts_with(&partial) && partial.len() < ANSWER_TEXT.len(), "partial text: {partial:?}");

    // Killed mid-stream, started again: the question is answered again.
    first.sigkill().await;
    let second = t.spawn(&["run", "all"], &env);
    let api = Api::new(second.api_port);
    api.wait_ready().await;
    let mut events = open_events(&api, &events_path, &alice, None).await;
    let done = loop {
        let e = next_event(&mut events, Duration::from_secs(120)).await;
        if e.event == "message.status_updated" && e.data["id"] == assistant.as_str() {
            break e;
        }
    };
    assert_eq!(done.data["status"], "done", "{}", done.data);
    assert_eq!(done.data["content"], ANSWER_TEXT);
    assert_eq!(done.data["abstained"], false);
    let cited = done.data["metadata"]["citations"][0]["text"].as_str().unwrap();
    assert_eq!(cited, "Ngọn hải đăng đứng trên vách đá granite phía trên bến cảng.");
    assert!(calls.load(Ordering::SeqCst) >= 3, "the restarted answerer asked the model again (and checked the answer)");

    // No second final event for it on the stream...
    let more = tokio::time::timeout(Duration::from_secs(3), async {
        loop {
            match events.recv().await {
                Some(e) if e.event == "message.status_updated" && e.data["id"] == assistant.as_str() => return Some(e),
                Some(_) => continue,
                None => return None,
            }
        }
    })
    .await;
    assert!(!matches!(more, Ok(Some(_))), "a second final event: {more:?}");
    // ...one assistant message with the text once, one AnswerProduced.
    let messages = rag_store::messages::list(&t.pool, &ws, conv.parse().unwrap()).await.unwrap();
    let rows: Vec<(String, String, String)> = messages.into_iter().map(|m| (m.role, m.status.as_str().to_string(), m.content)).collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!((rows[1].0.as_str(), rows[1].1.as_str(), rows[1].2.as_str()), ("assistant", "done", ANSWER_TEXT));
    let topic = t.topics().of(rag_events::EventType::AnswerProduced);
    let produced = read_all(&t.env["KAFKA_BROKERS"], &topic).await;
    assert_eq!(produced.len(), 1, "exactly one AnswerProduced");
    drop(second);
    t.cleanup().await;
}

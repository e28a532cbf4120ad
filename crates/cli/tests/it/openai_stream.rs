//! A streamed chat reply whose draft the check takes back, through the
//! real pipeline and the OpenAI-compatible endpoint: a plain client (it
//! only appends `delta.content`) ends with the final text and nothing
//! else. A two-part question's first part passes its check and is sent as
//! soon as it is confirmed, before the last chunk; the second part's
//! draft is held back by its check and never sent; the reply ends with
//! the parts the documents do not answer and the sources list.

use std::time::Duration;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::api_client::*;
use crate::common::*;

const LIGHTHOUSE: &str = "Ngọn hải đăng đứng trên vách đá granite phía trên bến cảng.";
const DRAFT: &str = "Người gác thắp đèn lúc bình minh mỗi ngày.";

/// The sentence of the evidence block that contains `words`, as `(id, text)`.
fn evidence_line<'a>(evidence: &'a str, words: &str) -> Option<(&'a str, &'a str)> {
    let line = evidence.lines().find(|l| l.starts_with("[S") && l.contains(words))?;
    let (id, text) = line.split_once("] ")?;
    Some((id.trim_start_matches('['), text))
}

/// Answers each part from its evidence, slowly (a local model's pace),
/// and checks: the lighthouse's place passes, the keeper's hour (a draft
/// that says dawn where the documents say dusk) does not.
async fn llm(Json(body): Json<Value>) -> Response {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().and_then(|m| m["content"].as_str()).unwrap_or_default().to_string();
    let is_check = body["response_format"]["json_schema"]["schema"]["required"] == json!(["answers"]);
    let content = if body.get("response_format").is_none() {
        last.clone()
    } else if is_check {
        let question = last.lines().find_map(|l| l.strip_prefix("Question: ")).unwrap_or_default();
        json!({"answers": !question.contains("thắp đèn")}).to_string()
    } else {
        let evidence = messages.get(1).and_then(|m| m["content"].as_str()).unwrap_or_default();
        let (words, text) = if last.contains("thắp đèn") { ("thắp đèn", DRAFT) } else { ("hải đăng", LIGHTHOUSE) };
        let id = evidence_line(evidence, words).or_else(|| evidence_line(evidence, "")).map_or("S1", |(id, _)| id);
        json!({"answerable": true, "sections": [{"text": text, "cites": [id]}]}).to_string()
    };
    if body["stream"] != true {
        return Json(json!({
            "id": "x", "object": "chat.completion", "model": "slow-llm",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 90, "completion_tokens": 40, "total_tokens": 130}
        }))
        .into_response();
    }
    let chars: Vec<char> = content.chars().collect();
    let mut events: Vec<String> = chars
        .chunks(4)
        .map(|c| {
            let piece: String = c.iter().collect();
            format!("data: {}\n\n", json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": piece}}]}))
        })
        .collect();
    events.push("data: [DONE]\n\n".into());
    let stream = futures::stream::unfold(events.into_iter(), |mut it| async move {
        let next = it.next()?;
        tokio::time::sleep(Duration::from_millis(25)).await;
        Some((Ok::<_, std::io::Error>(next), it))
    });
    Response::builder().header("content-type", "text/event-stream").body(Body::from_stream(stream)).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plain_chat_client_never_receives_a_draft_the_check_takes_back() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, Router::new().route("/v1/chat/completions", post(llm))).await.unwrap() });
    let t = TestEnv::new().await;
    let env = [("ANSWER_LLM_BASE_URL", base.as_str()), ("ANSWER_LLM_MODEL", "slow-llm"), ("ANSWER_LLM_API_KEY", "k")];
    let _all = t.spawn(&["run", "all"], &env);
    let api = Api::new(_all.api_port);
    api.wait_ready().await;
    let alice = token(&t, "alice").await;
    let (_, ws) = api.post("/v1/workspaces", &alice, json!({"name": "Hải đăng"})).await;
    let ws = ws["id"].as_str().unwrap().to_string();
    let text = format!("{LIGHTHOUSE}\n\nNgười gác thắp đèn mỗi tối lúc hoàng hôn.\n");
    let (_, doc) = api.upload(&ws, &alice, "hai-dang.txt", "text/plain", text.into_bytes()).await;
    let doc = doc["document_id"].as_str().unwrap().to_string();
    wait_until("the document to be ingested", Duration::from_secs(120), || async {
        api.get(&format!("/v1/workspaces/{ws}/documents/{doc}"), &alice).await.1["status"] == "ingested"
    })
    .await;
    let (_, key) = api.post("/v1/keys", &alice, json!({"name": "plain client"})).await;
    let key = key["secret"].as_str().unwrap().to_string();

    let resp = api
        .http
        .post(format!("{}/v1/chat/completions", api.base))
        .bearer_auth(&key)
        .json(&json!({"model": ws, "stream": true,
                      "messages": [{"role": "user", "content": "Ngọn hải đăng ở đâu? Người gác thắp đèn lúc nào?"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body = tokio::time::timeout(Duration::from_secs(120), resp.text()).await.expect("the stream ends").unwrap();
    let data: Vec<&str> = body.split("\n\n").filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: "))).collect();
    assert_eq!(data.last(), Some(&"[DONE]"), "{body}");
    let chunks: Vec<Value> = data[..data.len() - 1].iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    let pieces: Vec<&str> = chunks.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).filter(|p| !p.is_empty()).collect();
    let accumulated: String = pieces.concat();

    // The first part came as soon as its check passed, before the last chunk.
    assert_eq!(pieces.first().copied(), Some(format!("{LIGHTHOUSE} [1]").as_str()), "{pieces:?}");
    assert!(pieces.len() >= 2, "the confirmed part came in a chunk of its own: {pieces:?}");
    // The draft the check held back was never sent, nor a replacement rule.
    assert!(!accumulated.contains("bình minh") && !accumulated.contains("---"), "{accumulated}");
    // What the client holds is the final text: the part, what the documents
    // do not answer, the sources.
    let last = chunks.iter().rev().find(|c| c["choices"][0]["finish_reason"] == "stop").unwrap();
    let citations = last["choices"][0]["delta"]["citations"].as_array().unwrap();
    assert_eq!(citations.len(), 1, "{last}");
    assert_eq!(citations[0]["text"], LIGHTHOUSE);
    let expected = format!(
        "{LIGHTHOUSE} [1]\n\nTài liệu của bạn không đề cập đến: Người gác thắp đèn lúc nào?\n\n**Nguồn**\n\n- [1] hai-dang.txt: “{LIGHTHOUSE}” ([mở]({}))",
        citations[0]["url"].as_str().unwrap()
    );
    assert_eq!(accumulated, expected);
    t.cleanup().await;
}

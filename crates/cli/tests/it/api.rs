//! The HTTP API over real HTTP against the real stack: the full flow
//! (upload -> ingested -> ask -> the SSE stream delivers the answer -> the
//! raw text holds every cited span), and the document status stream.
//! The access rules are in `api_access`.

use std::time::Duration;

use crate::api_client::*;
use crate::app::TestApp;
use crate::common::*;
use rag_app::run::StageName;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const HANOI: &str = "# Hà Nội\n\nHà Nội là thủ đô của Việt Nam. Thành phố nằm bên bờ sông Hồng.\n\nDân số Hà Nội khoảng tám triệu người.\n";
const LIGHTHOUSE: &str =
    "The lighthouse keeper lit the lamp every evening at dusk.\n\nThe lighthouse stands on a granite cliff above the harbour.\n";

#[tokio::test]
async fn upload_ingest_ask_and_the_event_stream_delivers_cited_answers() {
    let t = TestEnv::new().await;
    let run = TestApp::spawn(&t, &[]).await;
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let alice = token(&t, "alice").await;

    let (s, ws) = api.post("/v1/workspaces", &alice, json!({"name": "Thư viện"})).await;
    assert_eq!(s, StatusCode::CREATED, "{ws}");
    let ws = ws["id"].as_str().unwrap().to_string();
    let mut docs = Vec::new();
    for (name, ct, text) in [("ha-noi.md", "text/markdown", HANOI), ("lighthouse.txt", "application/octet-stream", LIGHTHOUSE)] {
        let (s, v) = api.upload(&ws, &alice, name, ct, text.as_bytes().to_vec()).await;
        assert_eq!(s, StatusCode::ACCEPTED, "{v}");
        assert_eq!(v["status"], "uploaded");
        assert_eq!(v["filename"], name);
        docs.push(v["document_id"].as_str().unwrap().to_string());
    }
    // A generic type is replaced by the one the name implies.
    let (_, d) = api.get(&format!("/v1/workspaces/{ws}/documents/{}", docs[1]), &alice).await;
    assert_eq!(d["content_type"], "text/plain");
    for id in &docs {
        wait_until("the document to be ingested", Duration::from_secs(120), || async {
            api.get(&format!("/v1/workspaces/{ws}/documents/{id}"), &alice).await.1["status"] == "ingested"
        })
        .await;
    }
    let (s, list) = api.get(&format!("/v1/workspaces/{ws}/documents"), &alice).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(list["documents"].as_array().unwrap().len(), 2);

    let (s, conv) = api.post(&format!("/v1/workspaces/{ws}/conversations"), &alice, json!({"title": "Hỏi đáp"})).await;
    assert_eq!(s, StatusCode::CREATED, "{conv}");
    let conv = conv["id"].as_str().unwrap().to_string();
    let events_path = format!("/v1/workspaces/{ws}/conversations/{conv}/events");
    let mut events = open_events(&api, &events_path, &alice, None).await;

    let (s, posted) = api
        .post(&format!("/v1/workspaces/{ws}/conversations/{conv}/messages"), &alice, json!({"content": "Thủ đô của Việt Nam là gì?"}))
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{posted}");
    assert_eq!(posted["user_message"]["role"], "user");
    assert_eq!(posted["user_message"]["content"], "Thủ đô của Việt Nam là gì?");
    // Pending as a rule; the read-back may already see the answer when the
    // extractive answerer was quicker than the response.
    assert!(matches!(posted["assistant_message"]["status"].as_str(), Some("pending" | "done")), "{posted}");
    let assistant = posted["assistant_message"]["id"].as_str().unwrap().to_string();

    let event = next_event(&mut events, Duration::from_secs(90)).await;
    assert_eq!(event.event, "message.status_updated");
    assert_eq!(event.data["id"], assistant.as_str());
    assert_eq!(event.data["status"], "done", "{}", event.data);
    let citations = event.data["metadata"]["citations"].as_array().unwrap().clone();
    assert!(!citations.is_empty(), "the answer cites: {}", event.data);
    assert!(event.data["metadata"]["sections"].as_array().unwrap().iter().all(|s| s["text"].is_string()));
    for c in &citations {
        let doc = c["document_id"].as_str().unwrap();
        assert_eq!(doc, docs[0], "the Vietnamese question is answered from the Hà Nội document: {c}");
        let (s, raw) = api.get(&format!("/v1/workspaces/{ws}/documents/{doc}/raw-text"), &alice).await;
        assert_eq!(s, StatusCode::OK, "{raw}");
        assert_eq!(raw["document_id"], doc);
        assert_eq!(raw["workspace_id"], ws.as_str());
        let segments = raw["segments"].as_array().unwrap();
        let text: String = segments.iter().map(|s| s["text"].as_str().unwrap()).collect();
        let (start, end) = (c["char_start"].as_u64().unwrap() as usize, c["char_end"].as_u64().unwrap() as usize);
        assert!(start < end, "{c}");
        let span: String = text.chars().skip(start).take(end - start).collect();
        assert_eq!(span, c["text"].as_str().unwrap(), "the raw text holds the cited span");
        let seg = &segments[c["segment_index"].as_u64().unwrap() as usize];
        assert!(seg["char_start"].as_u64().unwrap() as usize <= start && start < seg["char_end"].as_u64().unwrap() as usize);
        assert_eq!(seg["page_idx"], c["page_idx"]);
    }
    let (s, m) = api.get(&format!("/v1/workspaces/{ws}/conversations/{conv}/messages/{assistant}"), &alice).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(m["status"], "done");
    assert_eq!(m["metadata"]["citations"], Value::Array(citations.clone()));

    // Reconnect-safe: resuming after the delivered event skips it and
    // delivers only the next answer; a fresh stream replays history.
    drop(events);
    let mut resumed = open_events(&api, &events_path, &alice, Some(&event.id)).await;
    let (s, second) = api
        .post(
            &format!("/v1/workspaces/{ws}/conversations/{conv}/messages"),
            &alice,
            json!({"content": "Where does the lighthouse stand?", "top_k": 3}),
        )
        .await;
    assert_eq!(s, StatusCode::ACCEPTED);
    let next = next_event(&mut resumed, Duration::from_secs(90)).await;
    assert_eq!(next.data["id"], second["assistant_message"]["id"], "resumed after the first answer");
    let mut fresh = open_events(&api, &events_path, &alice, None).await;
    assert_eq!(next_event(&mut fresh, Duration::from_secs(10)).await.id, event.id);
    assert_eq!(next_event(&mut fresh, Duration::from_secs(10)).await.id, next.id);

    let (s, c) = api.get(&format!("/v1/workspaces/{ws}/conversations/{conv}"), &alice).await;
    assert_eq!(s, StatusCode::OK);
    let roles: Vec<&str> = c["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    let (_, convs) = api.get(&format!("/v1/workspaces/{ws}/conversations"), &alice).await;
    assert_eq!(convs["conversations"][0]["title"], "Hỏi đáp");

    // Deleting leaves the listing (and the document's routes) at once.
    let (s, _, _) = api.call(Method::DELETE, &format!("/v1/workspaces/{ws}/documents/{}", docs[1]), Some(&alice), None).await;
    assert_eq!(s, StatusCode::ACCEPTED);
    assert_eq!(api.get(&format!("/v1/workspaces/{ws}/documents/{}", docs[1]), &alice).await.0, StatusCode::NOT_FOUND);
    assert_eq!(api.get(&format!("/v1/workspaces/{ws}/documents"), &alice).await.1["documents"].as_array().unwrap().len(), 1);

    // The API's own metrics are recorded beside the stages', and served on
    // the metrics port only: the public port has no /metrics.
    let metrics = run.metrics();
    assert!(metrics.contains("rag_http_requests_total"), "{metrics}");
    assert!(metrics.contains("rag_stage_events_in_total"));
    let (s, _, _) = api.call(Method::GET, "/metrics", None, None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (_, ready, _) = api.call(Method::GET, "/readyz", None, None).await;
    assert_eq!(ready["checks"]["postgres"], "ok", "{ready}");
    run.stop().await;
    t.cleanup().await;
}

/// Collects `document.status_updated` events until `id` reaches `status`;
/// returns the statuses seen for it and the id of the last event.
async fn statuses_until(events: &mut tokio::sync::mpsc::UnboundedReceiver<Sse>, id: &str, status: &str) -> (Vec<String>, String) {
    let mut seen = Vec::new();
    loop {
        let e = next_event(events, Duration::from_secs(120)).await;
        assert_eq!(e.event, "document.status_updated", "{e:?}");
        assert!(!e.id.is_empty(), "every status event has an id to resume from");
        if e.data["id"] == id {
            let s = e.data["status"].as_str().unwrap().to_string();
            let done = s == status;
            seen.push(s);
            if done {
                return (seen, e.id);
            }
        }
    }
}

#[tokio::test]
async fn the_document_stream_pushes_each_status_and_a_resumed_stream_misses_none() {
    let t = TestEnv::new().await;
    // The API and the projector first: an upload stays `uploaded` until the
    // other stages start. With the whole pipeline running, parsing can end
    // within one poll of the stream, which then pushes `parsed` first (its
    // rows are the documents as they are, a step may be passed; seen in CI).
    let run = TestApp::spawn_stages(&t, StageName::Api, &[]).await;
    let projector = TestApp::spawn_stages(&t, StageName::Projector, &[]).await;
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let (alice, bob) = (token(&t, "alice").await, token(&t, "bob").await);
    let (_, ws) = api.post("/v1/workspaces", &alice, json!({"name": "status"})).await;
    let ws = ws["id"].as_str().unwrap().to_string();
    let path = format!("/v1/workspaces/{ws}/documents/events");
    assert_eq!(api.call(Method::GET, &path, Some(&bob), None).await.0, StatusCode::NOT_FOUND, "only the owner sees it");

    // A fresh stream says where it starts before anything else.
    let mut events = open_events(&api, &path, &alice, None).await;
    let ready = next_event(&mut events, Duration::from_secs(10)).await;
    assert_eq!(ready.event, "ready");
    assert!(ready.id.parse::<i64>().is_ok(), "{ready:?}");
    let (_, a) = api.upload(&ws, &alice, "ha-noi.md", "text/markdown", HANOI.as_bytes().to_vec()).await;
    let a = a["document_id"].as_str().unwrap().to_string();
    let (mut seen, _) = statuses_until(&mut events, &a, "uploaded").await;
    let mut rest = Vec::new();
    for stage in [StageName::Parser, StageName::Chunker, StageName::Indexer] {
        rest.push(TestApp::spawn_stages(&t, stage, &[]).await);
    }
    let (more, last) = statuses_until(&mut events, &a, "ingested").await;
    seen.extend(more);
    // Pushed in pipeline order, never back (a step may be passed between
    // two reads; a status may repeat: the DocumentIngested projected before
    // its DocumentChunked changes the active chunking version while the
    // status waits at `parsed`, and that change is pushed too; seen in CI).
    let order = ["uploaded", "parsed", "chunked", "ingested"];
    let ranks: Vec<usize> = seen.iter().map(|s| order.iter().position(|o| o == s).unwrap()).collect();
    assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    assert_eq!(seen[0], "uploaded", "the upload itself is pushed: {seen:?}");

    // Away while a second document goes through the whole pipeline: the
    // resumed stream brings it.
    drop(events);
    let (_, b) = api.upload(&ws, &alice, "lighthouse.txt", "text/plain", LIGHTHOUSE.as_bytes().to_vec()).await;
    let b = b["document_id"].as_str().unwrap().to_string();
    wait_until("the second document to be ingested", Duration::from_secs(120), || async {
        api.get(&format!("/v1/workspaces/{ws}/documents/{b}"), &alice).await.1["status"] == "ingested"
    })
    .await;
    let mut resumed = open_events(&api, &path, &alice, Some(&last)).await;
    let (seen, _) = statuses_until(&mut resumed, &b, "ingested").await;
    assert_eq!(seen.last().map(String::as_str), Some("ingested"));
    // A deletion is a status too.
    let (s, _, _) = api.call(Method::DELETE, &format!("/v1/workspaces/{ws}/documents/{a}"), Some(&alice), None).await;
    assert_eq!(s, StatusCode::ACCEPTED);
    statuses_until(&mut resumed, &a, "deleted").await;
    // An id this stream never gave is refused, not guessed at.
    let refused =
        api.http.get(format!("{}{path}", api.base)).bearer_auth(&alice).header("Last-Event-ID", "not-an-id").send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert_eq!(refused.json::<Value>().await.unwrap()["error"]["code"], "invalid_last_event_id");
    for app in rest.into_iter().chain([projector, run]) {
        app.stop().await;
    }
    t.cleanup().await;
}

//! The dashboards against a live process: every metric a Grafana panel
//! queries is exported by `rag-engine run all` once documents, questions
//! (answered by an LLM speaking the chat-completions protocol) and HTTP
//! requests have gone through.

use std::time::Duration;

use crate::app::TestApp;
use crate::common::*;
use axum::routing::post;
use axum::{Json, Router};

/// A chat-completions endpoint citing the first chunk of the prompt.
async fn chat(Json(body): Json<serde_json::Value>) -> Json<serde_json::Value> {
    let context = body["messages"][1]["content"].as_str().unwrap_or_default();
    let id = context.lines().find(|l| l.starts_with("[S")).and_then(|l| l.split(']').next()).unwrap_or_default().trim_start_matches('[');
    let is_check = body["response_format"]["json_schema"]["schema"]["required"] == serde_json::json!(["answers"]);
    let answer = if is_check {
        serde_json::json!({"answers": true})
    } else {
        serde_json::json!({"answerable": true, "sections": [{"text": "The lighthouse stands on a cliff.", "cites": [id]}]})
    };
    Json(serde_json::json!({
        "id": "cmpl-1", "object": "chat.completion", "model": "stub-llm",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer.to_string()}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
    }))
}

/// Metric names a dashboard expression uses (histogram series reduced to their base name).
fn queried_metrics(dashboard: &serde_json::Value) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for p in dashboard["panels"].as_array().unwrap() {
        for target in p["targets"].as_array().unwrap() {
            for word in target["expr"].as_str().unwrap().split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if word.starts_with("rag_") {
                    names.insert(word.to_string());
                }
            }
        }
    }
    names
}

/// The metrics the dashboard queries that `run` does not export, waiting
/// up to 20 s (lag gauges are refreshed every LAG_INTERVAL_SECS, 1 s in
/// tests).
async fn dashboard_metrics_missing(run: &TestApp) -> std::collections::BTreeSet<String> {
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo_root().join("dashboards/rag-engine-stages.json")).unwrap()).unwrap();
    let wanted = queried_metrics(&dashboard);
    assert!(wanted.len() >= 12, "{wanted:?}");
    let mut missing = wanted;
    for _ in 0..100 {
        let text = run.metrics();
        missing.retain(|m| !text.lines().any(|l| l.starts_with(m.as_str()) && l[m.len()..].starts_with(['{', ' '])));
        if missing.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    missing
}

#[tokio::test]
async fn every_metric_the_dashboard_queries_is_exported() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let llm = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, Router::new().route("/v1/chat/completions", post(chat))).await });
    let t = TestEnv::new().await.with_env(&[
        ("ANSWER_LLM_BASE_URL", &llm),
        ("ANSWER_LLM_MODEL", "stub-llm"),
        ("ANSWER_LLM_API_KEY", "test-key"),
    ]);
    let run = TestApp::spawn(&t, &[]).await;
    let ws = t.workspace.clone();
    t.upload_files(&ws, &[("lighthouse.txt", "The lighthouse stands on a granite cliff above the harbour.")]).await;
    wait_until("the document ingested", Duration::from_secs(120), || async { t.ingested_count().await == 1 }).await;
    let (ok, out, err) = t.run(&["ask", "Where does the lighthouse stand?", "--workspace", &ws, "--json"]).await;
    assert!(ok, "{err}");
    assert!(out.contains("\"mode\": \"llm\""), "{out}");
    // A poison message: dead-lettered by the parser (and counted).
    let poison = t.producer();
    poison.send_raw(&t.topics().of(rag_events::EventType::DocumentUploaded), Some(b"poison"), b"not avro", &[]).await.unwrap();
    wait_until("the dead letter", Duration::from_secs(60), || async {
        sum_metric(&run.metrics(), "rag_stage_dead_letters_total", &["stage=\"parser\""]) >= 1.0
    })
    .await;
    let health = reqwest::get(format!("http://127.0.0.1:{}/healthz", run.api_port)).await.unwrap();
    assert!(health.status().is_success());

    let missing = dashboard_metrics_missing(&run).await;
    assert!(missing.is_empty(), "the dashboard queries metrics this process does not export: {missing:?}");
    let text = run.metrics();
    assert!(sum_metric(&text, "rag_llm_tokens_total", &["kind=\"prompt\""]) >= 120.0);
    assert!(sum_metric(&text, "rag_question_to_answer_seconds_count", &[]) >= 1.0);
    assert!(sum_metric(&text, "rag_upload_to_ingested_seconds_count", &[]) >= 1.0);
    let dlq_topic = format!("topic=\"{}\"", rag_events::Topics::dlq_of(&t.topics().of(rag_events::EventType::DocumentUploaded)));
    wait_until("the dead-letter topic's size exported", Duration::from_secs(30), || async {
        sum_metric(&run.metrics(), "rag_dlq_messages", &[&dlq_topic]) >= 1.0
    })
    .await;
    run.stop().await;
    t.cleanup().await;
}

/// A process that has done nothing yet exports every series a dashboard
/// panel queries, at zero: a new Grafana shows 0, not "No data". In the
/// default configuration (docker-compose's: no answer LLM), so the token
/// counters are there without a model too.
#[tokio::test]
async fn a_fresh_process_exports_every_queried_metric_at_zero() {
    let t = TestEnv::new().await;
    assert!(!t.env.contains_key("ANSWER_LLM_MODEL"), "the default configuration has no LLM");
    let run = TestApp::spawn(&t, &[]).await;
    let missing = dashboard_metrics_missing(&run).await;
    assert!(missing.is_empty(), "a fresh process does not export: {missing:?}");
    let text = run.metrics();
    for (series, labels) in [
        ("rag_stage_dead_letters_total", &["stage=\"parser\"", "reason=\"invalid_event\""][..]),
        ("rag_stage_processing_seconds_count", &["stage=\"indexer\""][..]),
        ("rag_upload_to_ingested_seconds_count", &[][..]),
        ("rag_question_to_answer_seconds_count", &["mode=\"llm\""][..]),
        ("rag_llm_tokens_total", &["model=\"none\"", "kind=\"prompt\""][..]),
        ("rag_http_requests_total", &["route=\"/v1/workspaces/{ws}/documents\"", "method=\"POST\""][..]),
    ] {
        let present = text.lines().any(|l| l.starts_with(series) && labels.iter().all(|want| l.contains(want)));
        assert!(present, "{series} {labels:?} missing");
        assert_eq!(sum_metric(&text, series, labels), 0.0, "{series} {labels:?} is not zero");
    }
    // The zero series is the one a request then counts (the same labels).
    let healthz = ["method=\"GET\"", "route=\"/healthz\"", "status=\"200\""];
    assert_eq!(sum_metric(&text, "rag_http_requests_total", &healthz), 0.0);
    let health = reqwest::get(format!("http://127.0.0.1:{}/healthz", run.api_port)).await.unwrap();
    assert!(health.status().is_success());
    let text = run.metrics();
    assert_eq!(sum_metric(&text, "rag_http_requests_total", &healthz), 1.0);
    assert_eq!(text.lines().filter(|l| l.starts_with("rag_http_requests_total") && l.contains("route=\"/healthz\"")).count(), 1);
    run.stop().await;
    t.cleanup().await;
}

//! The rerank client against a small server speaking the Cohere/Jina
//! `/v1/rerank` protocol, including its failure modes: every failure is an
//! error the retriever answers with the fused order, within the timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};

use crate::{RerankConfig, RerankError, Reranker};

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Scores each document by how many query words it holds.
    Ok,
    Slow,
    RateLimited,
    ServerError,
    Malformed,
    OutOfRange,
}

struct Server {
    mode: Mode,
    bodies: std::sync::Mutex<Vec<serde_json::Value>>,
}

async fn rerank(State(s): State<Arc<Server>>, headers: HeaderMap, Json(body): Json<serde_json::Value>) -> Response {
    s.bodies.lock().unwrap().push(body.clone());
    assert_eq!(headers.get("authorization").map(|v| v.to_str().unwrap()), Some("Bearer rk-test"));
    let query: Vec<String> = body["query"].as_str().unwrap().split_whitespace().map(str::to_lowercase).collect();
    let docs: Vec<String> = body["documents"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_lowercase()).collect();
    match s.mode {
        Mode::Slow => tokio::time::sleep(Duration::from_secs(5)).await,
        Mode::RateLimited => return (StatusCode::TOO_MANY_REQUESTS, [("retry-after", "1")], "slow down").into_response(),
        Mode::ServerError => return (StatusCode::INTERNAL_SERVER_ERROR, "model not loaded").into_response(),
        Mode::Malformed => return (StatusCode::OK, r#"{"results": [{"index": 0, "relev"#).into_response(),
        Mode::OutOfRange => return Json(serde_json::json!({"results": [{"index": 99, "relevance_score": 1.0}]})).into_response(),
        Mode::Ok => {}
    }
    let mut results: Vec<serde_json::Value> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| serde_json::json!({"index": i, "relevance_score": query.iter().filter(|w| d.contains(w.as_str())).count() as f64}))
        .collect();
    // Listed in index order, as some servers do: the client sorts.
    results.truncate(docs.len());
    Json(serde_json::json!({"model": "test-rerank", "results": results})).into_response()
}

async fn serve(mode: Mode) -> (String, Arc<Server>) {
    let state = Arc::new(Server { mode, bodies: Default::default() });
    let app = Router::new().route("/v1/rerank", post(rerank)).with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), state)
}

/// A reranker with the timeout `timeout`: short where a failure is
/// expected, ample where a loaded machine must not turn an answer into one.
fn reranker_with(base_url: &str, timeout: Duration) -> Reranker {
    Reranker::new(RerankConfig {
        base_url: base_url.to_string(),
        model: "test-rerank".into(),
        api_key: Some("rk-test".to_string().into()),
        timeout,
    })
    .unwrap()
}

fn reranker(base_url: &str) -> Reranker {
    reranker_with(base_url, Duration::from_secs(4))
}

fn docs() -> Vec<String> {
    ["Weather in Hue", "Revenue grew 12% in 2023", "Revenue in 2022"].iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn documents_come_back_best_first_and_the_request_speaks_the_protocol() {
    let (url, server) = serve(Mode::Ok).await;
    let order = reranker(&url).rerank("revenue 2023", &docs()).await.unwrap();
    assert_eq!(order.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [1, 2, 0]);
    assert_eq!(order[0].1, 2.0);
    let body = server.bodies.lock().unwrap()[0].clone();
    assert_eq!((body["model"].as_str(), body["top_n"].as_u64()), (Some("test-rerank"), Some(3)));
    assert_eq!(body["documents"], serde_json::json!(docs()));
    // Nothing to rank asks nothing.
    assert!(reranker(&url).rerank("q", &[]).await.unwrap().is_empty());
    assert_eq!(server.bodies.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn every_failure_is_an_error_within_the_timeout() {
    for (mode, expect) in [
        (Mode::Slow, "unavailable"),
        (Mode::RateLimited, "429"),
        (Mode::ServerError, "500"),
        (Mode::Malformed, "cannot be read"),
        (Mode::OutOfRange, "index 99"),
    ] {
        let (url, _server) = serve(mode).await;
        let started = Instant::now();
        let err = reranker_with(&url, Duration::from_millis(500)).rerank("revenue", &docs()).await.unwrap_err();
        assert!(err.to_string().contains(expect), "{err}");
        assert!(started.elapsed() < Duration::from_secs(3), "{err} took {:?}", started.elapsed());
    }
    // Nobody listening.
    let err = reranker_with("http://127.0.0.1:9/v1", Duration::from_millis(500)).rerank("revenue", &docs()).await.unwrap_err();
    assert!(matches!(err, RerankError::Unavailable(_)), "{err}");
}

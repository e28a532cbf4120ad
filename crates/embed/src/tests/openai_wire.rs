//! The OpenAI-compatible client against a small server speaking the real
//! wire protocol, including its failure modes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::{EmbedError, Embedder, InputConvention, InputKind, OpenAiConfig, OpenAiEmbedder};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};

#[derive(Clone, Copy)]
enum Mode {
    Ok,
    RateLimitedOnce,
    Malformed,
    Slow,
    WrongDimension,
    Unauthorized,
    Shuffled,
}

struct Server {
    mode: Mode,
    calls: AtomicUsize,
    /// Every request body, in order.
    bodies: std::sync::Mutex<Vec<serde_json::Value>>,
}

async fn embeddings(State(s): State<Arc<Server>>, headers: HeaderMap, Json(body): Json<serde_json::Value>) -> Response {
    let call = s.calls.fetch_add(1, Ordering::SeqCst);
    s.bodies.lock().unwrap().push(body.clone());
    assert_eq!(headers.get("authorization").unwrap(), "Bearer sk-test");
    assert_eq!(body["model"], "test-embed");
    let inputs: Vec<String> = body["input"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    let vector = |text: &str, dim: usize| -> Vec<f32> { (0..dim).map(|i| (text.len() + i) as f32).collect() };
    let dim = if matches!(s.mode, Mode::WrongDimension) { 3 } else { 4 };
    let mut data: Vec<serde_json::Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"object": "embedding", "index": i, "embedding": vector(t, dim)}))
        .collect();
    match s.mode {
        Mode::RateLimitedOnce if call == 0 => {
            return (StatusCode::TOO_MANY_REQUESTS, [("retry-after", "0")], r#"{"error":{"message":"rate limited"}}"#).into_response()
        }
        Mode::Malformed => return (StatusCode::OK, "{\"data\": [ {\"index\": 0, \"embedd").into_response(),
        Mode::Slow => tokio::time::sleep(Duration::from_secs(5)).await,
        Mode::Unauthorized => return (StatusCode::UNAUTHORIZED, r#"{"error":{"message":"bad key"}}"#).into_response(),
        Mode::Shuffled => data.reverse(),
        _ => {}
    }
    Json(serde_json::json!({"object": "list", "data": data, "model": "test-embed",
                            "usage": {"prompt_tokens": 3, "total_tokens": 3}}))
    .into_response()
}

async fn start(mode: Mode) -> (String, Arc<Server>) {
    let state = Arc::new(Server { mode, calls: AtomicUsize::new(0), bodies: Default::default() });
    let app = Router::new().route("/v1/embeddings", post(embeddings)).with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), state)
}

fn client(base_url: String) -> OpenAiEmbedder {
    OpenAiEmbedder::new(OpenAiConfig {
        base_url,
        model: "test-embed".into(),
        api_key: "sk-test".into(),
        dimension: 4,
        batch_size: 2,
        timeout: Duration::from_millis(500),
        max_retries: 2,
        retry_backoff: Duration::from_millis(10),
    })
    .unwrap()
}

fn texts() -> Vec<String> {
    vec!["a".into(), "bb".into(), "ccc".into()]
}

#[tokio::test]
async fn batches_in_order_and_normalised() {
    let (url, server) = start(Mode::Ok).await;
    let v = client(url).embed(&texts(), None).await.unwrap();
    assert_eq!(v.len(), 3);
    assert_eq!(server.calls.load(Ordering::SeqCst), 2, "batch size 2 -> 2 requests");
    for (i, vec) in v.iter().enumerate() {
        let norm: f32 = vec.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
        // Input i has length i+1: its raw vector starts at i+1.
        let raw: Vec<f32> = (0..4).map(|k| (i + 1 + k) as f32).collect();
        let rn = raw.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((vec[0] - raw[0] / rn).abs() < 1e-6);
    }
}

#[tokio::test]
async fn out_of_order_data_is_put_back_by_index() {
    let (url, _) = start(Mode::Shuffled).await;
    let v = client(url.clone()).embed(&texts(), None).await.unwrap();
    let (ok_url, _) = start(Mode::Ok).await;
    assert_eq!(v, client(ok_url).embed(&texts(), None).await.unwrap());
}

#[tokio::test]
async fn rate_limit_then_success() {
    let (url, server) = start(Mode::RateLimitedOnce).await;
    let v = client(url).embed(&texts()[..1], None).await.unwrap();
    assert_eq!(v.len(), 1);
    assert_eq!(server.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn malformed_json_is_retried_then_reported() {
    let (url, server) = start(Mode::Malformed).await;
    let err = client(url).embed(&texts()[..1], None).await.unwrap_err();
    assert!(matches!(err, EmbedError::Transient(ref m) if m.contains("malformed")), "{err}");
    assert_eq!(server.calls.load(Ordering::SeqCst), 3, "first try + 2 retries");
}

#[tokio::test]
async fn timeout_is_transient() {
    let (url, _) = start(Mode::Slow).await;
    let err = client(url).embed(&texts()[..1], None).await.unwrap_err();
    assert!(err.is_transient(), "{err}");
}

#[tokio::test]
async fn wrong_dimension_and_bad_key_are_permanent() {
    let (url, _) = start(Mode::WrongDimension).await;
    let err = client(url).embed(&texts()[..1], None).await.unwrap_err();
    assert!(matches!(err, EmbedError::Permanent(ref m) if m.contains("3 dimensions")), "{err}");
    let (url, server) = start(Mode::Unauthorized).await;
    let err = client(url).embed(&texts()[..1], None).await.unwrap_err();
    assert!(!err.is_transient() && err.to_string().contains("401"), "{err}");
    assert_eq!(server.calls.load(Ordering::SeqCst), 1, "no retry on 401");
}

#[tokio::test]
async fn unreachable_endpoint_is_transient() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let err = client(format!("http://127.0.0.1:{port}/v1")).embed(&texts()[..1], None).await.unwrap_err();
    assert!(err.is_transient());
}

fn config(base_url: String) -> OpenAiConfig {
    OpenAiConfig {
        base_url,
        model: "test-embed".into(),
        api_key: "sk-test".into(),
        dimension: 4,
        batch_size: 8,
        timeout: Duration::from_millis(500),
        max_retries: 0,
        retry_backoff: Duration::from_millis(10),
    }
}

#[tokio::test]
async fn input_conventions_reach_the_wire_and_the_index_identity() {
    let (url, server) = start(Mode::Ok).await;
    let texts = vec!["Doanh thu tăng 12,4%.".to_string()];

    let typed = Embedder::openai(config(url.clone()), InputConvention::InputType).unwrap();
    assert_eq!(typed.identity(), Some(("test-embed+input-type", 4)));
    typed.embed(&texts, InputKind::Query).await.unwrap();
    typed.embed(&texts, InputKind::Passage).await.unwrap();

    let prefixed = Embedder::openai(config(url.clone()), InputConvention::Prefix).unwrap();
    assert_eq!(prefixed.identity(), Some(("test-embed+prefix", 4)));
    prefixed.embed(&texts, InputKind::Query).await.unwrap();

    let plain = Embedder::openai(config(url), InputConvention::None).unwrap();
    assert_eq!(plain.identity(), Some(("test-embed", 4)));
    plain.embed(&texts, InputKind::Query).await.unwrap();

    let bodies = server.bodies.lock().unwrap().clone();
    assert_eq!(bodies[0]["input_type"], "query");
    assert_eq!(bodies[0]["input"][0], "Doanh thu tăng 12,4%.");
    assert_eq!(bodies[1]["input_type"], "passage");
    assert!(bodies[2].get("input_type").is_none());
    assert_eq!(bodies[2]["input"][0], "query: Doanh thu tăng 12,4%.");
    assert!(bodies[3].get("input_type").is_none());
    assert_eq!(bodies[3]["input"][0], "Doanh thu tăng 12,4%.");
}

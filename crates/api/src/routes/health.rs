//! Liveness, readiness, metrics, the OpenAPI document and the JSON 404.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::model::Health;
use crate::AppState;

/// The process is up.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health { status: "ok".into(), checks: Map::new() })
}

/// Broker, Postgres and object storage all answer.
#[utoipa::path(get, path = "/readyz", tag = "operations", responses((status = 200, body = Health), (status = 503, body = Health)))]
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    let deadline = state.config().ready_timeout;
    let outcome = |r: Result<Result<(), String>, tokio::time::error::Elapsed>| match r {
        Ok(Ok(())) => Value::from("ok"),
        Ok(Err(e)) => Value::from(e),
        Err(_) => Value::from(format!("no answer within {} ms", deadline.as_millis())),
    };
    let (postgres, broker, storage) = tokio::join!(
        tokio::time::timeout(deadline, async { rag_store::ping(state.pool()).await.map_err(|e| e.to_string()) }),
        tokio::time::timeout(deadline, async { state.producer().ping(deadline).await.map_err(|e| e.to_string()) }),
        tokio::time::timeout(deadline, async { state.blobs().ping().await.map_err(|e| e.to_string()) }),
    );
    let mut checks = Map::new();
    checks.insert("postgres".into(), outcome(postgres));
    checks.insert("broker".into(), outcome(broker));
    checks.insert("object_storage".into(), outcome(storage));
    let ready = checks.values().all(|v| v == "ok");
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(Health { status: if ready { "ready" } else { "unavailable" }.into(), checks }))
}

/// Prometheus metrics of this process (every stage it runs, and the API).
#[utoipa::path(get, path = "/metrics", tag = "operations", responses((status = 200, description = "Prometheus text format", content_type = "text/plain", body = String)))]
pub async fn metrics(State(state): State<AppState>) -> Response {
    match &state.0.metrics {
        Some(handle) => ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], handle.render()).into_response(),
        None => ApiError::new(StatusCode::NOT_FOUND, "not_found", "metrics are not recorded by this process").into_response(),
    }
}

pub async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route")
}

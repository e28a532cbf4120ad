//! Liveness, readiness and the JSON 404. Metrics are served on the
//! metrics port (`METRICS_ADDR`) only, not on this public one.

use axum::extract::State;
use axum::http::StatusCode;
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
    // Each check says ok or unavailable; why (hosts, errors) goes to the
    // log only: this port is public.
    let outcome = |what: &str, r: Result<Result<(), String>, tokio::time::error::Elapsed>| match r {
        Ok(Ok(())) => Value::from("ok"),
        Ok(Err(e)) => {
            tracing::warn!(check = what, error = %e, "readiness check failed");
            Value::from("unavailable")
        }
        Err(_) => {
            tracing::warn!(check = what, deadline_ms = deadline.as_millis() as u64, "readiness check did not answer in time");
            Value::from("unavailable")
        }
    };
    let (postgres, broker, storage) = tokio::join!(
        tokio::time::timeout(deadline, async { rag_store::ping(state.pool()).await.map_err(|e| e.to_string()) }),
        tokio::time::timeout(deadline, async { state.producer().ping(deadline).await.map_err(|e| e.to_string()) }),
        tokio::time::timeout(deadline, async { state.blobs().ping().await.map_err(|e| e.to_string()) }),
    );
    let mut checks = Map::new();
    checks.insert("postgres".into(), outcome("postgres", postgres));
    checks.insert("broker".into(), outcome("broker", broker));
    checks.insert("object_storage".into(), outcome("object_storage", storage));
    let ready = checks.values().all(|v| v == "ok");
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(Health { status: if ready { "ready" } else { "unavailable" }.into(), checks }))
}

pub async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route")
}

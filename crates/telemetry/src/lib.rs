//! Telemetry of rag-engine.
//!
//! - [`catalog`]: the one table of metrics (names, kinds, labels, help);
//!   `describe()` is generated from it, so it cannot drift.
//! - [`events`]: instrumentation as named events; each `emit()` logs and
//!   counts together. Code emits events, never raw metrics.
//! - [`install_metrics`] serves them for Prometheus; [`init_logs`] sets up
//!   structured logs.

use std::net::SocketAddr;

pub use metrics_exporter_prometheus::PrometheusHandle;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

pub mod catalog;
pub mod events;

pub use catalog::{names, MetricKind, MetricSpec, METRICS};
pub use events::{labels, InternalEvent};

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("metrics exporter on {addr}: {message}")]
    Exporter { addr: SocketAddr, message: String },
    #[error("log setup: {0}")]
    Logs(String),
}

/// Serves `/metrics` for Prometheus on `addr` and returns a handle that
/// renders the same text (the API serves it too). Needs a tokio runtime.
pub fn install_metrics(addr: SocketAddr) -> Result<PrometheusHandle, TelemetryError> {
    let exporter_err = |e: &dyn std::fmt::Display| TelemetryError::Exporter { addr, message: e.to_string() };
    let (recorder, exporter) = PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS)
        .map_err(|e| exporter_err(&e))?
        .build()
        .map_err(|e| exporter_err(&e))?;
    let handle = recorder.handle();
    tokio::spawn(exporter);
    metrics::set_global_recorder(recorder).map_err(|e| exporter_err(&e))?;
    catalog::describe();
    Ok(handle)
}

/// Records metrics without serving them (an in-process test application
/// reads them through the handle). Once per process; later calls return
/// the same handle.
pub fn install_metrics_recorder() -> Result<PrometheusHandle, TelemetryError> {
    static HANDLE: std::sync::OnceLock<PrometheusHandle> = std::sync::OnceLock::new();
    if let Some(h) = HANDLE.get() {
        return Ok(h.clone());
    }
    let addr = SocketAddr::from(([0, 0, 0, 0], 0));
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS)
        .map_err(|e| TelemetryError::Exporter { addr, message: e.to_string() })?
        .build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).map_err(|e| TelemetryError::Exporter { addr, message: e.to_string() })?;
    catalog::describe();
    Ok(HANDLE.get_or_init(|| handle).clone())
}

/// Seconds buckets: from a millisecond hop to an hour-long document.
const BUCKETS: &[f64] = &[0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0];

/// Structured logs to stderr; `json` gives one JSON object per line.
/// The filter comes from `RUST_LOG` (default `info`).
pub fn init_logs(json: bool) -> Result<(), TelemetryError> {
    use tracing_subscriber::{fmt, EnvFilter};
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,rdkafka=warn,sqlx=warn"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    let result = if json { builder.json().try_init() } else { builder.compact().try_init() };
    result.map_err(|e| TelemetryError::Logs(e.to_string()))
}

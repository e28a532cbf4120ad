//! Telemetry of rag-engine: every metric name lives in [`names`], so the
//! dashboards and the code cannot drift apart silently; [`install_metrics`]
//! serves them for Prometheus and [`init_logs`] sets up structured logs.

use std::net::SocketAddr;

pub use metrics_exporter_prometheus::PrometheusHandle;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

/// Metric names. Labels are documented beside each name.
pub mod names {
    /// Counter; labels: stage, topic. Events a stage received.
    pub const EVENTS_IN: &str = "rag_stage_events_in_total";
    /// Counter; labels: stage, topic. Events a stage produced.
    pub const EVENTS_OUT: &str = "rag_stage_events_out_total";
    /// Counter; labels: stage, topic, kind (transient|permanent). Failed attempts.
    pub const EVENTS_FAILED: &str = "rag_stage_events_failed_total";
    /// Counter; labels: stage, topic. Events a stage skipped because they were already applied.
    pub const EVENTS_DUPLICATE: &str = "rag_stage_events_duplicate_total";
    /// Counter; labels: stage, topic, reason. Events sent to `<topic>.dlq`.
    pub const DEAD_LETTERS: &str = "rag_stage_dead_letters_total";
    /// Histogram (seconds); labels: stage, topic. Time to process one event, retries included.
    pub const PROCESSING_SECONDS: &str = "rag_stage_processing_seconds";
    /// Gauge; labels: stage, group, topic, partition. Log end offset minus the stage's next offset.
    pub const CONSUMER_LAG: &str = "rag_consumer_lag_messages";
    /// Gauge; labels: stage, group, topic, partition. Next offset the stage will process.
    pub const CONSUMER_NEXT_OFFSET: &str = "rag_consumer_next_offset";
    /// Gauge; labels: stage, group, topic, partition. Age of the oldest unprocessed event (seconds since it was produced); 0 when caught up.
    pub const CONSUMER_LAG_SECONDS: &str = "rag_consumer_lag_seconds";
    /// Gauge; label: topic (a `.dlq` topic). Dead letters it holds.
    pub const DLQ_MESSAGES: &str = "rag_dlq_messages";
    /// Histogram (seconds). From a document's upload to its first ingestion (event times).
    pub const UPLOAD_TO_INGESTED_SECONDS: &str = "rag_upload_to_ingested_seconds";
    /// Histogram (seconds); label: mode. From a question to its answer (event times).
    pub const QUESTION_TO_ANSWER_SECONDS: &str = "rag_question_to_answer_seconds";
    /// Counter; labels: stage, topic. Records that arrived past a partition's position (records skipped); always 0 unless something is wrong.
    pub const OFFSET_GAPS: &str = "rag_consumer_offset_gaps_total";
    /// Gauge; label: kind (document|message). Documents and messages in a non-terminal state for longer than the stuck threshold.
    pub const STUCK: &str = "rag_stuck_items";
    /// Counter; labels: stage, group. Partition assignments and revocations.
    pub const REBALANCES: &str = "rag_consumer_rebalances_total";
    /// Counter; labels: producer, topic. Events whose delivery the broker confirmed.
    pub const PRODUCED: &str = "rag_produced_events_total";
    /// Counter; label: outcome (ok|failed). Files the upload command stored.
    pub const UPLOADS: &str = "rag_uploads_total";
    /// Counter; labels: model, kind (prompt|completion). Tokens the answer LLM used.
    pub const LLM_TOKENS: &str = "rag_llm_tokens_total";
    /// Counter; labels: method, route, status. HTTP requests the API answered.
    pub const HTTP_REQUESTS: &str = "rag_http_requests_total";
    /// Histogram (seconds); labels: method, route. Time to answer an HTTP request (SSE: to open the stream).
    pub const HTTP_SECONDS: &str = "rag_http_request_seconds";
}

/// Records the tokens of one LLM call.
pub fn record_llm_tokens(model: &str, prompt: i64, completion: i64) {
    for (kind, n) in [("prompt", prompt), ("completion", completion)] {
        metrics::counter!(names::LLM_TOKENS, "model" => model.to_string(), labels::KIND => kind).increment(n.max(0) as u64);
    }
}

/// Label keys, shared so label spelling cannot drift.
pub mod labels {
    pub const STAGE: &str = "stage";
    pub const TOPIC: &str = "topic";
    pub const GROUP: &str = "group";
    pub const PARTITION: &str = "partition";
    pub const KIND: &str = "kind";
    pub const REASON: &str = "reason";
}

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
        .set_buckets_for_metric(
            Matcher::Suffix("_seconds".into()),
            &[0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0],
        )
        .map_err(|e| exporter_err(&e))?
        .build()
        .map_err(|e| exporter_err(&e))?;
    let handle = recorder.handle();
    tokio::spawn(exporter);
    metrics::set_global_recorder(recorder).map_err(|e| exporter_err(&e))?;
    describe();
    Ok(handle)
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(names::EVENTS_IN, "Events received by a stage");
    describe_counter!(names::EVENTS_OUT, "Events produced by a stage");
    describe_counter!(names::EVENTS_FAILED, "Failed processing attempts");
    describe_counter!(names::EVENTS_DUPLICATE, "Re-delivered events skipped because already applied");
    describe_counter!(names::DEAD_LETTERS, "Events sent to the dead-letter topic");
    describe_histogram!(names::PROCESSING_SECONDS, Unit::Seconds, "Time to process one event");
    describe_gauge!(names::CONSUMER_LAG, "Log end offset minus the stage's next offset");
    describe_gauge!(names::CONSUMER_NEXT_OFFSET, "Next offset the stage will process");
    describe_gauge!(names::CONSUMER_LAG_SECONDS, Unit::Seconds, "Age of the oldest unprocessed event");
    describe_gauge!(names::DLQ_MESSAGES, "Dead letters a dead-letter topic holds");
    describe_histogram!(names::UPLOAD_TO_INGESTED_SECONDS, Unit::Seconds, "Upload to first ingestion of a document");
    describe_histogram!(names::QUESTION_TO_ANSWER_SECONDS, Unit::Seconds, "Question to answer");
    describe_counter!(names::OFFSET_GAPS, "Records that arrived past a partition's position");
    describe_gauge!(names::STUCK, "Documents and messages in a non-terminal state for longer than the stuck threshold");
    describe_counter!(names::REBALANCES, "Consumer group rebalances seen by a stage");
    describe_counter!(names::PRODUCED, "Events whose delivery the broker confirmed");
    describe_counter!(names::HTTP_REQUESTS, "HTTP requests the API answered");
    describe_histogram!(names::HTTP_SECONDS, Unit::Seconds, "Time to answer an HTTP request");
}

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

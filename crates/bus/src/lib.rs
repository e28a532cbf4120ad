//! The Kafka bus of rag-engine.
//!
//! - [`producer::EventProducer`]: idempotent producer of catalog events and
//!   raw records (dead letters, redrives).
//! - [`stage::StageRunner`]: the consumer loop every stage runs. It positions
//!   every partition when it is assigned, stores the next offset only after
//!   the [`stage::Stage`] reports the record's effect durable, retries
//!   transient errors with backoff, sends permanent failures to
//!   `<topic>.dlq` (up to a limit) and moves on, commits on revoke and on
//!   shutdown, and exports its own lag.
//! - [`admin::ensure_topics`]: explicit topic creation (the local broker has
//!   no auto-creation).

pub mod admin;
pub mod config;
pub mod logging;
pub mod producer;
pub mod stage;

pub use config::BusConfig;
pub use producer::EventProducer;
pub use stage::{
    DeadLetterLimit, ErrorSource, FailureCode, Inbound, Outcome, Positions, ProcessError, Stage, StageIdentity, StageOutput, StageRunner,
    StartAt,
};

/// Header names. Every event carries its type, schema fingerprint, id and
/// correlation id so tools can route and trace without decoding the body.
pub mod headers {
    pub const EVENT_TYPE: &str = "event-type";
    pub const SCHEMA_FINGERPRINT: &str = "schema-fingerprint";
    pub const EVENT_ID: &str = "event-id";
    pub const CORRELATION_ID: &str = "correlation-id";
    pub const WORKSPACE_ID: &str = "workspace-id";
    pub const CONTENT_TYPE: &str = "content-type";
    /// W3C trace context of the producing span, when there is one.
    pub const TRACEPARENT: &str = "traceparent";
    pub const DLQ_ORIGINAL_TOPIC: &str = "dlq-original-topic";
    pub const DLQ_ORIGINAL_PARTITION: &str = "dlq-original-partition";
    pub const DLQ_ORIGINAL_OFFSET: &str = "dlq-original-offset";
    pub const DLQ_STAGE: &str = "dlq-stage";
    pub const DLQ_REASON_CODE: &str = "dlq-reason-code";
    pub const DLQ_REASON: &str = "dlq-reason";
    pub const DLQ_FAILED_AT: &str = "dlq-failed-at";
    /// On a redriven record: the dead letter it came from (`<dlq topic>/<partition>/<offset>`).
    pub const REDRIVEN_FROM: &str = "redriven-from";
}

#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("kafka: {0}")]
    Kafka(#[from] rdkafka::error::KafkaError),
    #[error("encoding event: {0}")]
    Codec(#[from] rag_events::CodecError),
    #[error("stage {stage} stopped: {reason}")]
    StageFailed { stage: String, reason: String },
    #[error("creating topic {topic}: {reason}")]
    Topic { topic: String, reason: String },
}

#[cfg(test)]
mod tests;

use std::time::Duration;

use rag_events::Topics;
use rdkafka::ClientConfig;

/// Connection and behaviour of the bus, built by the binary from its
/// environment (see `rag-engine --help` for the variables and defaults).
#[derive(Debug, Clone)]
pub struct BusConfig {
    pub brokers: String,
    pub topics: Topics,
    /// Partitions of each topic created by [`crate::admin::ensure_topics`].
    pub partitions: i32,
    /// Kept low: the local broker answers a fetch only after this wait.
    pub fetch_wait_max_ms: u32,
    /// Attempts after the first for a transient error, before the stage stops.
    pub max_retries: u32,
    pub retry_backoff: Duration,
    pub max_backoff: Duration,
    /// How often each stage computes and exports its lag.
    pub lag_interval: Duration,
    pub session_timeout_ms: u32,
    /// Longest a stage may spend on one record (retries included) before
    /// librdkafka takes it out of the group.
    pub max_poll_interval_ms: u32,
    /// Records a stage instance holds at once, running and queued (at
    /// least 1). Partitions are processed side by side, each in offset
    /// order ([`crate::stage::lanes`]); at the bound the runner stops
    /// fetching until one finishes (back-pressure, bounded memory).
    pub max_in_flight: usize,
    /// When a stage stops instead of dead-lettering more.
    pub dead_letter_limit: crate::DeadLetterLimit,
    /// The idempotent producer (the default; right for Kafka). Off, sends
    /// keep their order with one request in flight per connection, and a
    /// retried send may land twice (every consumer is idempotent). The
    /// local broker's idempotence breaks across its restarts
    /// (docs/local-stack.md), so the local profile turns it off.
    pub idempotence: bool,
    /// librdkafka debug contexts (its `debug` property, e.g. `cgrp,fetch`)
    /// for diagnosing group and fetch behaviour; the lines are logged
    /// through `tracing` under the target `librdkafka` at debug level.
    pub debug: Option<String>,
}

impl BusConfig {
    /// Consumer group of a stage; the topic prefix keeps deployments apart.
    pub fn group_of(&self, stage_group: &str) -> String {
        format!("{}{}", self.topics.prefix(), stage_group)
    }

    pub(crate) fn client(&self) -> ClientConfig {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", &self.brokers);
        if let Some(contexts) = self.debug.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
            c.set("debug", contexts);
            c.set_log_level(rdkafka::config::RDKafkaLogLevel::Debug);
        }
        c
    }
}

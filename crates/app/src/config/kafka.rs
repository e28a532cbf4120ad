//! The broker and topics.

use std::time::Duration;

use clap::Args;
use rag_bus::BusConfig;
use rag_events::Topics;

use super::StageSettings;

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Kafka (environment variable, default)")]
pub struct KafkaSettings {
    /// Kafka bootstrap servers.
    #[arg(long, env = "KAFKA_BROKERS", global = true, default_value = "127.0.0.1:19092")]
    pub kafka_brokers: String,
    /// Prefix of every topic and consumer group, to run several deployments on one broker.
    #[arg(long, env = "TOPIC_PREFIX", global = true, default_value = "")]
    pub topic_prefix: String,
    /// Partitions of each topic when `topics ensure` creates it.
    #[arg(long, env = "TOPIC_PARTITIONS", global = true, default_value_t = 6)]
    pub topic_partitions: i32,
    /// Longest wait of a consumer fetch (librdkafka's default). Kafka answers as soon as data is there, and so does the local broker (tansu, patched: an empty fetch is woken by a produce), so this only bounds how often an idle consumer asks again (docs/local-stack.md).
    #[arg(long, env = "KAFKA_FETCH_WAIT_MAX_MS", global = true, default_value_t = 500)]
    pub kafka_fetch_wait_max_ms: u32,
    /// Consumer group session timeout: how fast a dead instance's partitions move on.
    #[arg(long, env = "KAFKA_SESSION_TIMEOUT_MS", global = true, default_value_t = 10_000)]
    pub kafka_session_timeout_ms: u32,
    /// Longest a stage may spend on one event, retries included, before the broker's group takes its partitions away (librdkafka max.poll.interval.ms).
    #[arg(long, env = "KAFKA_MAX_POLL_INTERVAL_MS", global = true, default_value_t = 900_000)]
    pub kafka_max_poll_interval_ms: u32,
    /// The idempotent producer (enable.idempotence). The local profile sets false: tansu's idempotence breaks across its restarts; order is then kept with one request in flight.
    #[arg(long, env = "KAFKA_IDEMPOTENCE", global = true, default_value_t = true, action = clap::ArgAction::Set)]
    pub kafka_idempotence: bool,
    /// librdkafka debug contexts for diagnosis (e.g. `cgrp,fetch`; its `debug` property), logged under the target `librdkafka`: also set RUST_LOG=info,librdkafka=debug. Unset: none.
    #[arg(long, env = "KAFKA_DEBUG", global = true)]
    pub kafka_debug: Option<String>,
}

impl KafkaSettings {
    pub fn topics(&self) -> Topics {
        Topics::new(self.topic_prefix.clone())
    }

    /// The bus of a stage process: this broker, and how `stages` run.
    pub fn bus(&self, stages: &StageSettings) -> BusConfig {
        BusConfig {
            brokers: self.kafka_brokers.clone(),
            topics: self.topics(),
            partitions: self.topic_partitions,
            fetch_wait_max_ms: self.kafka_fetch_wait_max_ms,
            max_retries: stages.stage_max_retries,
            retry_backoff: Duration::from_millis(stages.stage_retry_backoff_ms),
            max_backoff: Duration::from_millis(stages.stage_max_backoff_ms),
            lag_interval: Duration::from_secs(stages.lag_interval_secs.max(1)),
            session_timeout_ms: self.kafka_session_timeout_ms,
            max_poll_interval_ms: self.kafka_max_poll_interval_ms,
            idempotence: self.kafka_idempotence,
            max_in_flight: stages.stage_max_in_flight.max(1),
            debug: self.kafka_debug.clone(),
            dead_letter_limit: if stages.stage_dlq_window == 0 {
                rag_bus::DeadLetterLimit::UNLIMITED
            } else {
                rag_bus::DeadLetterLimit { max: stages.stage_dlq_max, window: stages.stage_dlq_window }
            },
        }
    }

    /// The bus of a command that only produces or administers topics: the
    /// runner's part (unused there) from the environment and its defaults.
    pub fn client_bus(&self) -> Result<BusConfig, clap::Error> {
        Ok(self.bus(&super::from_env::<StageSettings>()?))
    }
}

//! The stage's Kafka consumer and its rebalance handling.
//!
//! Assignment is deferred: the rebalance callback records the partitions in
//! the [`PartitionBook`] and wakes the runner instead of assigning them,
//! and the runner assigns them once it knows where each resumes (from
//! Postgres for stages that keep their offsets there, else from Kafka's
//! committed offset clamped to the log). librdkafka keeps heart-beating
//! while it waits for that assign call. Revocation commits what was stored
//! and unassigns at once, inside the callback.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use rag_telemetry::events::{PartitionsAssigned, PartitionsRevoked};
use rag_telemetry::InternalEvent;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, StreamConsumer};
use rdkafka::error::KafkaError;
use rdkafka::types::{RDKafkaErrorCode, RDKafkaRespErr};
use rdkafka::{ClientContext, TopicPartitionList};
use tokio::sync::Notify;
use tracing::warn;

use super::positions::{PartitionBook, PartitionKey};
use crate::{BusConfig, BusError};

pub(crate) type StageConsumer = StreamConsumer<StageContext>;

/// State shared by the consumer's callbacks and the runner.
#[derive(Clone, Default)]
pub(crate) struct Shared {
    pub book: Arc<Mutex<PartitionBook>>,
    /// Woken when an assignment waits for positions.
    pub wake: Arc<Notify>,
    /// Partitions the runner paused for back-pressure (shared so the
    /// tests can wait for a pause to have happened).
    pub paused: Arc<Mutex<HashSet<PartitionKey>>>,
}

impl Shared {
    pub fn book(&self) -> MutexGuard<'_, PartitionBook> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn paused(&self) -> MutexGuard<'_, HashSet<PartitionKey>> {
        self.paused.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub(crate) struct StageContext {
    stage: String,
    group: String,
    shared: Shared,
}

impl ClientContext for StageContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, log_message: &str) {
        crate::logging::forward(&self.stage, level, fac, log_message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        warn!(target: "librdkafka", stage = %self.stage, error = %error, "{reason}");
    }
}

impl StageContext {
    fn forget(&self, consumer: &BaseConsumer<Self>, why: &str) {
        let revoked = self.shared.book().revoke_all();
        if let Err(e) = consumer.unassign() {
            warn!(stage = %self.stage, error = %e, "unassign failed");
        }
        PartitionsRevoked { stage: &self.stage, group: &self.group, partitions: &revoked, how: why }.emit();
    }
}

impl ConsumerContext for StageContext {
    fn rebalance(&self, consumer: &BaseConsumer<Self>, err: RDKafkaRespErr, tpl: &mut TopicPartitionList) {
        match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => {
                let partitions: Vec<PartitionKey> = tpl.elements().iter().map(|e| (e.topic().to_string(), e.partition())).collect();
                let listed: Vec<String> = partitions.iter().map(|(t, p)| format!("{t}[{p}]")).collect();
                PartitionsAssigned { stage: &self.stage, group: &self.group, partitions: &listed.join(",") }.emit();
                self.shared.book().assign(partitions);
                self.shared.wake.notify_one();
            }
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                // Commit what took effect before the partitions move on, so
                // the next owner does not redo it.
                match consumer.commit_consumer_state(CommitMode::Sync) {
                    Ok(()) | Err(KafkaError::ConsumerCommit(RDKafkaErrorCode::NoOffset)) => {}
                    Err(e) => warn!(stage = %self.stage, error = %e, "commit on revoke failed"),
                }
                self.forget(consumer, "revoked");
            }
            other => {
                warn!(stage = %self.stage, error = %RDKafkaErrorCode::from(other), "rebalance error; dropping the assignment");
                self.forget(consumer, "dropped");
            }
        }
    }
}

/// A consumer in the stage's group, subscribed to its topics.
pub(crate) fn subscribe(
    cfg: &BusConfig,
    stage: &str,
    group: &str,
    topics: &[String],
    shared: Shared,
) -> Result<Arc<StageConsumer>, BusError> {
    let context = StageContext { stage: stage.to_string(), group: group.to_string(), shared };
    let consumer: StageConsumer = cfg
        .client()
        .set("group.id", group)
        .set("client.id", format!("{stage}-{}", std::process::id()))
        .set("enable.auto.commit", "true")
        .set("auto.commit.interval.ms", "1000")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        // Eager protocol: every assignment is the whole set (PartitionBook).
        .set("partition.assignment.strategy", "range,roundrobin")
        .set("fetch.wait.max.ms", cfg.fetch_wait_max_ms.to_string())
        .set("session.timeout.ms", cfg.session_timeout_ms.to_string())
        .set("heartbeat.interval.ms", (cfg.session_timeout_ms / 5).max(500).to_string())
        // Above the longest a record can take, retries included: a stage
        // that exceeds it is dropped from the group.
        .set("max.poll.interval.ms", cfg.max_poll_interval_ms.to_string())
        .create_with_context(context)?;
    let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
    consumer.subscribe(&topics)?;
    Ok(Arc::new(consumer))
}

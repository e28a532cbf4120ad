//! The consumer group and the log: partitions, lag, dead-letter topics, deliveries.

use std::time::Duration;

use metrics::{counter, gauge};
use tracing::info;

use super::labels::*;
use super::InternalEvent;
use crate::catalog::names;

/// The group gave this stage instance partitions.
pub struct PartitionsAssigned<'a> {
    pub stage: &'a str,
    pub group: &'a str,
    /// `topic[partition]`, comma-separated.
    pub partitions: &'a str,
}

impl InternalEvent for PartitionsAssigned<'_> {
    fn emit(self) {
        info!(stage = %self.stage, group = %self.group, partitions = %self.partitions, "partitions assigned");
        counter!(names::REBALANCES, STAGE => self.stage.to_string(), GROUP => self.group.to_string(), KIND => "assign").increment(1);
    }
}

/// The stage gave partitions up (revoked, or dropped on a rebalance error);
/// their lag is no longer this instance's to report.
pub struct PartitionsRevoked<'a> {
    pub stage: &'a str,
    pub group: &'a str,
    pub partitions: &'a [(String, i32)],
    /// "revoked" or "dropped".
    pub how: &'a str,
}

impl InternalEvent for PartitionsRevoked<'_> {
    fn emit(self) {
        for (topic, partition) in self.partitions {
            gauge!(names::CONSUMER_LAG, STAGE => self.stage.to_string(), GROUP => self.group.to_string(),
                TOPIC => topic.clone(), PARTITION => partition.to_string())
            .set(0.0);
        }
        info!(stage = %self.stage, group = %self.group, partitions = self.partitions.len(), how = %self.how, "partitions given up");
        counter!(names::REBALANCES, STAGE => self.stage.to_string(), GROUP => self.group.to_string(), KIND => "revoke").increment(1);
    }
}

/// Where a partition of a stage stands, measured by the lag reporter.
pub struct LagObserved<'a> {
    pub stage: &'a str,
    pub group: &'a str,
    pub topic: &'a str,
    pub partition: i32,
    pub next_offset: i64,
    pub log_end: i64,
    /// Age of the oldest unprocessed record, when known (0 when caught up).
    pub oldest_age: Option<Duration>,
}

impl InternalEvent for LagObserved<'_> {
    fn emit(self) {
        let l = [
            (STAGE, self.stage.to_string()),
            (GROUP, self.group.to_string()),
            (TOPIC, self.topic.to_string()),
            (PARTITION, self.partition.to_string()),
        ];
        let lag = (self.log_end - self.next_offset).max(0);
        gauge!(names::CONSUMER_LAG, &l).set(lag as f64);
        gauge!(names::CONSUMER_NEXT_OFFSET, &l).set(self.next_offset as f64);
        if lag == 0 {
            gauge!(names::CONSUMER_LAG_SECONDS, &l).set(0.0);
        } else if let Some(age) = self.oldest_age {
            gauge!(names::CONSUMER_LAG_SECONDS, &l).set(age.as_secs_f64());
        }
    }
}

/// How many dead letters a `.dlq` topic holds.
pub struct DeadLetterTopicSize<'a> {
    pub dlq_topic: &'a str,
    pub records: i64,
}

impl InternalEvent for DeadLetterTopicSize<'_> {
    fn emit(self) {
        gauge!(names::DLQ_MESSAGES, TOPIC => self.dlq_topic.to_string()).set(self.records.max(0) as f64);
    }
}

/// The broker confirmed a produced record.
pub struct RecordDelivered<'a> {
    pub producer: &'a str,
    pub topic: &'a str,
}

impl InternalEvent for RecordDelivered<'_> {
    fn emit(self) {
        counter!(names::PRODUCED, "producer" => self.producer.to_string(), TOPIC => self.topic.to_string()).increment(1);
    }
}

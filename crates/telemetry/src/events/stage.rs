//! A record through a stage: received, produced, processed, skipped, failed.

use std::time::Duration;

use metrics::{counter, histogram};
use tracing::{debug, error, info, warn};

use super::labels::*;
use super::InternalEvent;
use crate::catalog::names;

/// A record reached the stage.
pub struct EventReceived<'a> {
    pub stage: &'a str,
    pub topic: &'a str,
}

impl InternalEvent for EventReceived<'_> {
    fn emit(self) {
        counter!(names::EVENTS_IN, STAGE => self.stage.to_string(), TOPIC => self.topic.to_string()).increment(1);
    }
}

/// A stage produced an event (after the broker confirmed it).
pub struct EventProduced<'a> {
    pub stage: &'a str,
    pub topic: &'a str,
}

impl InternalEvent for EventProduced<'_> {
    fn emit(self) {
        counter!(names::EVENTS_OUT, STAGE => self.stage.to_string(), TOPIC => self.topic.to_string()).increment(1);
    }
}

/// A record was handled (applied, skipped or dead-lettered), retries included.
pub struct EventProcessed<'a> {
    pub stage: &'a str,
    pub topic: &'a str,
    pub elapsed: Duration,
}

impl InternalEvent for EventProcessed<'_> {
    fn emit(self) {
        tracing::debug!(stage = self.stage, topic = self.topic, elapsed_us = self.elapsed.as_micros() as u64, "event processed");
        histogram!(names::PROCESSING_SECONDS, STAGE => self.stage.to_string(), TOPIC => self.topic.to_string())
            .record(self.elapsed.as_secs_f64());
    }
}

/// A re-delivered record whose effect was already there.
pub struct DuplicateSkipped<'a> {
    pub stage: &'a str,
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
}

impl InternalEvent for DuplicateSkipped<'_> {
    fn emit(self) {
        debug!(stage = %self.stage, topic = %self.topic, partition = self.partition, offset = self.offset, "already applied, skipped");
        counter!(names::EVENTS_DUPLICATE, STAGE => self.stage.to_string(), TOPIC => self.topic.to_string()).increment(1);
    }
}

/// A record arrived past the partition's position: records in between were skipped.
pub struct OffsetGap<'a> {
    pub stage: &'a str,
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
    pub expected: i64,
}

impl InternalEvent for OffsetGap<'_> {
    fn emit(self) {
        error!(stage = %self.stage, topic = %self.topic, partition = self.partition, offset = self.offset, expected = self.expected,
            "records skipped between the partition's position and this record");
        counter!(names::OFFSET_GAPS, STAGE => self.stage.to_string(), TOPIC => self.topic.to_string()).increment(1);
    }
}

/// An attempt failed with an error that may go away; it is retried after `wait`.
pub struct TransientFailure<'a> {
    pub stage: &'a str,
    pub topic: &'a str,
    pub attempt: u32,
    pub wait: Duration,
    pub error: &'a str,
}

impl InternalEvent for TransientFailure<'_> {
    fn emit(self) {
        warn!(stage = %self.stage, topic = %self.topic, attempt = self.attempt, wait = ?self.wait, error = %self.error,
            "transient error, retrying");
        counter!(names::EVENTS_FAILED, STAGE => self.stage.to_string(), TOPIC => self.topic.to_string(), KIND => "transient").increment(1);
    }
}

/// An attempt failed for good: the record goes to the dead-letter topic.
pub struct PermanentFailure<'a> {
    pub stage: &'a str,
    pub topic: &'a str,
    pub code: &'a str,
    pub error: &'a str,
}

impl InternalEvent for PermanentFailure<'_> {
    fn emit(self) {
        warn!(stage = %self.stage, topic = %self.topic, code = %self.code, error = %self.error,
            "permanent failure, sending to the dead-letter topic");
        counter!(names::EVENTS_FAILED, STAGE => self.stage.to_string(), TOPIC => self.topic.to_string(), KIND => "permanent").increment(1);
    }
}

/// A record is in `<topic>.dlq`.
pub struct DeadLettered<'a> {
    pub stage: &'a str,
    pub topic: &'a str,
    pub dlq_topic: &'a str,
    pub code: &'a str,
}

impl InternalEvent for DeadLettered<'_> {
    fn emit(self) {
        info!(stage = %self.stage, topic = %self.topic, dlq = %self.dlq_topic, code = %self.code, "dead-lettered");
        counter!(names::DEAD_LETTERS, STAGE => self.stage.to_string(), TOPIC => self.topic.to_string(), REASON => self.code.to_string())
            .increment(1);
    }
}

/// A stage stopped on an error; a restart resumes at the record it could not finish.
pub struct StageFailed<'a> {
    pub stage: &'a str,
    pub error: &'a str,
}

impl InternalEvent for StageFailed<'_> {
    fn emit(self) {
        error!(stage = %self.stage, error = %self.error, "stage failed");
        counter!(names::STAGE_FAILURES, STAGE => self.stage.to_string()).increment(1);
    }
}

//! [`StageRunner`]: runs one [`Stage`] in its consumer group.
//!
//! Offsets: `enable.auto.offset.store=false`; the runner stores the *next*
//! offset of a partition only after the stage reports the record's
//! effect durable (or after the record is safely in the dead-letter topic),
//! and librdkafka auto-commits stored offsets. Partitions are positioned
//! when they are assigned, before anything is fetched. Revocation commits
//! synchronously; shutdown finishes the records running, commits and
//! leaves the group.
//!
//! Concurrency: up to `max_in_flight` records are held at once, running
//! and queued, in one lane per partition ([`super::lanes`]): partitions
//! proceed side by side, each strictly in offset order, so a partition's
//! stored offset only ever moves past records that took effect.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use rag_telemetry::events::{
    DuplicateSkipped, EventProcessed, EventReceived, OffsetGap, PermanentFailure, StageFailed, StageTopicRegistered, TransientFailure,
};
use rag_telemetry::InternalEvent;
use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::topic_partition_list::Offset;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::TopicPartitionList;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, info_span, warn, Instrument};

use super::consumer::{self, Shared, StageConsumer};
use super::contract::{FailureCode, Inbound, Outcome, ProcessError, Stage};
use super::dead_letter::{backoff, DeadLetterBudget, DeadLetters};
use super::lanes::{Admitted, Lanes};
use super::positions::{Arrival, PartitionKey};
use crate::producer::EventProducer;
use crate::{headers, BusConfig, BusError};

/// A record taken for processing, with the generation of the assignment it
/// arrived in (its offset is stored only if that is still current).
struct Received {
    msg: Inbound,
    key: PartitionKey,
    generation: u64,
}

/// How long a stopping stage waits for its final commit and for leaving its
/// group. A broker that does not answer would otherwise hold the process
/// for as long as librdkafka's timeouts (a sync commit: over 10 s).
const LEAVE_WITHIN: Duration = Duration::from_secs(5);

/// One stage instance: its consumer, its partitions and its stage.
pub struct StageRunner<S: Stage> {
    pub(super) cfg: BusConfig,
    pub(super) name: &'static str,
    pub(super) topics: Vec<String>,
    pub(super) group: String,
    pub(super) stage: Arc<S>,
    pub(super) consumer: Arc<StageConsumer>,
    pub(super) shared: Shared,
    dead_letters: DeadLetters,
    budget: Mutex<DeadLetterBudget>,
    pub(super) shutdown: CancellationToken,
    /// The configured bound, lowered to the stage's own if it has one.
    max_in_flight: usize,
}

impl<S: Stage> StageRunner<S> {
    /// Joins the stage's group with its identity (subscribes; partitions
    /// arrive with the first poll in [`StageRunner::run`]). `dlq` produces
    /// the dead letters.
    pub fn new(cfg: &BusConfig, stage: Arc<S>, dlq: EventProducer, shutdown: CancellationToken) -> Result<Self, BusError> {
        let identity = stage.identity();
        let group = cfg.group_of(&identity.group);
        let topics: Vec<String> = identity.consumes.iter().map(|t| cfg.topics.of(*t)).collect();
        let shared = Shared::default();
        let consumer = consumer::subscribe(cfg, identity.name, &group, &topics, shared.clone())?;
        Ok(StageRunner {
            cfg: cfg.clone(),
            name: identity.name,
            topics,
            group,
            stage,
            consumer,
            shared,
            dead_letters: DeadLetters { producer: dlq, stage: identity.name.to_string() },
            budget: Mutex::new(DeadLetterBudget::new(cfg.dead_letter_limit)),
            shutdown,
            max_in_flight: cfg.max_in_flight.min(identity.max_in_flight.unwrap_or(usize::MAX)).max(1),
        })
    }

    /// The partitions this runner holds paused, for the tests to watch.
    #[cfg(test)]
    pub(crate) fn paused_partitions(&self) -> Arc<Mutex<std::collections::HashSet<PartitionKey>>> {
        self.shared.paused.clone()
    }

    /// Its partitions and their assignments, for the tests to watch.
    #[cfg(test)]
    pub(crate) fn partition_book(&self) -> Arc<Mutex<super::positions::PartitionBook>> {
        self.shared.book.clone()
    }

    /// Stops the stage with `reason`, logged and counted.
    pub(super) fn failed(&self, reason: String) -> BusError {
        StageFailed { stage: self.name, error: &reason }.emit();
        BusError::StageFailed { stage: self.name.to_string(), reason }
    }

    /// Runs until `shutdown` is cancelled (`Ok`) or a transient error
    /// outlives its retries (`Err`; nothing is lost, a restart resumes at
    /// the failed record).
    pub async fn run(self) -> Result<(), BusError> {
        info!(stage = %self.name, group = %self.group, topics = %self.topics.join(","), "stage started");
        let dead_letter_reasons: Vec<&str> = FailureCode::ALL.iter().map(|c| c.as_str()).collect();
        for topic in &self.topics {
            StageTopicRegistered { stage: self.name, topic, dead_letter_reasons: &dead_letter_reasons }.emit();
        }
        self.stage.started();
        // The lag reporter stops with this stage only: `shutdown` is shared by
        // every stage of the process and is not ours to cancel.
        let lag_stop = self.shutdown.child_token();
        // Also when this future is dropped mid-way (an aborted task): the
        // reporter holds the consumer, which must not outlive the stage.
        let _lag_guard = lag_stop.clone().drop_guard();
        let lag_task = tokio::spawn(super::lag::report_lag(
            self.cfg.clone(),
            self.consumer.clone(),
            self.shared.clone(),
            self.name.to_string(),
            self.group.clone(),
            self.cfg.lag_interval,
            lag_stop.clone(),
        ));

        let result = self.consume().await;

        // Finish: commit what was stored, then leave the group so the
        // partitions move to the remaining members at once instead of after
        // a session timeout. Every call here waits on the broker (the sync
        // commit, the unsubscribe, the consumer's close when its last
        // reference goes, and the lag report's question in flight, up to
        // its 5 s timeout), so they run on the blocking pool, side by side:
        // with the broker hanging, one after the other took `run projector`
        // past 10 s (the report's question, then librdkafka's 5 s for the
        // LeaveGroup that gets no answer).
        lag_stop.cancel();
        let (name, consumer) = (self.name, Arc::clone(&self.consumer));
        drop(self);
        let leaving = tokio::task::spawn_blocking(move || {
            match consumer.commit_consumer_state(CommitMode::Sync) {
                Ok(()) | Err(KafkaError::ConsumerCommit(RDKafkaErrorCode::NoOffset)) => {}
                Err(e) => warn!(stage = %name, error = %e, "final commit failed"),
            }
            consumer.unsubscribe();
            drop(consumer);
        });
        match tokio::time::timeout(LEAVE_WITHIN, async { tokio::join!(lag_task, leaving) }).await {
            Ok((_, Ok(()))) => {}
            Ok((_, Err(e))) => warn!(stage = %name, error = %e, "leaving the group failed"),
            // As after a crash: what was not committed is delivered again
            // and skipped as a duplicate, and the group drops this member
            // after its session timeout.
            Err(_) => {
                warn!(stage = %name, within = ?LEAVE_WITHIN, "the broker did not answer the stage leaving its group; stopping without it")
            }
        }
        info!(stage = %name, "stage stopped");
        result
    }

    async fn consume(&self) -> Result<(), BusError> {
        let bound = self.max_in_flight;
        // A lane is paused when it holds half the bound, and resumed when
        // it is down to a quarter (or idle): one slow partition cannot take
        // every slot, and a resumed partition still has work queued while
        // its next fetch comes back (tansu holds every fetch for the full
        // fetch wait, so pausing at the first queued record and resuming at
        // idle left lanes waiting on fetches).
        let (pause_at, resume_at) = ((bound / 2).max(1), bound / 4);
        let mut lanes: Lanes<Received> = Lanes::default();
        let mut running = FuturesUnordered::new();
        let stopped = loop {
            if self.shared.book().has_pending() {
                // Records queued under the previous assignment are fetched
                // again from the committed positions by their owner; a new
                // assignment starts unpaused (`position_assigned` resumes
                // every partition it assigns).
                lanes.drop_queued();
                self.shared.paused().clear();
                self.position_assigned().await?;
                continue;
            }
            let room = lanes.buffered() < bound;
            tokio::select! {
                biased;
                _ = self.shutdown.cancelled() => break Ok(()),
                Some((done, outcome)) = running.next(), if !running.is_empty() => {
                    let done: Received = done;
                    match outcome {
                        // A stage that gave up: records still running are
                        // dropped as in a crash; their offsets stay unstored.
                        Err(e) => break Err(e),
                        // Shutdown during a retry: leave the offset unstored.
                        Ok(false) => break Ok(()),
                        Ok(true) => self.store_next(&done),
                    }
                    while let Some(next) = lanes.finish(&done.key) {
                        if self.shared.book().is_current(next.generation) {
                            running.push(self.process(next));
                            break;
                        }
                    }
                    if lanes.queued_in(&done.key) <= resume_at && self.shared.paused().remove(&done.key) {
                        self.pause(&done.key, false);
                    }
                }
                // An assignment arrived during the last poll: position it.
                _ = self.shared.wake.notified() => continue,
                m = self.consumer.recv(), if room => {
                    let msg = match m {
                        Ok(m) => Inbound::from_owned(&m.detach()),
                        Err(e) => {
                            // Broker unreachable and the like: librdkafka
                            // reconnects by itself; do not spin.
                            warn!(stage = %self.name, error = %e, "consumer error");
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            continue;
                        }
                    };
                    if let Some(received) = self.receive(msg) {
                        let key = received.key.clone();
                        match lanes.admit(&key, received) {
                            Admitted::Start(start) => running.push(self.process(start)),
                            // Its partition is busy: at half the bound, stop
                            // fetching it until its lane drains to a quarter,
                            // so one slow partition does not fill the bound
                            // and starve the others.
                            Admitted::Queued { depth } if depth >= pause_at && self.shared.paused().insert(key.clone()) => self.pause(&key, true),
                            Admitted::Queued { .. } => {}
                        }
                    }
                }
            }
        };
        if stopped.is_ok() {
            // Shutdown: the records running finish (one in a retry gives up
            // at once and stays unstored); queued ones wait for the restart.
            while let Some((done, outcome)) = running.next().await {
                if let Ok(true) = outcome {
                    self.store_next(&done);
                }
            }
        }
        stopped
    }

    /// Pauses (or resumes) fetching one partition. librdkafka drops what it
    /// prefetched for a paused partition and resumes after the last record
    /// delivered, so nothing is skipped. The pause outlives a revocation
    /// in librdkafka (as in the Java client for a partition that stays);
    /// `position_assigned` resumes every partition it assigns.
    fn pause(&self, key: &PartitionKey, pause: bool) {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition(&key.0, key.1);
        let done = if pause { self.consumer.pause(&tpl) } else { self.consumer.resume(&tpl) };
        if let Err(e) = done {
            debug!(stage = %self.name, topic = %key.0, partition = key.1, pause, error = %e, "pause/resume refused");
        }
    }

    /// Classifies an arriving record: `None` when it is not to be processed
    /// (not ours any more, or a re-delivery of one already received).
    fn receive(&self, msg: Inbound) -> Option<Received> {
        let key: PartitionKey = (msg.topic.clone(), msg.partition);
        let (arrival, generation) = self.shared.book().arrive(&key, msg.offset);
        match arrival {
            Arrival::InOrder => {}
            Arrival::NotOwned => {
                debug!(stage = %self.name, topic = %msg.topic, partition = msg.partition, offset = msg.offset,
                    "record of a partition no longer owned, dropped");
                return None;
            }
            Arrival::Behind { .. } => {
                DuplicateSkipped { stage: self.name, topic: &msg.topic, partition: msg.partition, offset: msg.offset }.emit();
                return None;
            }
            Arrival::Gap { expected } => {
                OffsetGap { stage: self.name, topic: &msg.topic, partition: msg.partition, offset: msg.offset, expected }.emit();
            }
        }
        Some(Received { msg, key, generation })
    }

    /// Processes one received record in its span; gives it back with the outcome.
    async fn process(&self, r: Received) -> (Received, Result<bool, BusError>) {
        let msg = &r.msg;
        let text = |name| msg.header(name).and_then(|v| std::str::from_utf8(v).ok()).unwrap_or("");
        let span = info_span!("event", stage = %self.name, topic = %msg.topic, partition = msg.partition,
            offset = msg.offset, key = msg.key_str().unwrap_or(""), workspace_id = text(headers::WORKSPACE_ID),
            event_id = text(headers::EVENT_ID), traceparent = text(headers::TRACEPARENT));
        let outcome = self.handle(msg).instrument(span).await;
        (r, outcome)
    }

    /// Stores the partition's next offset for commit, if it is still ours
    /// and was not assigned anew since the record arrived.
    fn store_next(&self, r: &Received) {
        let msg = &r.msg;
        let Some(next) = self.shared.book().processed(r.generation, &r.key, msg.offset, msg.timestamp_ms) else {
            debug!(stage = %self.name, topic = %msg.topic, partition = msg.partition, "partition revoked meanwhile; its new owner decides");
            return;
        };
        // rd_kafka_offsets_store takes the offset as given: the next one to
        // process. (rd_kafka_offset_store, behind rdkafka's `store_offset`,
        // adds one itself; passing it `offset + 1` skipped a record after
        // every restart.)
        let mut tpl = TopicPartitionList::new();
        let stored =
            tpl.add_partition_offset(&msg.topic, msg.partition, Offset::Offset(next)).and_then(|()| self.consumer.store_offsets(&tpl));
        if let Err(e) = stored {
            // Revoked between the check and the store: harmless.
            debug!(stage = %self.name, error = %e, "offset not stored");
        }
    }

    /// Processes one record with retries and dead-lettering. Returns false
    /// if shutdown interrupted a retry (the record stays unprocessed).
    async fn handle(&self, msg: &Inbound) -> Result<bool, BusError> {
        let (stage, topic) = (self.name, msg.topic.as_str());
        EventReceived { stage, topic }.emit();
        let started = Instant::now();
        let mut attempt = 0u32;
        let result = loop {
            match self.stage.process(msg).await.map_err(Into::into) {
                Ok(outcome) => break Ok(outcome),
                Err(e @ ProcessError::Transient { .. }) => {
                    let error = e.chain();
                    if attempt >= self.cfg.max_retries {
                        warn!(attempts = attempt + 1, %error, "transient error outlived its retries");
                        return Err(self.failed(format!("{topic}[{}]@{}: {error}", msg.partition, msg.offset)));
                    }
                    let wait = backoff(&self.cfg, attempt);
                    attempt += 1;
                    TransientFailure { stage, topic, attempt, wait, error: &error }.emit();
                    tokio::select! {
                        _ = self.shutdown.cancelled() => return Ok(false),
                        _ = tokio::time::sleep(wait) => {}
                    }
                }
                Err(e @ ProcessError::Permanent { code, .. }) => break Err((code, e)),
            }
        };
        let dead_lettered = result.is_err();
        match result {
            Ok(Outcome::Applied) => {}
            Ok(Outcome::Duplicate) => DuplicateSkipped { stage, topic, partition: msg.partition, offset: msg.offset }.emit(),
            Ok(Outcome::DeadLetter { code, reason }) => {
                PermanentFailure { stage, topic, code: code.as_str(), error: &reason }.emit();
                self.dead_letters.send(&self.cfg, msg, code, &reason, &self.shutdown).await?;
            }
            Err((code, e)) => {
                let error = e.chain();
                PermanentFailure { stage, topic, code: code.as_str(), error: &error }.emit();
                self.dead_letter(msg, code, &error).await?;
            }
        }
        self.budget.lock().unwrap_or_else(|p| p.into_inner()).record(dead_lettered);
        EventProcessed { stage, topic, elapsed: started.elapsed() }.emit();
        Ok(true)
    }

    async fn dead_letter(&self, msg: &Inbound, code: FailureCode, reason: &str) -> Result<(), BusError> {
        let within = self.budget.lock().unwrap_or_else(|p| p.into_inner()).allows_another();
        if !within {
            let limit = self.cfg.dead_letter_limit;
            warn!(%code, %reason, max = limit.max, window = limit.window,
                "dead-letter limit reached; stopping the stage instead of dead-lettering everything");
            return Err(self.failed(format!(
                "more than {} of the last {} records failed permanently (last: {}[{}]@{} {code}: {reason}); \
                     the record is kept and a restart resumes at it",
                limit.max, limit.window, msg.topic, msg.partition, msg.offset
            )));
        }
        self.dead_letters.send(&self.cfg, msg, code, reason, &self.shutdown).await?;
        let mut attempt = 0;
        loop {
            match self.stage.dead_lettered(msg, code, reason).await.map_err(Into::into) {
                Ok(()) => return Ok(()),
                Err(e) if attempt < self.cfg.max_retries && !self.shutdown.is_cancelled() => {
                    warn!(error = %e, "recording the dead letter failed, retrying");
                    tokio::time::sleep(backoff(&self.cfg, attempt)).await;
                    attempt += 1;
                }
                Err(e) => return Err(self.failed(format!("recording the dead letter: {}", e.chain()))),
            }
        }
    }
}

/// Runs a stage until `shutdown` is cancelled; see [`StageRunner`].
pub async fn run_stage<S: Stage>(cfg: &BusConfig, stage: Arc<S>, dlq: EventProducer, shutdown: CancellationToken) -> Result<(), BusError> {
    StageRunner::new(cfg, stage, dlq, shutdown)?.run().await
}

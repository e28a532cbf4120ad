//! [`StageRunner`]: runs one [`Processor`] in its consumer group.
//!
//! Offsets: `enable.auto.offset.store=false`; the runner stores the *next*
//! offset of a partition only after the processor reports the record's
//! effect durable (or after the record is safely in the dead-letter topic),
//! and librdkafka auto-commits stored offsets. Partitions are positioned
//! when they are assigned, before anything is fetched. Revocation commits
//! synchronously; shutdown finishes the record in flight, commits and
//! leaves the group.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use metrics::{counter, histogram};
use rag_telemetry::{labels, names};
use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::topic_partition_list::Offset;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::TopicPartitionList;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, info_span, warn, Instrument};

use super::consumer::{self, Shared, StageConsumer};
use super::contract::{Inbound, Outcome, ProcessError, Processor, StageSpec, StartAt};
use super::dead_letter::{backoff, DeadLetterBudget, DeadLetters};
use super::positions::{resume_from_committed, Arrival, PartitionKey, Position};
use crate::producer::EventProducer;
use crate::{headers, BusConfig, BusError};

/// How long the runner keeps trying to learn where assigned partitions
/// resume (database or broker briefly away) before the stage fails.
const POSITIONING_ATTEMPTS: u32 = 20;

/// One stage instance: its consumer, its partitions and its processor.
pub struct StageRunner<P: Processor> {
    cfg: BusConfig,
    spec: StageSpec,
    group: String,
    processor: Arc<P>,
    consumer: Arc<StageConsumer>,
    shared: Shared,
    dead_letters: DeadLetters,
    budget: Mutex<DeadLetterBudget>,
    shutdown: CancellationToken,
}

impl<P: Processor> StageRunner<P> {
    /// Joins the stage's group (subscribes; partitions arrive with the
    /// first poll in [`StageRunner::run`]).
    pub fn new(
        cfg: &BusConfig,
        spec: &StageSpec,
        processor: Arc<P>,
        dlq: EventProducer,
        shutdown: CancellationToken,
    ) -> Result<Self, BusError> {
        let group = cfg.group_of(&spec.group);
        let shared = Shared::default();
        let consumer = consumer::subscribe(cfg, &spec.name, &group, &spec.topics, shared.clone())?;
        Ok(StageRunner {
            cfg: cfg.clone(),
            spec: spec.clone(),
            group,
            processor,
            consumer,
            shared,
            dead_letters: DeadLetters { producer: dlq, stage: spec.name.clone() },
            budget: Mutex::new(DeadLetterBudget::new(cfg.dead_letter_limit)),
            shutdown,
        })
    }

    /// Runs until `shutdown` is cancelled (`Ok`) or a transient error
    /// outlives its retries (`Err`; nothing is lost, a restart resumes at
    /// the failed record).
    pub async fn run(self) -> Result<(), BusError> {
        info!(stage = %self.spec.name, group = %self.group, topics = %self.spec.topics.join(","), "stage started");
        // Counters start at zero, so rates and dashboards work before the first failure.
        for topic in &self.spec.topics {
            let (stage, topic) = (self.spec.name.clone(), topic.clone());
            counter!(names::EVENTS_DUPLICATE, labels::STAGE => stage.clone(), labels::TOPIC => topic.clone()).increment(0);
            counter!(names::OFFSET_GAPS, labels::STAGE => stage.clone(), labels::TOPIC => topic.clone()).increment(0);
            for kind in ["transient", "permanent"] {
                counter!(names::EVENTS_FAILED, labels::STAGE => stage.clone(), labels::TOPIC => topic.clone(), labels::KIND => kind)
                    .increment(0);
            }
        }
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
            self.spec.name.clone(),
            self.group.clone(),
            self.cfg.lag_interval,
            lag_stop.clone(),
        ));

        let result = self.consume().await;

        // Finish: commit what was stored, then leave the group so the
        // partitions move to the remaining members at once instead of after
        // a session timeout.
        match self.consumer.commit_consumer_state(CommitMode::Sync) {
            Ok(()) | Err(KafkaError::ConsumerCommit(RDKafkaErrorCode::NoOffset)) => {}
            Err(e) => warn!(stage = %self.spec.name, error = %e, "final commit failed"),
        }
        self.consumer.unsubscribe();
        lag_stop.cancel();
        let _ = lag_task.await;
        info!(stage = %self.spec.name, "stage stopped");
        result
    }

    async fn consume(&self) -> Result<(), BusError> {
        loop {
            if self.shared.book().has_pending() {
                self.position_assigned().await?;
                continue;
            }
            let received = tokio::select! {
                biased;
                _ = self.shutdown.cancelled() => return Ok(()),
                // An assignment arrived during the last poll: position it.
                _ = self.shared.wake.notified() => continue,
                m = self.consumer.recv() => m,
            };
            let msg = match received {
                Ok(m) => Inbound::from_owned(&m.detach()),
                Err(e) => {
                    // Broker unreachable and the like: librdkafka reconnects
                    // by itself; do not spin.
                    warn!(stage = %self.spec.name, error = %e, "consumer error");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            };
            let key: PartitionKey = (msg.topic.clone(), msg.partition);
            let arrival = self.shared.book().arrival(&key, msg.offset);
            match arrival {
                Arrival::InOrder => {}
                Arrival::NotOwned => {
                    debug!(stage = %self.spec.name, topic = %msg.topic, partition = msg.partition, offset = msg.offset,
                        "record of a partition no longer owned, dropped");
                    continue;
                }
                Arrival::Behind { expected } => {
                    debug!(stage = %self.spec.name, topic = %msg.topic, partition = msg.partition, offset = msg.offset, expected,
                        "record already processed by this owner, skipped");
                    counter!(names::EVENTS_DUPLICATE, labels::STAGE => self.spec.name.clone(), labels::TOPIC => msg.topic.clone())
                        .increment(1);
                    continue;
                }
                Arrival::Gap { expected } => {
                    error!(stage = %self.spec.name, topic = %msg.topic, partition = msg.partition, offset = msg.offset, expected,
                        "records skipped between the partition's position and this record");
                    counter!(names::OFFSET_GAPS, labels::STAGE => self.spec.name.clone(), labels::TOPIC => msg.topic.clone()).increment(1);
                }
            }
            let text = |name| msg.header(name).and_then(|v| std::str::from_utf8(v).ok()).unwrap_or("");
            let span = info_span!("event", stage = %self.spec.name, topic = %msg.topic, partition = msg.partition,
                offset = msg.offset, key = msg.key_str().unwrap_or(""), workspace_id = text(headers::WORKSPACE_ID),
                event_id = text(headers::EVENT_ID), traceparent = text(headers::TRACEPARENT));
            if !self.handle(&msg).instrument(span).await? {
                // Shutdown during a retry: leave the offset unstored.
                return Ok(());
            }
            self.store_next(&key, &msg);
        }
    }

    /// Decides where every partition of the pending assignment resumes and
    /// assigns them with those offsets.
    async fn position_assigned(&self) -> Result<(), BusError> {
        let Some((generation, partitions)) = self.shared.book().take_pending() else { return Ok(()) };
        let mut starts = Vec::with_capacity(partitions.len());
        for (topic, partition) in &partitions {
            let start = self.retry_positioning("loading the stored offset", || self.processor.start_at(topic, *partition)).await?;
            starts.push(((topic.clone(), *partition), start));
        }
        let from_kafka: Vec<PartitionKey> =
            starts.iter().filter(|(_, s)| matches!(s, StartAt::Committed | StartAt::AppliedBefore(_))).map(|(k, _)| k.clone()).collect();
        let committed = if from_kafka.is_empty() {
            Vec::new()
        } else {
            self.retry_positioning("reading committed offsets and watermarks", || self.committed_positions(&from_kafka)).await?
        };
        let positions: Vec<(PartitionKey, Position)> = starts
            .into_iter()
            .map(|(key, start)| {
                let kafka = || committed.iter().find(|(k, _)| *k == key).map(|(_, p)| *p).unwrap_or(Position::Beginning);
                let position = match start {
                    StartAt::Offset(n) => Position::At(n),
                    StartAt::Beginning => Position::Beginning,
                    StartAt::Committed => kafka(),
                    // No commit at all (the broker lost its state): from the
                    // beginning, as only that is sure to miss no output.
                    StartAt::AppliedBefore(n) => match kafka() {
                        Position::At(c) => Position::At(c.min(n)),
                        Position::Beginning => Position::Beginning,
                    },
                };
                (key, position)
            })
            .collect();
        if !self.shared.book().positioned(generation, &positions) {
            debug!(stage = %self.spec.name, "a rebalance superseded the assignment being positioned");
            return Ok(());
        }
        let mut tpl = TopicPartitionList::new();
        let mut commit = TopicPartitionList::new();
        for ((topic, partition), position) in &positions {
            let (offset, n) = match position {
                Position::At(n) => (Offset::Offset(*n), *n),
                // Committed as offset 0: our topics are never truncated, and
                // an offset below the log start only means "earliest".
                Position::Beginning => (Offset::Beginning, 0),
            };
            tpl.add_partition_offset(topic, *partition, offset)?;
            commit.add_partition_offset(topic, *partition, Offset::Offset(n))?;
        }
        self.consumer.assign(&tpl)?;
        // The positions are committed at once (best-effort): stage-owned
        // ones so standard tools and `rag-engine verify` see where the
        // stage stands, and a commit past the log end is replaced before
        // any record lands behind it.
        if let Err(e) = self.consumer.commit(&commit, CommitMode::Async) {
            debug!(stage = %self.spec.name, error = %e, "committing the positions failed");
        }
        let listed: Vec<String> = positions
            .iter()
            .map(|((t, p), pos)| match pos {
                Position::At(n) => format!("{t}[{p}]@{n}"),
                Position::Beginning => format!("{t}[{p}]@beginning"),
            })
            .collect();
        info!(stage = %self.spec.name, positions = %listed.join(","), "partitions positioned");
        Ok(())
    }

    /// Kafka-owned positions: the committed offsets, clamped to the log.
    async fn committed_positions(&self, keys: &[PartitionKey]) -> Result<Vec<(PartitionKey, Position)>, ProcessError> {
        let consumer = self.consumer.clone();
        let keys = keys.to_vec();
        let timeout = Duration::from_secs(10);
        let joined = tokio::task::spawn_blocking(move || -> Result<Vec<(PartitionKey, Position)>, KafkaError> {
            let mut tpl = TopicPartitionList::new();
            for (t, p) in &keys {
                tpl.add_partition(t, *p);
            }
            let committed = consumer.committed_offsets(tpl, timeout)?;
            let mut out = Vec::with_capacity(keys.len());
            for (topic, partition) in keys {
                let offset = committed.find_partition(&topic, partition).and_then(|e| e.offset().to_raw()).filter(|o| *o >= 0);
                let position = match offset {
                    None => Position::Beginning,
                    Some(c) => {
                        let (low, high) = consumer.fetch_watermarks(&topic, partition, timeout)?;
                        if c > high {
                            warn!(topic = %topic, partition, committed = c, log_end = high,
                                "committed offset past the log end; resuming at the log end");
                        }
                        resume_from_committed(Some(c), low, high)
                    }
                };
                out.push(((topic, partition), position));
            }
            Ok(out)
        })
        .await;
        match joined {
            Ok(r) => r.map_err(|e| ProcessError::Transient(e.to_string())),
            Err(e) => Err(ProcessError::Transient(e.to_string())),
        }
    }

    async fn retry_positioning<T, F, Fut>(&self, what: &str, mut attempt_once: F) -> Result<T, BusError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, ProcessError>>,
    {
        let mut attempt = 0;
        loop {
            match attempt_once().await {
                Ok(v) => return Ok(v),
                Err(e) if attempt < POSITIONING_ATTEMPTS && !self.shutdown.is_cancelled() => {
                    warn!(stage = %self.spec.name, error = %e, "{what} failed, retrying");
                    attempt += 1;
                    tokio::time::sleep(backoff(&self.cfg, attempt.min(4))).await;
                }
                Err(e) => return Err(BusError::StageFailed { stage: self.spec.name.clone(), reason: format!("{what}: {e}") }),
            }
        }
    }

    /// Stores the partition's next offset for commit, if it is still ours.
    fn store_next(&self, key: &PartitionKey, msg: &Inbound) {
        let Some(next) = self.shared.book().processed(key, msg.offset, msg.timestamp_ms) else {
            debug!(stage = %self.spec.name, topic = %msg.topic, partition = msg.partition, "partition revoked meanwhile; its new owner decides");
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
            debug!(stage = %self.spec.name, error = %e, "offset not stored");
        }
    }

    /// Processes one record with retries and dead-lettering. Returns false
    /// if shutdown interrupted a retry (the record stays unprocessed).
    async fn handle(&self, msg: &Inbound) -> Result<bool, BusError> {
        let stage = self.spec.name.clone();
        let topic = msg.topic.clone();
        counter!(names::EVENTS_IN, labels::STAGE => stage.clone(), labels::TOPIC => topic.clone()).increment(1);
        let started = Instant::now();
        let mut attempt = 0u32;
        let result = loop {
            match self.processor.process(msg).await {
                Ok(outcome) => break Ok(outcome),
                Err(ProcessError::Transient(reason)) => {
                    counter!(names::EVENTS_FAILED, labels::STAGE => stage.clone(), labels::TOPIC => topic.clone(), labels::KIND => "transient")
                        .increment(1);
                    if attempt >= self.cfg.max_retries {
                        error!(attempts = attempt + 1, %reason, "transient error outlived its retries; stopping the stage");
                        return Err(BusError::StageFailed {
                            stage,
                            reason: format!("{topic}[{}]@{}: {reason}", msg.partition, msg.offset),
                        });
                    }
                    let wait = backoff(&self.cfg, attempt);
                    warn!(attempt = attempt + 1, ?wait, %reason, "transient error, retrying");
                    attempt += 1;
                    tokio::select! {
                        _ = self.shutdown.cancelled() => return Ok(false),
                        _ = tokio::time::sleep(wait) => {}
                    }
                }
                Err(ProcessError::Permanent { code, reason }) => break Err((code, reason)),
            }
        };
        let dead_lettered = result.is_err();
        match result {
            Ok(Outcome::Applied) => {}
            Ok(Outcome::Duplicate) => {
                debug!("already applied, skipped");
                counter!(names::EVENTS_DUPLICATE, labels::STAGE => stage.clone(), labels::TOPIC => topic.clone()).increment(1);
            }
            Err((code, reason)) => {
                counter!(names::EVENTS_FAILED, labels::STAGE => stage.clone(), labels::TOPIC => topic.clone(), labels::KIND => "permanent")
                    .increment(1);
                self.dead_letter(msg, &code, &reason).await?;
            }
        }
        self.budget.lock().unwrap_or_else(|p| p.into_inner()).record(dead_lettered);
        histogram!(names::PROCESSING_SECONDS, labels::STAGE => stage, labels::TOPIC => topic).record(started.elapsed().as_secs_f64());
        Ok(true)
    }

    async fn dead_letter(&self, msg: &Inbound, code: &str, reason: &str) -> Result<(), BusError> {
        let within = self.budget.lock().unwrap_or_else(|p| p.into_inner()).allows_another();
        if !within {
            let limit = self.cfg.dead_letter_limit;
            error!(%code, %reason, max = limit.max, window = limit.window,
                "dead-letter limit reached; stopping the stage instead of dead-lettering everything");
            return Err(BusError::StageFailed {
                stage: self.spec.name.clone(),
                reason: format!(
                    "more than {} of the last {} records failed permanently (last: {}[{}]@{} {code}: {reason}); \
                     the record is kept and a restart resumes at it",
                    limit.max, limit.window, msg.topic, msg.partition, msg.offset
                ),
            });
        }
        warn!(%code, %reason, "permanent failure, sending to the dead-letter topic");
        self.dead_letters.send(&self.cfg, msg, code, reason, &self.shutdown).await?;
        let mut attempt = 0;
        loop {
            match self.processor.dead_lettered(msg, code, reason).await {
                Ok(()) => return Ok(()),
                Err(e) if attempt < self.cfg.max_retries && !self.shutdown.is_cancelled() => {
                    warn!(error = %e, "recording the dead letter failed, retrying");
                    tokio::time::sleep(backoff(&self.cfg, attempt)).await;
                    attempt += 1;
                }
                Err(e) => {
                    return Err(BusError::StageFailed { stage: self.spec.name.clone(), reason: format!("recording dead letter: {e}") })
                }
            }
        }
    }
}

/// Runs a stage until `shutdown` is cancelled; see [`StageRunner`].
pub async fn run_stage<P: Processor>(
    cfg: &BusConfig,
    spec: &StageSpec,
    processor: Arc<P>,
    dlq: EventProducer,
    shutdown: CancellationToken,
) -> Result<(), BusError> {
    StageRunner::new(cfg, spec, processor, dlq, shutdown)?.run().await
}

/// Counts an event a stage produced (the runner counts what comes in).
pub fn record_out(stage: &str, topic: &str) {
    counter!(names::EVENTS_OUT, labels::STAGE => stage.to_string(), labels::TOPIC => topic.to_string()).increment(1);
}

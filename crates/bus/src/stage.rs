//! The consumer loop every stage runs.
//!
//! Offsets: `enable.auto.offset.store=false`; an offset is stored only after
//! the processor reports the message's effect durable (or after the message
//! is safely in the dead-letter topic), and librdkafka auto-commits stored
//! offsets. Revocation commits synchronously; shutdown finishes the message
//! in flight, commits and leaves the group. Stages whose offsets live in
//! Postgres ([`StartAt`]) are positioned from there on assignment and also
//! commit to Kafka best-effort, so standard lag tools keep working.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use metrics::{counter, gauge, histogram};
use rag_telemetry::{labels, names};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance, StreamConsumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Headers, Message, OwnedMessage};
use rdkafka::topic_partition_list::Offset;
use rdkafka::ClientContext;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, info_span, warn, Instrument};

use crate::producer::EventProducer;
use crate::{headers, BusConfig, BusError};

/// A consumed record, detached from the consumer.
#[derive(Debug, Clone)]
pub struct Inbound {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub payload: Option<Vec<u8>>,
    pub headers: Vec<(String, Vec<u8>)>,
    /// Producer timestamp, milliseconds since the epoch, when known.
    pub timestamp_ms: Option<i64>,
}

impl Inbound {
    pub(crate) fn from_owned(m: &OwnedMessage) -> Self {
        let headers = m
            .headers()
            .map(|h| h.iter().map(|h| (h.key.to_string(), h.value.unwrap_or_default().to_vec())).collect())
            .unwrap_or_default();
        Inbound {
            topic: m.topic().to_string(),
            partition: m.partition(),
            offset: m.offset(),
            key: m.key().map(<[u8]>::to_vec),
            payload: m.payload().map(<[u8]>::to_vec),
            headers,
            timestamp_ms: m.timestamp().to_millis(),
        }
    }

    pub fn key_str(&self) -> Option<&str> {
        self.key.as_deref().and_then(|k| std::str::from_utf8(k).ok())
    }

    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_slice())
    }

    pub fn header_str(&self, name: &str) -> Option<String> {
        self.header(name).map(|v| String::from_utf8_lossy(v).into_owned())
    }
}

/// What happened to a message the processor accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Its effect is now durable.
    Applied,
    /// It had been applied before (a re-delivery); nothing changed.
    Duplicate,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum ProcessError {
    /// May succeed later: retried with backoff, then the stage stops
    /// without storing the offset, so a restart resumes at this message.
    #[error("transient: {0}")]
    Transient(String),
    /// Will never succeed: the message goes to `<topic>.dlq`.
    #[error("permanent ({code}): {reason}")]
    Permanent { code: String, reason: String },
}

impl ProcessError {
    pub fn permanent(code: impl Into<String>, reason: impl Into<String>) -> Self {
        ProcessError::Permanent { code: code.into(), reason: reason.into() }
    }
}

/// Where a partition resumes after it is assigned to this instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    /// Kafka's committed offset decides (Kafka -> Kafka stages).
    Committed,
    /// The processor's own store says so (Kafka -> Postgres stages).
    Offset(i64),
    /// The processor's store has nothing yet: read from the beginning.
    Beginning,
}

/// One stage's effect. Implementations are the thin wiring between the bus
/// and the pure crates.
pub trait Processor: Send + Sync + 'static {
    /// Processes one message. `Ok` means its effect is durable.
    fn process(&self, msg: &Inbound) -> impl Future<Output = Result<Outcome, ProcessError>> + Send;

    /// Called once a message is in the dead-letter topic, e.g. to mark the
    /// document failed and, for database-owned offsets, to move past it.
    fn dead_lettered(
        &self,
        _msg: &Inbound,
        _code: &str,
        _reason: &str,
    ) -> impl Future<Output = Result<(), ProcessError>> + Send {
        async { Ok(()) }
    }

    /// Where a newly assigned partition resumes.
    fn start_at(&self, _topic: &str, _partition: i32) -> impl Future<Output = Result<StartAt, ProcessError>> + Send {
        async { Ok(StartAt::Committed) }
    }
}

/// A stage's identity on the bus.
#[derive(Debug, Clone)]
pub struct StageSpec {
    /// Stage name for logs, metrics and dead-letter headers.
    pub name: String,
    /// Consumer group (before the deployment prefix).
    pub group: String,
    pub topics: Vec<String>,
}

type PartitionKey = (String, i32);

#[derive(Default)]
struct SharedState {
    /// Partitions whose start position must be (re)established.
    unsynced: HashSet<PartitionKey>,
    /// Next offset to process per partition, for lag.
    next_offset: HashMap<PartitionKey, i64>,
    /// Producer timestamp of the newest processed message per partition.
    last_timestamp: HashMap<PartitionKey, i64>,
}

struct StageContext {
    stage: String,
    group: String,
    state: Arc<Mutex<SharedState>>,
}

impl ClientContext for StageContext {}

impl ConsumerContext for StageContext {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(tpl) = rebalance {
            // Commit what was processed before the partitions move on, so the
            // next owner does not redo it.
            match consumer.commit_consumer_state(CommitMode::Sync) {
                Ok(()) | Err(KafkaError::ConsumerCommit(rdkafka::types::RDKafkaErrorCode::NoOffset)) => {}
                Err(e) => warn!(stage = %self.stage, error = %e, "commit on revoke failed"),
            }
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            for e in tpl.elements() {
                let key = (e.topic().to_string(), e.partition());
                state.unsynced.remove(&key);
                state.next_offset.remove(&key);
                state.last_timestamp.remove(&key);
                gauge!(names::CONSUMER_LAG, labels::STAGE => self.stage.clone(), labels::GROUP => self.group.clone(),
                    labels::TOPIC => key.0.clone(), labels::PARTITION => key.1.to_string()).set(0.0);
            }
            info!(stage = %self.stage, partitions = tpl.count(), "partitions revoked");
            counter!(names::REBALANCES, labels::STAGE => self.stage.clone(), labels::GROUP => self.group.clone(), "kind" => "revoke").increment(1);
        }
    }

    fn post_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Assign(tpl) => {
                let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
                let mut assigned = Vec::new();
                for e in tpl.elements() {
                    state.unsynced.insert((e.topic().to_string(), e.partition()));
                    assigned.push(format!("{}[{}]", e.topic(), e.partition()));
                }
                info!(stage = %self.stage, partitions = %assigned.join(","), "partitions assigned");
                counter!(names::REBALANCES, labels::STAGE => self.stage.clone(), labels::GROUP => self.group.clone(), "kind" => "assign").increment(1);
            }
            Rebalance::Error(e) => warn!(stage = %self.stage, error = %e, "rebalance error"),
            Rebalance::Revoke(_) => {}
        }
    }
}

type StageConsumer = StreamConsumer<StageContext>;

fn backoff(cfg: &BusConfig, attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.min(16));
    cfg.retry_backoff.saturating_mul(factor).min(cfg.max_backoff)
}

/// Runs a stage until `shutdown` is cancelled (returns `Ok`) or a transient
/// error outlives its retries (returns `Err`; nothing is lost, a restart
/// resumes at the failed message).
pub async fn run_stage<P: Processor>(
    cfg: &BusConfig,
    spec: &StageSpec,
    processor: Arc<P>,
    dlq: EventProducer,
    shutdown: CancellationToken,
) -> Result<(), BusError> {
    let group = cfg.group_of(&spec.group);
    let state = Arc::new(Mutex::new(SharedState::default()));
    let context = StageContext { stage: spec.name.clone(), group: group.clone(), state: state.clone() };
    let consumer: StageConsumer = cfg
        .client()
        .set("group.id", &group)
        .set("client.id", format!("{}-{}", spec.name, std::process::id()))
        .set("enable.auto.commit", "true")
        .set("auto.commit.interval.ms", "1000")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", cfg.fetch_wait_max_ms.to_string())
        .set("session.timeout.ms", cfg.session_timeout_ms.to_string())
        .set("heartbeat.interval.ms", (cfg.session_timeout_ms / 5).max(500).to_string())
        .create_with_context(context)?;
    let consumer = Arc::new(consumer);
    let topics: Vec<&str> = spec.topics.iter().map(String::as_str).collect();
    consumer.subscribe(&topics)?;
    info!(stage = %spec.name, group = %group, topics = %spec.topics.join(","), "stage started");
    // Counters start at zero, so rates and dashboards work before the first failure.
    for topic in &spec.topics {
        let (stage, topic) = (spec.name.clone(), topic.clone());
        counter!(names::EVENTS_DUPLICATE, labels::STAGE => stage.clone(), labels::TOPIC => topic.clone()).increment(0);
        for kind in ["transient", "permanent"] {
            counter!(names::EVENTS_FAILED, labels::STAGE => stage.clone(), labels::TOPIC => topic.clone(), labels::KIND => kind).increment(0);
        }
    }

    // The lag reporter stops with this stage only: `shutdown` is shared by
    // every stage of the process and is not ours to cancel.
    let lag_stop = shutdown.child_token();
    let lag_task = tokio::spawn(report_lag(
        cfg.clone(),
        consumer.clone(),
        state.clone(),
        spec.name.clone(),
        group.clone(),
        cfg.lag_interval,
        lag_stop.clone(),
    ));

    let result = consume(cfg, spec, &consumer, &state, processor.as_ref(), &dlq, &shutdown).await;

    // Finish: commit what was stored, then leave the group so the partitions
    // move to the remaining members at once instead of after a timeout.
    match consumer.commit_consumer_state(CommitMode::Sync) {
        Ok(()) | Err(KafkaError::ConsumerCommit(rdkafka::types::RDKafkaErrorCode::NoOffset)) => {}
        Err(e) => warn!(stage = %spec.name, error = %e, "final commit failed"),
    }
    consumer.unsubscribe();
    lag_stop.cancel();
    let _ = lag_task.await;
    info!(stage = %spec.name, "stage stopped");
    result
}

async fn consume<P: Processor>(
    cfg: &BusConfig,
    spec: &StageSpec,
    consumer: &StageConsumer,
    state: &Mutex<SharedState>,
    processor: &P,
    dlq: &EventProducer,
    shutdown: &CancellationToken,
) -> Result<(), BusError> {
    loop {
        let received = tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            m = consumer.recv() => m,
        };
        let owned = match received {
            Ok(m) => m.detach(),
            Err(e) => {
                // Broker unreachable, partition EOF and the like: librdkafka
                // reconnects by itself; do not spin.
                warn!(stage = %spec.name, error = %e, "consumer error");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let msg = Inbound::from_owned(&owned);
        let key = (msg.topic.clone(), msg.partition);

        let needs_sync = state.lock().unwrap_or_else(|p| p.into_inner()).unsynced.remove(&key);
        if needs_sync && position_partition(spec, consumer, processor, &msg, shutdown).await? {
            continue;
        }

        let text = |name| msg.header(name).and_then(|v| std::str::from_utf8(v).ok()).unwrap_or("");
        let span = info_span!("event", stage = %spec.name, topic = %msg.topic, partition = msg.partition,
            offset = msg.offset, key = msg.key_str().unwrap_or(""), workspace_id = text(headers::WORKSPACE_ID),
            event_id = text(headers::EVENT_ID), traceparent = text(headers::TRACEPARENT));
        let handled = handle(cfg, spec, processor, dlq, &msg, shutdown).instrument(span).await?;
        if !handled {
            // Shutdown during a retry: leave the offset unstored.
            return Ok(());
        }
        {
            let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
            s.next_offset.insert(key.clone(), msg.offset + 1);
            if let Some(ts) = msg.timestamp_ms {
                s.last_timestamp.insert(key.clone(), ts);
            }
        }
        match consumer.store_offset(&msg.topic, msg.partition, msg.offset + 1) {
            Ok(()) => {}
            // The partition was revoked meanwhile: its new owner takes over.
            Err(e) => debug!(stage = %spec.name, error = %e, "offset not stored (partition revoked?)"),
        }
    }
}

/// Establishes where a newly assigned partition resumes. Returns true when
/// the consumer was moved and `msg` must be dropped.
async fn position_partition<P: Processor>(
    spec: &StageSpec,
    consumer: &StageConsumer,
    processor: &P,
    msg: &Inbound,
    shutdown: &CancellationToken,
) -> Result<bool, BusError> {
    let mut attempt = 0;
    let start = loop {
        match processor.start_at(&msg.topic, msg.partition).await {
            Ok(s) => break s,
            Err(e) if attempt < 10 && !shutdown.is_cancelled() => {
                warn!(stage = %spec.name, error = %e, "loading stored offset failed, retrying");
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => {
                return Err(BusError::StageFailed { stage: spec.name.clone(), reason: format!("loading offsets: {e}") })
            }
        }
    };
    let target = match start {
        StartAt::Committed => return Ok(false),
        StartAt::Offset(n) if n == msg.offset => return Ok(false),
        StartAt::Offset(n) => Offset::Offset(n),
        // Offset 0 is the beginning unless retention removed it; seeking to
        // the beginning needs no watermark round trip.
        StartAt::Beginning if msg.offset == 0 => return Ok(false),
        StartAt::Beginning => Offset::Beginning,
    };
    info!(stage = %spec.name, topic = %msg.topic, partition = msg.partition, from = msg.offset, to = ?target,
        "positioning partition at the offset stored in the database");
    let mut attempt = 0;
    loop {
        match consumer.seek(&msg.topic, msg.partition, target, Duration::from_secs(10)) {
            Ok(()) => return Ok(true),
            // A busy broker: try again before giving up on the stage.
            Err(e) if attempt < 10 && !shutdown.is_cancelled() => {
                warn!(stage = %spec.name, error = %e, "seek failed, retrying");
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Processes one message with retries and dead-lettering. Returns false if
/// shutdown interrupted a retry (the message stays unprocessed).
async fn handle<P: Processor>(
    cfg: &BusConfig,
    spec: &StageSpec,
    processor: &P,
    dlq: &EventProducer,
    msg: &Inbound,
    shutdown: &CancellationToken,
) -> Result<bool, BusError> {
    let stage = spec.name.clone();
    let topic = msg.topic.clone();
    counter!(names::EVENTS_IN, labels::STAGE => stage.clone(), labels::TOPIC => topic.clone()).increment(1);
    let started = Instant::now();
    let mut attempt = 0u32;
    let result = loop {
        match processor.process(msg).await {
            Ok(outcome) => break Ok(outcome),
            Err(ProcessError::Transient(reason)) => {
                counter!(names::EVENTS_FAILED, labels::STAGE => stage.clone(), labels::TOPIC => topic.clone(), labels::KIND => "transient").increment(1);
                if attempt >= cfg.max_retries {
                    error!(attempts = attempt + 1, %reason, "transient error outlived its retries; stopping the stage");
                    return Err(BusError::StageFailed {
                        stage,
                        reason: format!("{topic}[{}]@{}: {reason}", msg.partition, msg.offset),
                    });
                }
                let wait = backoff(cfg, attempt);
                warn!(attempt = attempt + 1, ?wait, %reason, "transient error, retrying");
                attempt += 1;
                tokio::select! {
                    _ = shutdown.cancelled() => return Ok(false),
                    _ = tokio::time::sleep(wait) => {}
                }
            }
            Err(ProcessError::Permanent { code, reason }) => break Err((code, reason)),
        }
    };
    match result {
        Ok(Outcome::Applied) => {}
        Ok(Outcome::Duplicate) => {
            debug!("already applied, skipped");
            counter!(names::EVENTS_DUPLICATE, labels::STAGE => stage.clone(), labels::TOPIC => topic.clone()).increment(1);
        }
        Err((code, reason)) => {
            counter!(names::EVENTS_FAILED, labels::STAGE => stage.clone(), labels::TOPIC => topic.clone(), labels::KIND => "permanent").increment(1);
            warn!(%code, %reason, "permanent failure, sending to the dead-letter topic");
            dead_letter(cfg, spec, processor, dlq, msg, &code, &reason, shutdown).await?;
        }
    }
    histogram!(names::PROCESSING_SECONDS, labels::STAGE => stage, labels::TOPIC => topic).record(started.elapsed().as_secs_f64());
    Ok(true)
}

#[allow(clippy::too_many_arguments)]
async fn dead_letter<P: Processor>(
    cfg: &BusConfig,
    spec: &StageSpec,
    processor: &P,
    dlq: &EventProducer,
    msg: &Inbound,
    code: &str,
    reason: &str,
    shutdown: &CancellationToken,
) -> Result<(), BusError> {
    let mut hdrs = msg.headers.clone();
    hdrs.retain(|(k, _)| !k.starts_with("dlq-"));
    hdrs.push((headers::DLQ_ORIGINAL_TOPIC.into(), msg.topic.clone().into_bytes()));
    hdrs.push((headers::DLQ_ORIGINAL_PARTITION.into(), msg.partition.to_string().into_bytes()));
    hdrs.push((headers::DLQ_ORIGINAL_OFFSET.into(), msg.offset.to_string().into_bytes()));
    hdrs.push((headers::DLQ_STAGE.into(), spec.name.clone().into_bytes()));
    hdrs.push((headers::DLQ_REASON_CODE.into(), code.as_bytes().to_vec()));
    hdrs.push((headers::DLQ_REASON.into(), reason.as_bytes().to_vec()));
    hdrs.push((headers::DLQ_FAILED_AT.into(), rag_events::now_millis().to_string().into_bytes()));
    let dlq_topic = rag_events::Topics::dlq_of(&msg.topic);
    let payload = msg.payload.clone().unwrap_or_default();
    let mut attempt = 0;
    loop {
        match dlq.send_raw(&dlq_topic, msg.key.as_deref(), &payload, &hdrs).await {
            Ok(_) => break,
            Err(e) if attempt < cfg.max_retries && !shutdown.is_cancelled() => {
                warn!(error = %e, "dead-letter produce failed, retrying");
                tokio::time::sleep(backoff(cfg, attempt)).await;
                attempt += 1;
            }
            Err(e) => {
                return Err(BusError::StageFailed { stage: spec.name.clone(), reason: format!("dead-letter produce: {e}") })
            }
        }
    }
    counter!(names::DEAD_LETTERS, labels::STAGE => spec.name.clone(), labels::TOPIC => msg.topic.clone(), labels::REASON => code.to_string()).increment(1);
    let mut attempt = 0;
    loop {
        match processor.dead_lettered(msg, code, reason).await {
            Ok(()) => return Ok(()),
            Err(e) if attempt < cfg.max_retries && !shutdown.is_cancelled() => {
                warn!(error = %e, "recording the dead letter failed, retrying");
                tokio::time::sleep(backoff(cfg, attempt)).await;
                attempt += 1;
            }
            Err(e) => {
                return Err(BusError::StageFailed { stage: spec.name.clone(), reason: format!("recording dead letter: {e}") })
            }
        }
    }
}

/// Exports lag for every assigned partition: the log end offset minus the
/// next offset this stage will process, computed by the stage itself; the
/// age of the oldest unprocessed event (the record at that next offset,
/// read by a group-less reader); and the size of each consumed topic's
/// dead-letter topic.
async fn report_lag(
    cfg: BusConfig,
    consumer: Arc<StageConsumer>,
    state: Arc<Mutex<SharedState>>,
    stage: String,
    group: String,
    every: Duration,
    shutdown: CancellationToken,
) {
    let reader: Option<Arc<BaseConsumer>> = cfg
        .client()
        .set("group.id", format!("{group}.lag-reader"))
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", cfg.fetch_wait_max_ms.to_string())
        .create()
        .map(Arc::new)
        .map_err(|e| warn!(stage = %stage, error = %e, "no lag reader: lag seconds fall back to the newest processed event"))
        .ok();
    let mut ticker = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let consumer = consumer.clone();
        let state = state.clone();
        let reader = reader.clone();
        let (stage, group) = (stage.clone(), group.clone());
        let done = tokio::task::spawn_blocking(move || {
            let Ok(assignment) = consumer.assignment() else { return };
            let mut lagging: Vec<(PartitionKey, i64, Option<i64>)> = Vec::new();
            let mut topics = std::collections::BTreeSet::new();
            for e in assignment.elements() {
                let key = (e.topic().to_string(), e.partition());
                topics.insert(key.0.clone());
                let Ok((low, high)) = consumer.fetch_watermarks(&key.0, key.1, Duration::from_secs(5)) else { continue };
                let (next, last_ts) = {
                    let s = state.lock().unwrap_or_else(|p| p.into_inner());
                    (s.next_offset.get(&key).copied(), s.last_timestamp.get(&key).copied())
                };
                let next = next
                    .or_else(|| {
                        consumer.committed_offsets(assignment.clone(), Duration::from_secs(5)).ok().and_then(|tpl| {
                            tpl.find_partition(&key.0, key.1).and_then(|p| p.offset().to_raw()).filter(|o| *o >= 0)
                        })
                    })
                    .unwrap_or(low)
                    .max(low);
                let lag = (high - next).max(0);
                let l = lag_labels(&stage, &group, &key);
                gauge!(names::CONSUMER_LAG, &l).set(lag as f64);
                gauge!(names::CONSUMER_NEXT_OFFSET, &l).set(next as f64);
                if lag == 0 {
                    gauge!(names::CONSUMER_LAG_SECONDS, &l).set(0.0);
                } else {
                    lagging.push((key, next, last_ts));
                }
            }
            let oldest = reader.as_deref().map(|r| timestamps_at(r, &lagging)).unwrap_or_default();
            for (key, _, last_ts) in &lagging {
                // The oldest unprocessed event's age; if it cannot be read,
                // the newest processed one's (an upper bound).
                let Some(ts) = oldest.get(key).copied().or(*last_ts) else { continue };
                let age = ((rag_events::now_millis() - ts).max(0) as f64) / 1000.0;
                gauge!(names::CONSUMER_LAG_SECONDS, &lag_labels(&stage, &group, key)).set(age);
            }
            for topic in topics {
                let dlq = rag_events::Topics::dlq_of(&topic);
                let Ok(metadata) = consumer.fetch_metadata(Some(&dlq), Duration::from_secs(5)) else { continue };
                let partitions: Vec<i32> =
                    metadata.topics().iter().filter(|t| t.name() == dlq).flat_map(|t| t.partitions().iter().map(|p| p.id())).collect();
                if !partitions.is_empty() {
                    let size: i64 = partitions
                        .iter()
                        .filter_map(|p| consumer.fetch_watermarks(&dlq, *p, Duration::from_secs(5)).ok())
                        .map(|(low, high)| (high - low).max(0))
                        .sum();
                    gauge!(names::DLQ_MESSAGES, labels::TOPIC => dlq).set(size as f64);
                }
            }
        });
        let _ = done.await;
    }
}

fn lag_labels(stage: &str, group: &str, key: &PartitionKey) -> [(&'static str, String); 4] {
    [
        (labels::STAGE, stage.to_string()),
        (labels::GROUP, group.to_string()),
        (labels::TOPIC, key.0.clone()),
        (labels::PARTITION, key.1.to_string()),
    ]
}

/// The producer timestamps of the records at the given offsets, read with
/// a group-less consumer (nothing committed, the stage undisturbed).
fn timestamps_at(reader: &BaseConsumer, wanted: &[(PartitionKey, i64, Option<i64>)]) -> HashMap<PartitionKey, i64> {
    use rdkafka::TopicPartitionList;
    let mut out = HashMap::new();
    if wanted.is_empty() {
        return out;
    }
    let mut tpl = TopicPartitionList::new();
    for ((topic, partition), next, _) in wanted {
        if tpl.add_partition_offset(topic, *partition, Offset::Offset(*next)).is_err() {
            return out;
        }
    }
    if reader.assign(&tpl).is_err() {
        return out;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while out.len() < wanted.len() && std::time::Instant::now() < deadline {
        if let Some(Ok(m)) = reader.poll(Duration::from_millis(100)) {
            let key = (m.topic().to_string(), m.partition());
            if let Some(ts) = m.timestamp().to_millis() {
                out.entry(key).or_insert(ts);
            }
        }
    }
    let _ = reader.unassign();
    out
}

/// Counts an event a stage produced (the stage loop counts what comes in).
pub fn record_out(stage: &str, topic: &str) {
    counter!(names::EVENTS_OUT, labels::STAGE => stage.to_string(), labels::TOPIC => topic.to_string()).increment(1);
}

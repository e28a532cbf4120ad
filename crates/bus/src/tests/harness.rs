//! The runner tests' fixture: a [`Recorder`] stage that records what it
//! saw (optionally keeping its own positions, as a Postgres-owned stage
//! does), and a [`Harness`] with its own topic prefix on the real broker.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::admin::{committed_offsets, ensure_topics, watermarks};
use crate::{
    BusConfig, BusError, DeadLetterLimit, EventProducer, FailureCode, Inbound, Outcome, Positions, ProcessError, Stage, StageIdentity,
    StageRunner, StartAt,
};
use rag_events::{Codec, EventType, Topics};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub(super) const PARTITIONS: i32 = 4;
pub(super) const GROUP: &str = "test-group";

pub(super) fn brokers() -> String {
    if let Ok(b) = std::env::var("KAFKA_BROKERS") {
        return b;
    }
    let env = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.local/env");
    let text = std::fs::read_to_string(&env).expect("the local stack is not configured: run `scripts/stack up` first");
    text.lines()
        .find_map(|l| l.trim().trim_start_matches("export ").strip_prefix("KAFKA_BROKERS=").map(str::to_string))
        .expect("KAFKA_BROKERS in .local/env")
}

/// What a stage-owned store would hold: next offset per partition, written
/// together with the effect (as the projector does in one transaction).
pub(super) type OwnPositions = Arc<Mutex<HashMap<(String, i32), i64>>>;

#[derive(Default)]
pub(super) struct Recorder {
    /// (partition, offset, payload) in processing order.
    pub(super) seen: Mutex<Vec<(i32, i64, String)>>,
    /// Time spent on each record.
    pub(super) delay: Duration,
    /// After recording the effect of this record, never return: the
    /// process "dies" between the effect and the offset store.
    pub(super) hang_after: Mutex<Option<(i32, i64)>>,
    /// Positions kept by the stage itself (None: Kafka owns them).
    pub(super) own: Option<OwnPositions>,
    /// With `own`: an output is produced after the store commits (as the
    /// indexer's DocumentIngested), and again for a re-delivered record.
    pub(super) output_after_commit: bool,
    /// (partition, offset) of every output produced.
    pub(super) outputs: Mutex<Vec<(i32, i64)>>,
    /// After recording the effect of one of these records, wait until the
    /// test takes it out (a slow record, held for as long as the test needs).
    pub(super) gate: Mutex<Vec<(i32, i64)>>,
    /// Records being processed now: per partition, and the most ever seen
    /// at once per partition and in total.
    pub(super) active: Mutex<Active>,
}

#[derive(Default, Debug, Clone)]
pub(super) struct Active {
    pub(super) now: HashMap<i32, usize>,
    pub(super) max_per_partition: usize,
    pub(super) max_total: usize,
}

impl Recorder {
    pub(super) fn seen(&self) -> Vec<(i32, i64, String)> {
        self.seen.lock().unwrap().clone()
    }

    pub(super) fn count_of(&self, partition: i32, offset: i64) -> usize {
        self.seen.lock().unwrap().iter().filter(|(p, o, _)| *p == partition && *o == offset).count()
    }
}

impl Stage for Recorder {
    type Error = ProcessError;

    fn identity(&self) -> StageIdentity {
        StageIdentity {
            name: "test-stage",
            group: GROUP.into(),
            consumes: vec![EventType::DocumentUploaded],
            produces: Vec::new(),
            positions: if self.own.is_some() { Positions::Postgres } else { Positions::Kafka },
            max_in_flight: None,
        }
    }

    async fn process(&self, msg: &Inbound) -> Result<Outcome, ProcessError> {
        {
            let mut a = self.active.lock().unwrap();
            let n = a.now.entry(msg.partition).or_default();
            *n += 1;
            let on_partition = *n;
            let total = a.now.values().sum();
            a.max_per_partition = a.max_per_partition.max(on_partition);
            a.max_total = a.max_total.max(total);
        }
        let outcome = self.apply(msg).await;
        *self.active.lock().unwrap().now.entry(msg.partition).or_default() -= 1;
        outcome
    }

    async fn start_at(&self, topic: &str, partition: i32) -> Result<StartAt, ProcessError> {
        Ok(match &self.own {
            None => StartAt::Committed,
            Some(own) => match own.lock().unwrap().get(&(topic.to_string(), partition)) {
                Some(n) if self.output_after_commit => StartAt::AppliedBefore(*n),
                Some(n) => StartAt::Offset(*n),
                None => StartAt::Beginning,
            },
        })
    }
}

impl Recorder {
    async fn apply(&self, msg: &Inbound) -> Result<Outcome, ProcessError> {
        let payload = String::from_utf8_lossy(msg.payload.as_deref().unwrap_or_default()).into_owned();
        if let Some(own) = &self.own {
            // Compare-and-set, as the Postgres-owned stages do.
            let mut own = own.lock().unwrap();
            let next = own.entry((msg.topic.clone(), msg.partition)).or_insert(0);
            if msg.offset < *next {
                drop(own);
                if self.output_after_commit {
                    self.outputs.lock().unwrap().push((msg.partition, msg.offset));
                }
                return Ok(Outcome::Duplicate);
            }
            *next = msg.offset + 1;
        }
        if payload.starts_with("poison") {
            return Err(ProcessError::permanent(FailureCode::InvalidEvent, "a record that can never be processed"));
        }
        self.seen.lock().unwrap().push((msg.partition, msg.offset, payload));
        if *self.hang_after.lock().unwrap() == Some((msg.partition, msg.offset)) {
            std::future::pending::<()>().await;
        }
        while self.gate.lock().unwrap().contains(&(msg.partition, msg.offset)) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        if self.output_after_commit {
            self.outputs.lock().unwrap().push((msg.partition, msg.offset));
        }
        Ok(Outcome::Applied)
    }
}

pub(super) struct Harness {
    pub(super) cfg: BusConfig,
    pub(super) topic: String,
    pub(super) producer: EventProducer,
}

impl Harness {
    /// Runs `r` until it hangs after the effect of `victim` (its
    /// `hang_after`), lets the other partitions finish and auto-commit,
    /// then kills the stage: a crash between the effect and the offset.
    pub(super) async fn crash_after_effect_of(&self, r: &Arc<Recorder>, victim: (i32, i64)) {
        let running = self.start(r.clone());
        wait_until("the victim's effect", Duration::from_secs(60), || r.count_of(victim.0, victim.1) == 1).await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        running.task.abort();
        let _ = running.task.await;
    }

    pub(super) async fn new() -> Harness {
        // Logs (librdkafka's included) go to stderr, which the test runner
        // shows for a failing test; `RUST_LOG` and `KAFKA_DEBUG` add detail.
        let _ = rag_telemetry::init_logs(false);
        let id = uuid::Uuid::new_v4().simple().to_string();
        let cfg = BusConfig {
            brokers: brokers(),
            topics: Topics::new(format!("r{}.", &id[..12])),
            partitions: PARTITIONS,
            fetch_wait_max_ms: 20,
            max_retries: 2,
            retry_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_millis(500),
            lag_interval: Duration::from_secs(1),
            session_timeout_ms: 6000,
            max_poll_interval_ms: 300_000,
            idempotence: std::env::var("KAFKA_IDEMPOTENCE").map_or(true, |v| v != "false"),
            debug: std::env::var("KAFKA_DEBUG").ok(),
            dead_letter_limit: DeadLetterLimit::default(),
            max_in_flight: 4,
        };
        let mut attempt = 0;
        while let Err(e) = ensure_topics(&cfg).await {
            attempt += 1;
            assert!(attempt < 50, "creating topics: {e}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let topic = cfg.topics.of(EventType::DocumentUploaded);
        let producer = EventProducer::new(&cfg, Codec::embedded().unwrap(), "runner-test").unwrap();
        Harness { cfg, topic, producer }
    }

    pub(super) fn group(&self) -> String {
        self.cfg.group_of(GROUP)
    }

    pub(super) fn start(&self, processor: Arc<Recorder>) -> Running {
        let stop = CancellationToken::new();
        let dlq = EventProducer::new(&self.cfg, Codec::embedded().unwrap(), "runner-test-dlq").unwrap();
        let runner = StageRunner::new(&self.cfg, processor, dlq, stop.clone()).unwrap();
        let (paused, book) = (runner.paused_partitions(), runner.partition_book());
        Running { stop, paused, book, task: tokio::spawn(runner.run()) }
    }

    /// Produces `n` records with distinct keys; returns where they landed.
    pub(super) async fn produce(&self, tag: &str, n: usize) -> Vec<(i32, i64)> {
        let mut out = Vec::new();
        for i in 0..n {
            let d = self
                .producer
                .send_raw(&self.topic, Some(format!("{tag}-{i}").as_bytes()), format!("{tag}-{i}").as_bytes(), &[])
                .await
                .unwrap();
            out.push((d.partition, d.offset));
        }
        out
    }

    pub(super) async fn log_ends(&self) -> HashMap<i32, i64> {
        watermarks(&self.cfg, &self.topic).await.unwrap().into_iter().map(|(p, _, high)| (p, high)).collect()
    }

    pub(super) async fn committed(&self) -> HashMap<i32, Option<i64>> {
        committed_offsets(&self.cfg, &self.group(), &self.topic).await.unwrap().into_iter().collect()
    }

    /// Every record in the log was seen at least once, and Kafka's committed
    /// offset of every partition is exactly its log end.
    pub(super) async fn assert_all_processed_and_committed(&self, r: &Recorder) {
        let ends = self.log_ends().await;
        for (p, end) in &ends {
            for o in 0..*end {
                assert!(r.count_of(*p, o) >= 1, "record {p}@{o} was never processed (log end {end}); seen {:?}", r.seen());
            }
        }
        let committed = self.committed().await;
        for (p, end) in &ends {
            let c = committed.get(p).copied().flatten();
            if *end > 0 {
                assert_eq!(c, Some(*end), "committed offset of partition {p} must be its log end");
            }
        }
    }
}

pub(super) struct Running {
    pub(super) stop: CancellationToken,
    /// The partitions the runner holds paused for back-pressure.
    pub(super) paused: Arc<Mutex<std::collections::HashSet<(String, i32)>>>,
    /// Its partitions and how many assignments and revocations it had.
    pub(super) book: Arc<Mutex<crate::stage::positions::PartitionBook>>,
    pub(super) task: JoinHandle<Result<(), BusError>>,
}

impl Running {
    pub(super) async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(Duration::from_secs(30), self.task).await.expect("the stage stops").unwrap().unwrap();
    }
}

pub(super) async fn wait_until(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < timeout, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

//! The stage runner's offset and positioning rules, on the real broker of
//! `scripts/stack up`. Each test has its own topic prefix (its own topics
//! and groups). The processor here records what it saw; what the broker
//! says (committed offsets, watermarks) is read with a group-less client.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rag_bus::admin::{committed_offsets, ensure_topics, read_topic, watermarks};
use rag_bus::{
    BusConfig, BusError, DeadLetterLimit, EventProducer, Inbound, Outcome, Positions, ProcessError, Stage, StageIdentity, StageRunner,
    StartAt,
};
use rag_events::{Codec, EventType, Topics};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const PARTITIONS: i32 = 4;
const GROUP: &str = "test-group";

fn brokers() -> String {
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
type OwnPositions = Arc<Mutex<HashMap<(String, i32), i64>>>;

#[derive(Default)]
struct Recorder {
    /// (partition, offset, payload) in processing order.
    seen: Mutex<Vec<(i32, i64, String)>>,
    /// Time spent on each record.
    delay: Duration,
    /// After recording the effect of this record, never return: the
    /// process "dies" between the effect and the offset store.
    hang_after: Mutex<Option<(i32, i64)>>,
    /// Positions kept by the stage itself (None: Kafka owns them).
    own: Option<OwnPositions>,
    /// With `own`: an output is produced after the store commits (as the
    /// indexer's DocumentIngested), and again for a re-delivered record.
    output_after_commit: bool,
    /// (partition, offset) of every output produced.
    outputs: Mutex<Vec<(i32, i64)>>,
}

impl Recorder {
    fn seen(&self) -> Vec<(i32, i64, String)> {
        self.seen.lock().unwrap().clone()
    }

    fn count_of(&self, partition: i32, offset: i64) -> usize {
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
        }
    }

    async fn process(&self, msg: &Inbound) -> Result<Outcome, ProcessError> {
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
            return Err(ProcessError::permanent("poison", "a record that can never be processed"));
        }
        self.seen.lock().unwrap().push((msg.partition, msg.offset, payload));
        if *self.hang_after.lock().unwrap() == Some((msg.partition, msg.offset)) {
            std::future::pending::<()>().await;
        }
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        if self.output_after_commit {
            self.outputs.lock().unwrap().push((msg.partition, msg.offset));
        }
        Ok(Outcome::Applied)
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

struct Harness {
    cfg: BusConfig,
    topic: String,
    producer: EventProducer,
}

impl Harness {
    /// Runs `r` until it hangs after the effect of `victim` (its
    /// `hang_after`), lets the other partitions finish and auto-commit,
    /// then kills the stage: a crash between the effect and the offset.
    async fn crash_after_effect_of(&self, r: &Arc<Recorder>, victim: (i32, i64)) {
        let running = self.start(r.clone());
        wait_until("the victim's effect", Duration::from_secs(60), || r.count_of(victim.0, victim.1) == 1).await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        running.task.abort();
        let _ = running.task.await;
    }

    async fn new() -> Harness {
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

    fn group(&self) -> String {
        self.cfg.group_of(GROUP)
    }

    fn start(&self, processor: Arc<Recorder>) -> Running {
        let stop = CancellationToken::new();
        let dlq = EventProducer::new(&self.cfg, Codec::embedded().unwrap(), "runner-test-dlq").unwrap();
        let runner = StageRunner::new(&self.cfg, processor, dlq, stop.clone()).unwrap();
        Running { stop, task: tokio::spawn(runner.run()) }
    }

    /// Produces `n` records with distinct keys; returns where they landed.
    async fn produce(&self, tag: &str, n: usize) -> Vec<(i32, i64)> {
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

    async fn log_ends(&self) -> HashMap<i32, i64> {
        watermarks(&self.cfg, &self.topic).await.unwrap().into_iter().map(|(p, _, high)| (p, high)).collect()
    }

    async fn committed(&self) -> HashMap<i32, Option<i64>> {
        committed_offsets(&self.cfg, &self.group(), &self.topic).await.unwrap().into_iter().collect()
    }

    /// Every record in the log was seen at least once, and Kafka's committed
    /// offset of every partition is exactly its log end.
    async fn assert_all_processed_and_committed(&self, r: &Recorder) {
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

struct Running {
    stop: CancellationToken,
    task: JoinHandle<Result<(), BusError>>,
}

impl Running {
    async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(Duration::from_secs(30), self.task).await.expect("the stage stops").unwrap().unwrap();
    }
}

async fn wait_until(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < timeout, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Seen on HEAD 518e61b: after a restart the next record of every
/// partition was skipped, because the stored offset was one too far.
#[tokio::test(flavor = "multi_thread")]
async fn stop_produce_start_processes_every_record_once() {
    let h = Harness::new().await;
    let r = Arc::new(Recorder::default());
    let first = h.produce("a", 12).await;
    let running = h.start(r.clone());
    wait_until("the first records", Duration::from_secs(60), || r.seen().len() >= first.len()).await;
    running.stop().await;
    h.assert_all_processed_and_committed(&r).await;

    let second = h.produce("b", 12).await;
    let running = h.start(r.clone());
    wait_until("the records produced while stopped", Duration::from_secs(60), || r.seen().len() >= first.len() + second.len()).await;
    running.stop().await;
    for (p, o) in first.iter().chain(&second) {
        assert_eq!(r.count_of(*p, *o), 1, "record {p}@{o} processed exactly once");
    }
    h.assert_all_processed_and_committed(&r).await;
}

/// A crash after the effect but before the offset is stored re-delivers
/// that record (at-least-once), and skips nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_crash_between_effect_and_commit_redelivers_the_record() {
    let h = Harness::new().await;
    let landed = h.produce("a", 8).await;
    let victim = landed[4];
    let r = Arc::new(Recorder { hang_after: Mutex::new(Some(victim)), ..Default::default() });
    h.crash_after_effect_of(&r, victim).await;
    assert!(h.committed().await.get(&victim.0).copied().flatten().unwrap_or(0) <= victim.1, "the victim's offset was never stored");

    *r.hang_after.lock().unwrap() = None;
    let running = h.start(r.clone());
    wait_until("the victim again", Duration::from_secs(60), || r.count_of(victim.0, victim.1) == 2).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    running.stop().await;
    h.assert_all_processed_and_committed(&r).await;
}

/// Found by the chaos harness: the indexer commits the index and its offset
/// in Postgres, then produces DocumentIngested. A crash (or a broker that
/// stays away past the retries) in between left the document `chunked` for
/// good: the stage resumed at its own offset, past the record whose output
/// was never produced. It now resumes at Kafka's committed offset when
/// that is behind, and the re-delivered record re-emits its output.
#[tokio::test(flavor = "multi_thread")]
async fn an_output_lost_between_the_store_commit_and_the_produce_is_produced_again() {
    let h = Harness::new().await;
    let landed = h.produce("a", 8).await;
    let victim = landed[4];
    let own: OwnPositions = Arc::default();
    let r = Arc::new(Recorder {
        own: Some(own.clone()),
        output_after_commit: true,
        hang_after: Mutex::new(Some(victim)),
        ..Default::default()
    });
    h.crash_after_effect_of(&r, victim).await;
    let outputs_of = |r: &Recorder, (p, o): (i32, i64)| r.outputs.lock().unwrap().iter().filter(|x| **x == (p, o)).count();
    assert_eq!(outputs_of(&r, victim), 0, "the crash came before the victim's output");
    assert_eq!(own.lock().unwrap().get(&(h.topic.clone(), victim.0)).copied(), Some(victim.1 + 1), "its effect is stored");

    *r.hang_after.lock().unwrap() = None;
    let running = h.start(r.clone());
    wait_until("the victim's output", Duration::from_secs(60), || outputs_of(&r, victim) == 1).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    running.stop().await;
    for place in &landed {
        assert!(outputs_of(&r, *place) >= 1, "record {place:?} has no output");
        assert_eq!(r.count_of(place.0, place.1), 1, "record {place:?} applied twice");
    }
}

/// Seen on HEAD 518e61b: a stage that keeps its offsets itself was
/// positioned only when a record arrived, and none arrives when Kafka's
/// committed offset is already past them.
#[tokio::test(flavor = "multi_thread")]
async fn stage_owned_positions_apply_at_assignment_even_with_kafka_ahead() {
    let h = Harness::new().await;
    let landed = h.produce("a", 10).await;
    // Kafka's committed offsets one past the log end (what the bug left).
    let ends = h.log_ends().await;
    commit_from_outside(&h, &ends.iter().map(|(p, end)| (*p, end + 1)).collect::<Vec<_>>());
    let own: OwnPositions = Arc::default();
    let r = Arc::new(Recorder { own: Some(own.clone()), ..Default::default() });
    let running = h.start(r.clone());
    wait_until("every record from the stage's own positions", Duration::from_secs(60), || r.seen().len() >= landed.len()).await;
    running.stop().await;
    h.assert_all_processed_and_committed(&r).await;
    for (p, end) in &ends {
        assert_eq!(own.lock().unwrap().get(&(h.topic.clone(), *p)).copied(), Some(*end));
    }
}

/// A Kafka-owned stage whose committed offset is past the log end (left by
/// the old bug) resumes at the log end, and commits that at once: the next
/// record produced is not skipped. (Records that landed behind such a
/// commit before the fix are found by `rag-engine verify`.)
#[tokio::test(flavor = "multi_thread")]
async fn a_committed_offset_past_the_log_end_does_not_skip_the_next_record() {
    let h = Harness::new().await;
    let r = Arc::new(Recorder::default());
    let first = h.produce("a", 8).await;
    let running = h.start(r.clone());
    wait_until("the first records", Duration::from_secs(60), || r.seen().len() >= first.len()).await;
    running.stop().await;
    let ends = h.log_ends().await;
    commit_from_outside(&h, &ends.iter().map(|(p, end)| (*p, end + 1)).collect::<Vec<_>>());
    let running = h.start(r.clone());
    // Positioned: the bad commits are replaced by the log end.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let committed = h.committed().await;
        if ends.iter().all(|(p, end)| committed.get(p).copied().flatten() == Some(*end)) {
            break;
        }
        assert!(Instant::now() < deadline, "positions not committed: {committed:?}, ends {ends:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let second = h.produce("b", 8).await;
    wait_until("the records after the bad commit", Duration::from_secs(60), || r.seen().len() >= first.len() + second.len()).await;
    running.stop().await;
    for (p, o) in &second {
        assert_eq!(r.count_of(*p, *o), 1, "record {p}@{o}");
    }
    h.assert_all_processed_and_committed(&r).await;
}

/// Commits offsets for the test's group without joining it.
fn commit_from_outside(h: &Harness, offsets: &[(i32, i64)]) {
    use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
    let c: BaseConsumer =
        rdkafka::ClientConfig::new().set("bootstrap.servers", &h.cfg.brokers).set("group.id", h.group()).create().unwrap();
    let mut tpl = rdkafka::TopicPartitionList::new();
    for (p, offset) in offsets {
        tpl.add_partition_offset(&h.topic, *p, rdkafka::Offset::Offset(*offset)).unwrap();
    }
    c.commit(&tpl, CommitMode::Sync).unwrap();
}

/// A second instance joins while the first is mid-batch: the partitions
/// move, the record in flight finishes, nothing is skipped.
#[tokio::test(flavor = "multi_thread")]
async fn revocation_mid_batch_skips_nothing() {
    let h = Harness::new().await;
    let landed = h.produce("a", 40).await;
    let slow = Arc::new(Recorder { delay: Duration::from_millis(150), ..Default::default() });
    let a = h.start(slow.clone());
    wait_until("a few records on the first instance", Duration::from_secs(60), || slow.seen().len() >= 5).await;
    let b = h.start(slow.clone());
    wait_until("every record", Duration::from_secs(120), || landed.iter().all(|(p, o)| slow.count_of(*p, *o) >= 1)).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    b.stop().await;
    a.stop().await;
    h.assert_all_processed_and_committed(&slow).await;
}

/// Partitions move to a second instance, then back when the first leaves,
/// while records keep being produced.
#[tokio::test(flavor = "multi_thread")]
async fn partitions_reassigned_while_producing_skip_nothing() {
    let h = Harness::new().await;
    let r = Arc::new(Recorder { delay: Duration::from_millis(20), ..Default::default() });
    let a = h.start(r.clone());
    let producing = {
        let h2 = Harness { cfg: h.cfg.clone(), topic: h.topic.clone(), producer: h.producer.clone() };
        tokio::spawn(async move {
            let mut landed = Vec::new();
            for round in 0..12 {
                landed.extend(h2.produce(&format!("r{round}"), 10).await);
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            landed
        })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let b = h.start(r.clone());
    tokio::time::sleep(Duration::from_secs(2)).await;
    a.stop().await;
    let landed = producing.await.unwrap();
    wait_until("every record", Duration::from_secs(120), || landed.iter().all(|(p, o)| r.count_of(*p, *o) >= 1)).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    b.stop().await;
    h.assert_all_processed_and_committed(&r).await;
}

/// Occasional poison goes to the dead-letter topic; a run of it stops the
/// stage, keeping the record over the limit for the restart.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_of_dead_letters_stops_the_stage() {
    let mut h = Harness::new().await;
    h.cfg.dead_letter_limit = DeadLetterLimit { max: 3, window: 10 };
    // One partition's worth of order is enough: every record is poison.
    let mut partition = 0;
    for i in 0..6 {
        partition = h.producer.send_raw(&h.topic, Some(b"same-key"), format!("poison-{i}").as_bytes(), &[]).await.unwrap().partition;
    }
    let r = Arc::new(Recorder::default());
    let running = h.start(r.clone());
    let result = tokio::time::timeout(Duration::from_secs(60), running.task).await.expect("the stage stops by itself").unwrap();
    match result {
        Err(BusError::StageFailed { reason, .. }) => assert!(reason.contains("failed permanently"), "{reason}"),
        other => panic!("expected the stage to fail, got {other:?}"),
    }
    let dlq = read_topic(&h.cfg, &Topics::dlq_of(&h.topic), Duration::from_secs(30)).await.unwrap();
    assert_eq!(dlq.len(), 3, "exactly the limit went to the dead-letter topic");
    let committed = h.committed().await;
    assert_eq!(committed.get(&partition).copied().flatten(), Some(3), "the record over the limit keeps its offset");
}

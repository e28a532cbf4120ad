//! The stage runner's offset and positioning rules, on the real broker of
//! `scripts/stack up`. Each test has its own topic prefix (its own topics
//! and groups). The processor here records what it saw; what the broker
//! says (committed offsets, watermarks) is read with a group-less client.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::harness::*;
use crate::admin::read_topic;
use crate::BusError;
use crate::DeadLetterLimit;
use rag_events::Topics;

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

//! The runner with several records in flight, on the real broker: the
//! partitions go side by side, each in offset order, and a partition's
//! commit waits for its oldest unfinished record. Every wait is for a
//! condition (a record seen, an offset committed), never for a duration.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::harness::*;

/// Polls the broker's committed offsets until `done` holds for them.
async fn wait_for_commits(h: &Harness, what: &str, done: impl Fn(&HashMap<i32, Option<i64>>) -> bool) -> HashMap<i32, Option<i64>> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let committed = h.committed().await;
        if done(&committed) {
            return committed;
        }
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}; committed {committed:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_held_record_holds_back_only_its_partition_and_the_commit_waits_for_it() {
    let h = Harness::new().await;
    // The held record first; the rest is produced once it is held, so all
    // of it arrives while it runs (keys are fixed, so are their partitions).
    let victim = h.produce("held", 1).await[0];
    let r = Arc::new(Recorder { gate: Mutex::new(vec![victim]), ..Default::default() });
    let running = h.start(r.clone());
    wait_until("the held record", Duration::from_secs(60), || r.count_of(victim.0, victim.1) == 1).await;
    let mut landed = h.produce("a", 24).await;
    assert!(landed.iter().any(|(p, _)| *p == victim.0), "some records behind the held one: {landed:?}");
    landed.push(victim);

    // Every other partition finishes while the victim is held: with one
    // record at a time the runner would wait on the victim.
    let others: Vec<(i32, i64)> = landed.iter().copied().filter(|(p, _)| *p != victim.0).collect();
    wait_until("every other partition's records", Duration::from_secs(60), || others.iter().all(|(p, o)| r.count_of(*p, *o) == 1)).await;
    assert_eq!(r.count_of(victim.0, victim.1), 1, "the victim took effect and is held");
    let behind: Vec<_> = r.seen().into_iter().filter(|(p, o, _)| *p == victim.0 && *o > victim.1).collect();
    assert!(behind.is_empty(), "records behind the held one ran before it finished: {behind:?}");

    // Committed: the other partitions to their log end, the victim's not past it.
    let ends = h.log_ends().await;
    let committed = wait_for_commits(&h, "the other partitions' commits", |c| {
        ends.iter().filter(|(p, end)| **p != victim.0 && **end > 0).all(|(p, end)| c.get(p).copied().flatten() == Some(*end))
    })
    .await;
    assert!(
        committed.get(&victim.0).copied().flatten().unwrap_or(0) <= victim.1,
        "the held record's partition was committed past it: {committed:?}"
    );

    // Released: its partition follows in order, and everything commits.
    r.gate.lock().unwrap().clear();
    wait_until("every record", Duration::from_secs(60), || landed.iter().all(|(p, o)| r.count_of(*p, *o) == 1)).await;
    running.stop().await;
    h.assert_all_processed_and_committed(&r).await;

    let active = r.active.lock().unwrap().clone();
    assert_eq!(active.max_per_partition, 1, "two records of one partition ran at once");
    assert!(active.max_total >= 2, "partitions never ran side by side: {active:?}");
    for partition in 0..PARTITIONS {
        let offsets: Vec<i64> = r.seen().into_iter().filter(|(p, _, _)| *p == partition).map(|(_, o, _)| o).collect();
        assert!(offsets.windows(2).all(|w| w[0] < w[1]), "partition {partition} out of offset order: {offsets:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn no_more_records_run_at_once_than_the_bound() {
    let mut h = Harness::new().await;
    h.cfg.max_in_flight = 2;
    // One record on each partition (fixed keys, so fixed partitions), all held.
    let mut landed = Vec::new();
    for i in 0.. {
        let (p, o) = h.produce(&format!("k{i}"), 1).await[0];
        if !landed.iter().any(|(q, _)| *q == p) {
            landed.push((p, o));
        }
        if landed.len() == PARTITIONS as usize {
            break;
        }
    }
    let r = Arc::new(Recorder { gate: Mutex::new(landed.clone()), ..Default::default() });
    let running = h.start(r.clone());
    // Two start and are held; the bound keeps the others out.
    wait_until("two held records", Duration::from_secs(60), || r.seen().len() == 2).await;
    r.gate.lock().unwrap().clear();
    let all = h.log_ends().await;
    wait_until("every record", Duration::from_secs(60), || all.iter().all(|(p, end)| (0..*end).all(|o| r.count_of(*p, o) == 1))).await;
    running.stop().await;
    h.assert_all_processed_and_committed(&r).await;
    let active = r.active.lock().unwrap().clone();
    assert_eq!(active.max_total, 2, "the bound of 2 was exceeded, or never reached: {active:?}");
    assert_eq!(active.max_per_partition, 1);
}

/// Seen in the chaos run with STAGE_MAX_IN_FLIGHT=4 (CI on bd222bd and
/// f1aa6c7): a partition paused for back-pressure when a rebalance came
/// stayed paused in librdkafka after it was assigned again, while the
/// runner had forgotten the pause with the old assignment, so it was never
/// fetched again and its documents stayed `uploaded`.
#[tokio::test(flavor = "multi_thread")]
async fn a_partition_paused_when_a_rebalance_comes_is_fetched_after_it() {
    let mut h = Harness::new().await;
    // Paused once four records wait behind the running one, and the bound
    // (8) never filled by the seven of its partition, so that the runner
    // keeps polling and takes part in the rebalances while the record is
    // held (a full bound stops its polls, and the rebalance waits for it).
    h.cfg.max_in_flight = 8;
    let victim = h.produce("held", 1).await[0];
    let r = Arc::new(Recorder { gate: Mutex::new(vec![victim]), ..Default::default() });
    let first = h.start(r.clone());
    wait_until("the held record", Duration::from_secs(60), || r.count_of(victim.0, victim.1) == 1).await;
    // Records behind the held one, on its partition: its lane fills and
    // the runner pauses the partition.
    let mut behind = 0;
    for i in 0.. {
        if h.produce(&format!("behind{i}"), 1).await[0].0 == victim.0 {
            behind += 1;
        }
        if behind == 6 {
            break;
        }
    }
    let victim_key = (h.topic.clone(), victim.0);
    wait_until("the held record's partition paused", Duration::from_secs(60), || first.paused.lock().unwrap().contains(&victim_key)).await;

    // A second member joins and leaves: two rebalances (eager protocol),
    // each a revocation and an assignment of the first member, after which
    // every partition is the first member's again. (Waited on by the
    // book's generation: the pause itself may come back at once, when the
    // held partition is assigned to the first member again.)
    let generation = || first.book.lock().unwrap().generation();
    let before = generation();
    let other = Arc::new(Recorder::default());
    let second = h.start(other.clone());
    wait_until("the first member's partitions revoked and assigned again", Duration::from_secs(60), || generation() >= before + 2).await;
    let joined = generation();
    second.stop().await;
    wait_until("every partition the first member's again", Duration::from_secs(60), || {
        generation() >= joined + 2 && first.book.lock().unwrap().owned().len() == PARTITIONS as usize
    })
    .await;

    // Released, and more records on the paused partition: the first member
    // must fetch them, which it never did while librdkafka kept the pause.
    r.gate.lock().unwrap().clear();
    let mut later = Vec::new();
    for i in 0.. {
        let landed = h.produce(&format!("later{i}"), 1).await[0];
        if landed.0 == victim.0 {
            later.push(landed);
        }
        if later.len() == 3 {
            break;
        }
    }
    let ends = h.log_ends().await;
    wait_until("every record, by one member or the other", Duration::from_secs(90), || {
        ends.iter().all(|(p, end)| (0..*end).all(|o| r.count_of(*p, o) + other.count_of(*p, o) >= 1))
    })
    .await;
    for (p, o) in &later {
        assert!(r.count_of(*p, *o) >= 1, "the record {p}@{o}, produced after the second member left, was not the first member's");
    }
    first.stop().await;
}

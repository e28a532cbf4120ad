//! Each stage's own lag: for every owned partition the log end offset minus
//! the next offset to process, the age of the oldest unprocessed event,
//! and the size of each consumed topic's dead-letter topic.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rag_telemetry::events::{DeadLetterTopicSize, LagObserved};
use rag_telemetry::InternalEvent;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::topic_partition_list::Offset;
use rdkafka::Message;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::consumer::{Shared, StageConsumer};
use super::positions::PartitionKey;
use crate::BusConfig;

/// Exports lag for every assigned partition: the log end offset minus the
/// next offset this stage will process, computed by the stage itself; the
/// age of the oldest unprocessed event (the record at that next offset,
/// read by a group-less reader); and the size of each consumed topic's
/// dead-letter topic.
pub(crate) async fn report_lag(
    cfg: BusConfig,
    consumer: Arc<StageConsumer>,
    shared: Shared,
    stage: String,
    group: String,
    every: Duration,
    shutdown: CancellationToken,
) {
    let reader: Option<Arc<BaseConsumer<crate::logging::TracingContext>>> = cfg
        .client()
        .set("group.id", format!("{group}.lag-reader"))
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", cfg.fetch_wait_max_ms.to_string())
        .create_with_context(crate::logging::TracingContext { client: format!("{stage}-lag-reader") })
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
        let shared = shared.clone();
        let reader = reader.clone();
        let (stage, group) = (stage.clone(), group.clone());
        // A tick asks the broker a few questions per partition (each may
        // take up to its 5 s timeout on a slow broker), and the stage waits
        // for the tick before it stops: so the tick gives up between two
        // questions once the stage stops. The projector reads every topic:
        // with the broker hanging, `run projector` was still running 120 s
        // after SIGTERM (test a_stage_stops_within_ten_seconds_while_the_
        // broker_hangs), and a busy CI run's slow broker kept `run all` from
        // stopping within 10 s.
        let stopping = shutdown.clone();
        let done = tokio::task::spawn_blocking(move || {
            let Ok(assignment) = consumer.assignment() else { return };
            let mut observed: Vec<(PartitionKey, i64, i64, Option<i64>)> = Vec::new();
            let mut topics = std::collections::BTreeSet::new();
            // Asked of the broker once a report, and only if a partition
            // has no next offset of its own yet.
            let mut committed: Option<Option<rdkafka::TopicPartitionList>> = None;
            for e in assignment.elements() {
                if stopping.is_cancelled() {
                    return;
                }
                let key = (e.topic().to_string(), e.partition());
                topics.insert(key.0.clone());
                let Ok((low, high)) = consumer.fetch_watermarks(&key.0, key.1, Duration::from_secs(5)) else { continue };
                let (next, last_ts) = {
                    let book = shared.book();
                    (book.next_offset(&key), book.last_timestamp(&key))
                };
                let next = next
                    .or_else(|| {
                        committed
                            .get_or_insert_with(|| consumer.committed_offsets(assignment.clone(), Duration::from_secs(5)).ok())
                            .as_ref()
                            .and_then(|tpl| tpl.find_partition(&key.0, key.1).and_then(|p| p.offset().to_raw()).filter(|o| *o >= 0))
                    })
                    .unwrap_or(low)
                    .max(low);
                observed.push((key, next, high, last_ts));
            }
            let lagging: Vec<(PartitionKey, i64, Option<i64>)> =
                observed.iter().filter(|(_, next, high, _)| high > next).map(|(k, n, _, ts)| (k.clone(), *n, *ts)).collect();
            let oldest = reader.as_deref().map(|r| timestamps_at(r, &lagging, &stopping)).unwrap_or_default();
            for (key, next, high, last_ts) in &observed {
                // The oldest unprocessed event's age; if it cannot be read,
                // the newest processed one's (an upper bound).
                let age =
                    oldest.get(key).copied().or(*last_ts).map(|ts| Duration::from_millis((rag_events::now_millis() - ts).max(0) as u64));
                LagObserved {
                    stage: &stage,
                    group: &group,
                    topic: &key.0,
                    partition: key.1,
                    next_offset: *next,
                    log_end: *high,
                    oldest_age: age,
                }
                .emit();
            }
            for topic in topics {
                if stopping.is_cancelled() {
                    return;
                }
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
                    DeadLetterTopicSize { dlq_topic: &dlq, records: size }.emit();
                }
            }
        });
        let _ = done.await;
    }
}

/// The producer timestamps of the records at the given offsets, read with
/// a group-less consumer (nothing committed, the stage undisturbed).
fn timestamps_at<C: rdkafka::consumer::ConsumerContext>(
    reader: &BaseConsumer<C>,
    wanted: &[(PartitionKey, i64, Option<i64>)],
    stopping: &CancellationToken,
) -> HashMap<PartitionKey, i64> {
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
    while out.len() < wanted.len() && std::time::Instant::now() < deadline && !stopping.is_cancelled() {
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

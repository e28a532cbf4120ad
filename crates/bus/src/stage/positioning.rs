//! Where each assigned partition resumes: asked of the stage
//! ([`StartAt`]), combined with Kafka's committed offsets and watermarks,
//! then assigned and committed before anything is fetched.

use std::time::Duration;

use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::topic_partition_list::Offset;
use rdkafka::TopicPartitionList;
use tracing::{debug, info, warn};

use super::contract::{ProcessError, Stage, StartAt};
use super::dead_letter::backoff;
use super::positions::{resume_from_committed, PartitionKey, Position};
use super::runner::StageRunner;
use crate::BusError;

/// How long the runner keeps trying to learn where assigned partitions
/// resume (database or broker briefly away) before the stage fails.
const POSITIONING_ATTEMPTS: u32 = 20;

impl<S: Stage> StageRunner<S> {
    /// Decides where every partition of the pending assignment resumes and
    /// assigns them with those offsets.
    pub(super) async fn position_assigned(&self) -> Result<(), BusError> {
        let Some((generation, partitions)) = self.shared.book().take_pending() else { return Ok(()) };
        let mut starts = Vec::with_capacity(partitions.len());
        for (topic, partition) in &partitions {
            let start = self
                .retry_positioning("loading the stored offset", || async {
                    self.stage.start_at(topic, *partition).await.map_err(Into::into)
                })
                .await?;
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
            debug!(stage = %self.name, "a rebalance superseded the assignment being positioned");
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
        // librdkafka keeps a partition paused across its revocation and
        // re-assignment (the pause is a flag on its partition object, which
        // outlives the assignment), while the runner forgets its pauses with
        // the old assignment: a partition paused for back-pressure when a
        // rebalance came would never be fetched again (seen in the chaos
        // run with STAGE_MAX_IN_FLIGHT=4: documents left `uploaded`).
        // Resuming before assigning only clears that flag.
        if let Err(e) = self.consumer.resume(&tpl) {
            debug!(stage = %self.name, error = %e, "resuming the partitions before assigning them failed");
        }
        self.consumer.assign(&tpl)?;
        // The positions are committed at once (best-effort): stage-owned
        // ones so standard tools and `rag-engine verify` see where the
        // stage stands, and a commit past the log end is replaced before
        // any record lands behind it.
        if let Err(e) = self.consumer.commit(&commit, CommitMode::Async) {
            debug!(stage = %self.name, error = %e, "committing the positions failed");
        }
        let listed: Vec<String> = positions
            .iter()
            .map(|((t, p), pos)| match pos {
                Position::At(n) => format!("{t}[{p}]@{n}"),
                Position::Beginning => format!("{t}[{p}]@beginning"),
            })
            .collect();
        info!(stage = %self.name, positions = %listed.join(","), "partitions positioned");
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
            Ok(r) => r.map_err(ProcessError::transient_from),
            Err(e) => Err(ProcessError::transient_from(e)),
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
                    warn!(stage = %self.name, error = %e.chain(), "{what} failed, retrying");
                    attempt += 1;
                    tokio::time::sleep(backoff(&self.cfg, attempt.min(4))).await;
                }
                Err(e) => return Err(self.failed(format!("{what}: {}", e.chain()))),
            }
        }
    }
}

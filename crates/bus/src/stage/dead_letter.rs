//! Dead letters: a record that can never be processed goes to
//! `<topic>.dlq` with the reason in headers, and the stage moves on — up to
//! a limit. When most recent records fail permanently the cause is rarely
//! the records (a dependency answering garbage, a bad deployment), so the
//! stage stops instead of dead-lettering everything: the record that hit
//! the limit keeps its offset, and a restart resumes there.

use std::collections::VecDeque;
use std::time::Duration;

use rag_telemetry::events::DeadLettered;
use rag_telemetry::InternalEvent;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::contract::{FailureCode, Inbound};
use crate::producer::EventProducer;
use crate::{headers, BusConfig, BusError};

/// At most `max` dead letters among the last `window` records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadLetterLimit {
    pub max: usize,
    pub window: usize,
}

impl DeadLetterLimit {
    /// No limit.
    pub const UNLIMITED: DeadLetterLimit = DeadLetterLimit { max: usize::MAX, window: 0 };
}

impl Default for DeadLetterLimit {
    fn default() -> Self {
        DeadLetterLimit { max: 10, window: 20 }
    }
}

/// The outcomes of the last records, to enforce a [`DeadLetterLimit`].
#[derive(Debug)]
pub struct DeadLetterBudget {
    limit: DeadLetterLimit,
    recent: VecDeque<bool>,
    dead: usize,
}

impl DeadLetterBudget {
    pub fn new(limit: DeadLetterLimit) -> Self {
        DeadLetterBudget { limit, recent: VecDeque::new(), dead: 0 }
    }

    /// Whether one more dead letter stays within the limit. Asked before the
    /// record is dead-lettered, so the one over the limit is kept.
    pub fn allows_another(&self) -> bool {
        if self.limit.window == 0 {
            return true;
        }
        // The window after this record: the oldest outcome drops out if full.
        let dropping = usize::from(self.recent.len() >= self.limit.window && self.recent.front() == Some(&true));
        self.dead - dropping < self.limit.max
    }

    /// Records a record's outcome.
    pub fn record(&mut self, dead_lettered: bool) {
        if self.limit.window == 0 {
            return;
        }
        // The window is full: the oldest outcome leaves it.
        if self.recent.len() >= self.limit.window && self.recent.pop_front() == Some(true) {
            self.dead -= 1;
        }
        self.recent.push_back(dead_lettered);
        self.dead += usize::from(dead_lettered);
    }

    pub fn dead_in_window(&self) -> usize {
        self.dead
    }
}

/// The headers of a dead letter: the original ones (minus any earlier
/// `dlq-*`), then where it came from and why.
pub fn dead_letter_headers(msg: &Inbound, stage: &str, code: FailureCode, reason: &str, failed_at_ms: i64) -> Vec<(String, Vec<u8>)> {
    let mut hdrs = msg.headers.clone();
    hdrs.retain(|(k, _)| !k.starts_with("dlq-"));
    hdrs.push((headers::DLQ_ORIGINAL_TOPIC.into(), msg.topic.clone().into_bytes()));
    hdrs.push((headers::DLQ_ORIGINAL_PARTITION.into(), msg.partition.to_string().into_bytes()));
    hdrs.push((headers::DLQ_ORIGINAL_OFFSET.into(), msg.offset.to_string().into_bytes()));
    hdrs.push((headers::DLQ_STAGE.into(), stage.as_bytes().to_vec()));
    hdrs.push((headers::DLQ_REASON_CODE.into(), code.as_str().as_bytes().to_vec()));
    hdrs.push((headers::DLQ_REASON.into(), reason.as_bytes().to_vec()));
    hdrs.push((headers::DLQ_FAILED_AT.into(), failed_at_ms.to_string().into_bytes()));
    hdrs
}

pub(crate) fn backoff(cfg: &BusConfig, attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.min(16));
    cfg.retry_backoff.saturating_mul(factor).min(cfg.max_backoff)
}

/// Produces a stage's dead letters.
pub(crate) struct DeadLetters {
    pub producer: EventProducer,
    pub stage: String,
}

impl DeadLetters {
    /// Sends `msg` to its dead-letter topic, retrying a busy broker.
    pub async fn send(
        &self,
        cfg: &BusConfig,
        msg: &Inbound,
        code: FailureCode,
        reason: &str,
        shutdown: &CancellationToken,
    ) -> Result<(), BusError> {
        let hdrs = dead_letter_headers(msg, &self.stage, code, reason, rag_events::now_millis());
        let dlq_topic = rag_events::Topics::dlq_of(&msg.topic);
        let payload = msg.payload.clone().unwrap_or_default();
        let mut attempt = 0;
        loop {
            match self.producer.send_raw(&dlq_topic, msg.key.as_deref(), &payload, &hdrs).await {
                Ok(_) => break,
                Err(e) if attempt < cfg.max_retries && !shutdown.is_cancelled() => {
                    warn!(error = %e, "dead-letter produce failed, retrying");
                    tokio::time::sleep(backoff(cfg, attempt)).await;
                    attempt += 1;
                }
                Err(e) => return Err(BusError::StageFailed { stage: self.stage.clone(), reason: format!("dead-letter produce: {e}") }),
            }
        }
        DeadLettered { stage: &self.stage, topic: &msg.topic, dlq_topic: &dlq_topic, code: code.as_str() }.emit();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_keeps_the_record_that_would_exceed_it() {
        let mut budget = DeadLetterBudget::new(DeadLetterLimit { max: 3, window: 5 });
        for _ in 0..3 {
            assert!(budget.allows_another());
            budget.record(true);
        }
        assert!(!budget.allows_another(), "a fourth dead letter among five records is over the limit");
    }

    #[test]
    fn successes_make_room_again() {
        let mut budget = DeadLetterBudget::new(DeadLetterLimit { max: 2, window: 4 });
        budget.record(true);
        budget.record(true);
        assert!(!budget.allows_another());
        budget.record(false);
        budget.record(false);
        // The window is [dead, dead, ok, ok]; the next record pushes the first dead one out.
        assert!(budget.allows_another());
        budget.record(true);
        // [dead, ok, ok, dead]: the next record pushes a dead one out again.
        assert_eq!(budget.dead_in_window(), 2);
        assert!(budget.allows_another());
        budget.record(true);
        // [ok, ok, dead, dead]: one more would make three.
        assert!(!budget.allows_another());
    }

    #[test]
    fn occasional_poison_never_stops_a_stage() {
        let mut budget = DeadLetterBudget::new(DeadLetterLimit::default());
        for i in 0..1000 {
            let poison = i % 5 == 0;
            if poison {
                assert!(budget.allows_another(), "record {i}");
            }
            budget.record(poison);
        }
    }

    #[test]
    fn no_window_means_no_limit() {
        let mut budget = DeadLetterBudget::new(DeadLetterLimit::UNLIMITED);
        for _ in 0..100 {
            assert!(budget.allows_another());
            budget.record(true);
        }
    }

    #[test]
    fn dead_letter_headers_replace_earlier_ones_and_keep_the_rest() {
        let msg = Inbound {
            topic: "documents.uploaded".into(),
            partition: 2,
            offset: 41,
            key: Some(b"doc".to_vec()),
            payload: Some(vec![1, 2]),
            headers: vec![("event-id".into(), b"e1".to_vec()), ("dlq-reason".into(), b"old".to_vec())],
            timestamp_ms: None,
        };
        let h = dead_letter_headers(&msg, "parser", FailureCode::ParserCrashed, "exit status 101", 5);
        let get = |k: &str| h.iter().filter(|(n, _)| n == k).map(|(_, v)| String::from_utf8_lossy(v).into_owned()).collect::<Vec<_>>();
        assert_eq!(get("event-id"), vec!["e1"]);
        assert_eq!(get("dlq-reason"), vec!["exit status 101"]);
        assert_eq!(get("dlq-reason-code"), vec!["parser_crashed"]);
        assert_eq!(get("dlq-original-offset"), vec!["41"]);
        assert_eq!(get("dlq-original-partition"), vec!["2"]);
        assert_eq!(get("dlq-stage"), vec!["parser"]);
    }
}

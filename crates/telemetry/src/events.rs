//! Instrumentation as named events, after Vector's `internal_events`: one
//! type per thing worth knowing, whose [`emit`](InternalEvent::emit) writes
//! the log line and updates the metrics together, so they cannot drift
//! apart and every label is spelled once. Logs carry the stage and topic;
//! the surrounding `tracing` span adds workspace, document and event ids.

use std::time::Duration;

use metrics::{counter, gauge, histogram};
use tracing::{debug, error, info, warn};

use crate::catalog::names;

/// Label keys, shared so label spelling cannot drift.
pub mod labels {
    pub const STAGE: &str = "stage";
    pub const TOPIC: &str = "topic";
    pub const GROUP: &str = "group";
    pub const PARTITION: &str = "partition";
    pub const KIND: &str = "kind";
    pub const REASON: &str = "reason";
    pub const MODE: &str = "mode";
    pub const OUTCOME: &str = "outcome";
}

use labels::*;

/// Something that happened, logged and counted in one call.
pub trait InternalEvent {
    fn emit(self);
}

/// A stage starts counting for a topic: every per-topic series exists from
/// zero (a dashboard shows 0, not "No data", and rates and alerts work
/// before the first failure).
pub struct StageTopicRegistered<'a> {
    pub stage: &'a str,
    pub topic: &'a str,
    /// Every reason a record can be dead-lettered for (the wire strings of
    /// the bus's failure codes).
    pub dead_letter_reasons: &'a [&'a str],
}

impl InternalEvent for StageTopicRegistered<'_> {
    fn emit(self) {
        let (s, t) = (self.stage.to_string(), self.topic.to_string());
        for name in [names::EVENTS_IN, names::EVENTS_OUT, names::EVENTS_DUPLICATE, names::OFFSET_GAPS] {
            counter!(name, STAGE => s.clone(), TOPIC => t.clone()).increment(0);
        }
        for kind in ["transient", "permanent"] {
            counter!(names::EVENTS_FAILED, STAGE => s.clone(), TOPIC => t.clone(), KIND => kind).increment(0);
        }
        for reason in self.dead_letter_reasons {
            counter!(names::DEAD_LETTERS, STAGE => s.clone(), TOPIC => t.clone(), REASON => reason.to_string()).increment(0);
        }
        // A registered histogram renders with zero counts.
        let _ = histogram!(names::PROCESSING_SECONDS, STAGE => s.clone(), TOPIC => t);
        counter!(names::STAGE_FAILURES, STAGE => s).increment(0);
    }
}

/// The projector starts: the upload-to-ingestion histogram exists from
/// zero.
pub struct ProjectorStarted;

impl InternalEvent for ProjectorStarted {
    fn emit(self) {
        let _ = histogram!(names::UPLOAD_TO_INGESTED_SECONDS);
    }
}

/// The answerer starts: its answer times per mode and, with a language
/// model, that model's token counters exist from zero.
pub struct AnswererStarted<'a> {
    /// Every mode an answer can have.
    pub modes: &'a [&'a str],
    pub llm_model: Option<&'a str>,
}

impl InternalEvent for AnswererStarted<'_> {
    fn emit(self) {
        for mode in self.modes {
            let _ = histogram!(names::QUESTION_TO_ANSWER_SECONDS, MODE => mode.to_string());
        }
        if let Some(model) = self.llm_model {
            for kind in ["prompt", "completion"] {
                counter!(names::LLM_TOKENS, "model" => model.to_string(), KIND => kind).increment(0);
            }
        }
    }
}

/// A route the API serves, with the status it answers when all goes well.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedRoute {
    pub method: String,
    /// The route template, as [`HttpRequestAnswered::route`] has it.
    pub route: String,
    pub success_status: u16,
}

/// The API starts: each route's request counter (at its success status)
/// and latency histogram exist from zero.
pub struct HttpRoutesServed<'a> {
    pub routes: &'a [ServedRoute],
}

impl InternalEvent for HttpRoutesServed<'_> {
    fn emit(self) {
        for r in self.routes {
            counter!(names::HTTP_REQUESTS, "method" => r.method.clone(), "route" => r.route.clone(),
                "status" => r.success_status.to_string())
            .increment(0);
            let _ = histogram!(names::HTTP_SECONDS, "method" => r.method.clone(), "route" => r.route.clone());
        }
    }
}

/// A record reached the stage.
pub struct EventReceived<'a> {
    pub stage: &'a str,
    pub topic: &'a str,
}

impl InternalEvent for EventReceived<'_> {
    fn emit(self) {
        counter!(names::EVENTS_IN, STAGE => self.stage.to_string(), TOPIC => self.topic.to_string()).increment(1);
    }
}

/// A stage produced an event (after the broker confirmed it).
pub struct EventProduced<'a> {
    pub stage: &'a str,
    pub topic: &'a str,
}

impl InternalEvent for EventProduced<'_> {
    fn emit(self) {
        counter!(names::EVENTS_OUT, STAGE => self.stage.to_string(), TOPIC => self.topic.to_string()).increment(1);
    }
}

/// A record was handled (applied, skipped or dead-lettered), retries included.
pub struct EventProcessed<'a> {
    pub stage: &'a str,
    pub topic: &'a str,
    pub elapsed: Duration,
}

impl InternalEvent for EventProcessed<'_> {
    fn emit(self) {
        tracing::debug!(stage = self.stage, topic = self.topic, elapsed_us = self.elapsed.as_micros() as u64, "event processed");
        histogram!(names::PROCESSING_SECONDS, STAGE => self.stage.to_string(), TOPIC => self.topic.to_string())
            .record(self.elapsed.as_secs_f64());
    }
}

/// A re-delivered record whose effect was already there.
pub struct DuplicateSkipped<'a> {
    pub stage: &'a str,
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
}

impl InternalEvent for DuplicateSkipped<'_> {
    fn emit(self) {
        debug!(stage = %self.stage, topic = %self.topic, partition = self.partition, offset = self.offset, "already applied, skipped");
        counter!(names::EVENTS_DUPLICATE, STAGE => self.stage.to_string(), TOPIC => self.topic.to_string()).increment(1);
    }
}

/// A record arrived past the partition's position: records in between were skipped.
pub struct OffsetGap<'a> {
    pub stage: &'a str,
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
    pub expected: i64,
}

impl InternalEvent for OffsetGap<'_> {
    fn emit(self) {
        error!(stage = %self.stage, topic = %self.topic, partition = self.partition, offset = self.offset, expected = self.expected,
            "records skipped between the partition's position and this record");
        counter!(names::OFFSET_GAPS, STAGE => self.stage.to_string(), TOPIC => self.topic.to_string()).increment(1);
    }
}

/// An attempt failed with an error that may go away; it is retried after `wait`.
pub struct TransientFailure<'a> {
    pub stage: &'a str,
    pub topic: &'a str,
    pub attempt: u32,
    pub wait: Duration,
    pub error: &'a str,
}

impl InternalEvent for TransientFailure<'_> {
    fn emit(self) {
        warn!(stage = %self.stage, topic = %self.topic, attempt = self.attempt, wait = ?self.wait, error = %self.error,
            "transient error, retrying");
        counter!(names::EVENTS_FAILED, STAGE => self.stage.to_string(), TOPIC => self.topic.to_string(), KIND => "transient").increment(1);
    }
}

/// An attempt failed for good: the record goes to the dead-letter topic.
pub struct PermanentFailure<'a> {
    pub stage: &'a str,
    pub topic: &'a str,
    pub code: &'a str,
    pub error: &'a str,
}

impl InternalEvent for PermanentFailure<'_> {
    fn emit(self) {
        warn!(stage = %self.stage, topic = %self.topic, code = %self.code, error = %self.error,
            "permanent failure, sending to the dead-letter topic");
        counter!(names::EVENTS_FAILED, STAGE => self.stage.to_string(), TOPIC => self.topic.to_string(), KIND => "permanent").increment(1);
    }
}

/// A record is in `<topic>.dlq`.
pub struct DeadLettered<'a> {
    pub stage: &'a str,
    pub topic: &'a str,
    pub dlq_topic: &'a str,
    pub code: &'a str,
}

impl InternalEvent for DeadLettered<'_> {
    fn emit(self) {
        info!(stage = %self.stage, topic = %self.topic, dlq = %self.dlq_topic, code = %self.code, "dead-lettered");
        counter!(names::DEAD_LETTERS, STAGE => self.stage.to_string(), TOPIC => self.topic.to_string(), REASON => self.code.to_string())
            .increment(1);
    }
}

/// A stage stopped on an error; a restart resumes at the record it could not finish.
pub struct StageFailed<'a> {
    pub stage: &'a str,
    pub error: &'a str,
}

impl InternalEvent for StageFailed<'_> {
    fn emit(self) {
        error!(stage = %self.stage, error = %self.error, "stage failed");
        counter!(names::STAGE_FAILURES, STAGE => self.stage.to_string()).increment(1);
    }
}

/// The group gave this stage instance partitions.
pub struct PartitionsAssigned<'a> {
    pub stage: &'a str,
    pub group: &'a str,
    /// `topic[partition]`, comma-separated.
    pub partitions: &'a str,
}

impl InternalEvent for PartitionsAssigned<'_> {
    fn emit(self) {
        info!(stage = %self.stage, group = %self.group, partitions = %self.partitions, "partitions assigned");
        counter!(names::REBALANCES, STAGE => self.stage.to_string(), GROUP => self.group.to_string(), KIND => "assign").increment(1);
    }
}

/// The stage gave partitions up (revoked, or dropped on a rebalance error);
/// their lag is no longer this instance's to report.
pub struct PartitionsRevoked<'a> {
    pub stage: &'a str,
    pub group: &'a str,
    pub partitions: &'a [(String, i32)],
    /// "revoked" or "dropped".
    pub how: &'a str,
}

impl InternalEvent for PartitionsRevoked<'_> {
    fn emit(self) {
        for (topic, partition) in self.partitions {
            gauge!(names::CONSUMER_LAG, STAGE => self.stage.to_string(), GROUP => self.group.to_string(),
                TOPIC => topic.clone(), PARTITION => partition.to_string())
            .set(0.0);
        }
        info!(stage = %self.stage, group = %self.group, partitions = self.partitions.len(), how = %self.how, "partitions given up");
        counter!(names::REBALANCES, STAGE => self.stage.to_string(), GROUP => self.group.to_string(), KIND => "revoke").increment(1);
    }
}

/// Where a partition of a stage stands, measured by the lag reporter.
pub struct LagObserved<'a> {
    pub stage: &'a str,
    pub group: &'a str,
    pub topic: &'a str,
    pub partition: i32,
    pub next_offset: i64,
    pub log_end: i64,
    /// Age of the oldest unprocessed record, when known (0 when caught up).
    pub oldest_age: Option<Duration>,
}

impl InternalEvent for LagObserved<'_> {
    fn emit(self) {
        let l = [
            (STAGE, self.stage.to_string()),
            (GROUP, self.group.to_string()),
            (TOPIC, self.topic.to_string()),
            (PARTITION, self.partition.to_string()),
        ];
        let lag = (self.log_end - self.next_offset).max(0);
        gauge!(names::CONSUMER_LAG, &l).set(lag as f64);
        gauge!(names::CONSUMER_NEXT_OFFSET, &l).set(self.next_offset as f64);
        if lag == 0 {
            gauge!(names::CONSUMER_LAG_SECONDS, &l).set(0.0);
        } else if let Some(age) = self.oldest_age {
            gauge!(names::CONSUMER_LAG_SECONDS, &l).set(age.as_secs_f64());
        }
    }
}

/// How many dead letters a `.dlq` topic holds.
pub struct DeadLetterTopicSize<'a> {
    pub dlq_topic: &'a str,
    pub records: i64,
}

impl InternalEvent for DeadLetterTopicSize<'_> {
    fn emit(self) {
        gauge!(names::DLQ_MESSAGES, TOPIC => self.dlq_topic.to_string()).set(self.records.max(0) as f64);
    }
}

/// The broker confirmed a produced record.
pub struct RecordDelivered<'a> {
    pub producer: &'a str,
    pub topic: &'a str,
}

impl InternalEvent for RecordDelivered<'_> {
    fn emit(self) {
        counter!(names::PRODUCED, "producer" => self.producer.to_string(), TOPIC => self.topic.to_string()).increment(1);
    }
}

/// A file was uploaded (stored and announced) by the CLI or the API, or failed to be.
pub struct UploadRecorded<'a> {
    pub workspace_id: &'a str,
    pub filename: &'a str,
    /// The new document's id, when it was stored.
    pub document_id: Option<&'a str>,
    pub error: Option<&'a str>,
}

impl InternalEvent for UploadRecorded<'_> {
    fn emit(self) {
        match self.error {
            None => info!(workspace_id = %self.workspace_id, document_id = %self.document_id.unwrap_or(""), filename = %self.filename,
                "upload recorded"),
            Some(e) => warn!(workspace_id = %self.workspace_id, filename = %self.filename, error = %e, "upload failed"),
        }
        let outcome = if self.error.is_none() { "ok" } else { "failed" };
        counter!(names::UPLOADS, OUTCOME => outcome).increment(1);
    }
}

/// A document was ingested for the first time (not a re-chunking replay).
pub struct FirstIngestion {
    pub since_upload: Duration,
}

impl InternalEvent for FirstIngestion {
    fn emit(self) {
        histogram!(names::UPLOAD_TO_INGESTED_SECONDS).record(self.since_upload.as_secs_f64());
    }
}

/// The answerer produced an answer to a question.
pub struct AnswerProduced<'a> {
    pub workspace_id: &'a str,
    pub conversation_id: &'a str,
    pub mode: &'a str,
    pub sections: usize,
    /// From the question's event time to the answer's.
    pub since_question: Duration,
}

impl InternalEvent for AnswerProduced<'_> {
    fn emit(self) {
        info!(workspace_id = %self.workspace_id, conversation_id = %self.conversation_id, mode = %self.mode, sections = self.sections,
            seconds = self.since_question.as_secs_f64(), "question answered");
        histogram!(names::QUESTION_TO_ANSWER_SECONDS, MODE => self.mode.to_string()).record(self.since_question.as_secs_f64());
    }
}

/// Tokens one LLM call used.
pub struct LlmTokensUsed<'a> {
    pub model: &'a str,
    pub prompt: i64,
    pub completion: i64,
}

impl InternalEvent for LlmTokensUsed<'_> {
    fn emit(self) {
        for (kind, n) in [("prompt", self.prompt), ("completion", self.completion)] {
            counter!(names::LLM_TOKENS, "model" => self.model.to_string(), KIND => kind).increment(n.max(0) as u64);
        }
    }
}

/// A workspace's in-memory search index caught up with the read models.
pub struct SearchIndexRefreshed<'a> {
    pub workspace_id: &'a str,
    /// A full load (first query, or the read models were truncated).
    pub full: bool,
    pub documents: usize,
    pub chunks: usize,
    pub elapsed: Duration,
    /// Postings every workspace index of the process holds, after it.
    pub process_postings: usize,
}

impl InternalEvent for SearchIndexRefreshed<'_> {
    fn emit(self) {
        let kind = if self.full { "full" } else { "changes" };
        if self.full {
            info!(workspace_id = %self.workspace_id, documents = self.documents, chunks = self.chunks,
                seconds = self.elapsed.as_secs_f64(), "search index loaded");
        } else {
            debug!(workspace_id = %self.workspace_id, documents = self.documents, chunks = self.chunks,
                seconds = self.elapsed.as_secs_f64(), "search index caught up");
        }
        histogram!(names::SEARCH_INDEX_REFRESH_SECONDS, KIND => kind).record(self.elapsed.as_secs_f64());
        gauge!(names::SEARCH_INDEX_POSTINGS).set(self.process_postings as f64);
    }
}

/// Documents or messages in a non-terminal state for longer than the threshold.
pub struct StuckItems {
    /// "document" or "message".
    pub kind: &'static str,
    pub count: i64,
}

impl InternalEvent for StuckItems {
    fn emit(self) {
        if self.count > 0 {
            warn!(kind = %self.kind, count = self.count, "items stuck in a non-terminal state");
        }
        gauge!(names::STUCK, KIND => self.kind).set(self.count as f64);
    }
}

/// The API answered an HTTP request.
pub struct HttpRequestAnswered<'a> {
    pub method: &'a str,
    /// The matched route template, never the raw path (bounded cardinality).
    pub route: &'a str,
    pub status: u16,
    pub elapsed: Duration,
}

impl InternalEvent for HttpRequestAnswered<'_> {
    fn emit(self) {
        counter!(names::HTTP_REQUESTS, "method" => self.method.to_string(), "route" => self.route.to_string(),
            "status" => self.status.to_string())
        .increment(1);
        histogram!(names::HTTP_SECONDS, "method" => self.method.to_string(), "route" => self.route.to_string())
            .record(self.elapsed.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::METRICS;

    /// What a fresh process exports after its start-up events, before
    /// anything happened: every series at zero.
    #[test]
    fn start_up_events_export_their_series_at_zero() {
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new()
            .set_buckets_for_metric(metrics_exporter_prometheus::Matcher::Suffix("_seconds".into()), &[0.1, 1.0])
            .expect("buckets")
            .build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            StageTopicRegistered { stage: "chunker", topic: "documents.parsed", dead_letter_reasons: &["invalid_event", "encode"] }.emit();
            ProjectorStarted.emit();
            AnswererStarted { modes: &["llm", "extractive"], llm_model: Some("qwen") }.emit();
            let routes = [ServedRoute { method: "GET".into(), route: "/v1/workspaces".into(), success_status: 200 }];
            HttpRoutesServed { routes: &routes }.emit();
        });
        let text = handle.render();
        for series in [
            r#"rag_stage_dead_letters_total{stage="chunker",topic="documents.parsed",reason="encode"} 0"#,
            r#"rag_stage_processing_seconds_count{stage="chunker",topic="documents.parsed"} 0"#,
            r#"rag_stage_events_in_total{stage="chunker",topic="documents.parsed"} 0"#,
            "rag_upload_to_ingested_seconds_count 0",
            r#"rag_upload_to_ingested_seconds_bucket{le="+Inf"} 0"#,
            r#"rag_question_to_answer_seconds_count{mode="extractive"} 0"#,
            r#"rag_llm_tokens_total{model="qwen",kind="completion"} 0"#,
            r#"rag_http_requests_total{method="GET",route="/v1/workspaces",status="200"} 0"#,
            r#"rag_http_request_seconds_count{method="GET",route="/v1/workspaces"} 0"#,
        ] {
            assert!(text.lines().any(|l| l == series), "{series} missing from:\n{text}");
        }
    }

    /// Every label an event sets is one the table declares for that metric.
    #[test]
    fn the_table_declares_every_label_events_use() {
        let declared = |name: &str| METRICS.iter().find(|m| m.name == name).map(|m| m.labels).unwrap_or_default();
        assert_eq!(declared(names::EVENTS_FAILED), &[STAGE, TOPIC, KIND]);
        assert_eq!(declared(names::DEAD_LETTERS), &[STAGE, TOPIC, REASON]);
        assert_eq!(declared(names::CONSUMER_LAG), &[STAGE, GROUP, TOPIC, PARTITION]);
        assert_eq!(declared(names::REBALANCES), &[STAGE, GROUP, KIND]);
        assert_eq!(declared(names::QUESTION_TO_ANSWER_SECONDS), &[MODE]);
        assert_eq!(declared(names::UPLOADS), &[OUTCOME]);
    }
}

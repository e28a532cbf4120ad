//! Every metric of rag-engine, in one table: its name (in [`names`]), kind,
//! unit, labels and help. `describe()` reads the table, so a metric cannot
//! be emitted without being described, and dashboards refer to these names.

/// What a metric is, for Prometheus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    Counter,
    Gauge,
    Histogram,
}

/// One row of [`METRICS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricSpec {
    pub name: &'static str,
    pub kind: MetricKind,
    /// Seconds-valued metrics say so (their buckets and unit follow).
    pub seconds: bool,
    pub labels: &'static [&'static str],
    pub help: &'static str,
}

macro_rules! metric_table {
    ($( $(#[$doc:meta])* $id:ident: $kind:ident $(seconds $seconds:tt)? = $name:literal [$($label:literal),*] $help:literal; )*) => {
        /// Metric names; each documented with its kind and labels in [`METRICS`].
        pub mod names {
            $( $(#[$doc])* pub const $id: &str = $name; )*
        }
        /// Every metric, described at start-up from this table.
        pub const METRICS: &[MetricSpec] = &[
            $( MetricSpec { name: $name, kind: MetricKind::$kind, seconds: metric_table!(@seconds $($seconds)?), labels: &[$($label),*], help: $help }, )*
        ];
    };
    (@seconds) => { false };
    (@seconds $t:tt) => { true };
}

metric_table! {
    /// Events a stage received.
    EVENTS_IN: Counter = "rag_stage_events_in_total" ["stage", "topic"] "Events received by a stage";
    /// Events a stage produced.
    EVENTS_OUT: Counter = "rag_stage_events_out_total" ["stage", "topic"] "Events produced by a stage";
    /// Failed processing attempts; kind is transient or permanent.
    EVENTS_FAILED: Counter = "rag_stage_events_failed_total" ["stage", "topic", "kind"] "Failed processing attempts";
    /// Events skipped because they were already applied.
    EVENTS_DUPLICATE: Counter = "rag_stage_events_duplicate_total" ["stage", "topic"] "Re-delivered events skipped because already applied";
    /// Events sent to `<topic>.dlq`; reason is the failure code.
    DEAD_LETTERS: Counter = "rag_stage_dead_letters_total" ["stage", "topic", "reason"] "Events sent to the dead-letter topic";
    /// Time to process one event, retries included.
    PROCESSING_SECONDS: Histogram seconds(1) = "rag_stage_processing_seconds" ["stage", "topic"] "Time to process one event";
    /// Stages that stopped on an error (a transient error that outlived its retries, the dead-letter limit).
    STAGE_FAILURES: Counter = "rag_stage_failures_total" ["stage"] "Stages that stopped on an error";
    /// Log end offset minus the stage's next offset.
    CONSUMER_LAG: Gauge = "rag_consumer_lag_messages" ["stage", "group", "topic", "partition"] "Log end offset minus the stage's next offset";
    /// Next offset the stage will process.
    CONSUMER_NEXT_OFFSET: Gauge = "rag_consumer_next_offset" ["stage", "group", "topic", "partition"] "Next offset the stage will process";
    /// Age of the oldest unprocessed event (seconds since it was produced); 0 when caught up.
    CONSUMER_LAG_SECONDS: Gauge seconds(1) = "rag_consumer_lag_seconds" ["stage", "group", "topic", "partition"] "Age of the oldest unprocessed event";
    /// Dead letters a `.dlq` topic holds.
    DLQ_MESSAGES: Gauge = "rag_dlq_messages" ["topic"] "Dead letters a dead-letter topic holds";
    /// From a document's upload to its first ingestion (event times).
    UPLOAD_TO_INGESTED_SECONDS: Histogram seconds(1) = "rag_upload_to_ingested_seconds" [] "Upload to first ingestion of a document";
    /// From a question to its answer (event times).
    QUESTION_TO_ANSWER_SECONDS: Histogram seconds(1) = "rag_question_to_answer_seconds" ["mode"] "Question to answer";
    /// Records that arrived past a partition's position (records skipped); always 0 unless something is wrong.
    OFFSET_GAPS: Counter = "rag_consumer_offset_gaps_total" ["stage", "topic"] "Records that arrived past a partition's position";
    /// Documents and messages in a non-terminal state for longer than the stuck threshold.
    STUCK: Gauge = "rag_stuck_items" ["kind"] "Documents and messages in a non-terminal state for longer than the stuck threshold";
    /// Partition assignments and revocations; kind is assign or revoke.
    REBALANCES: Counter = "rag_consumer_rebalances_total" ["stage", "group", "kind"] "Consumer group rebalances seen by a stage";
    /// Events whose delivery the broker confirmed.
    PRODUCED: Counter = "rag_produced_events_total" ["producer", "topic"] "Events whose delivery the broker confirmed";
    /// Files stored by an upload (CLI or API); outcome is ok or failed.
    UPLOADS: Counter = "rag_uploads_total" ["outcome"] "Files stored by an upload";
    /// Tokens the answer LLM used; kind is prompt or completion.
    LLM_TOKENS: Counter = "rag_llm_tokens_total" ["model", "kind"] "Tokens the answer LLM used";
    /// Sentences of uploaded documents written to the model rather than to a reader (kept out of answers).
    INSTRUCTIONS_FOUND: Counter = "rag_document_instructions_found_total" [] "Sentences of uploaded documents written to the model rather than to a reader";
    /// HTTP requests the API answered.
    HTTP_REQUESTS: Counter = "rag_http_requests_total" ["method", "route", "status"] "HTTP requests the API answered";
    /// Time to answer an HTTP request (SSE: to open the stream).
    HTTP_SECONDS: Histogram seconds(1) = "rag_http_request_seconds" ["method", "route"] "Time to answer an HTTP request";
    /// What the API holds open at once: kind is stream (event streams, streamed chat completions) or upload (uploads being stored).
    HTTP_IN_FLIGHT: Gauge = "rag_http_in_flight" ["kind"] "Event streams open and uploads being stored by the API";
    /// Catching a workspace's in-memory search index up with Postgres; kind is full or changes.
    SEARCH_INDEX_REFRESH_SECONDS: Histogram seconds(1) = "rag_search_index_refresh_seconds" ["kind"] "Catching an in-memory search index up with the read models";
    /// What the in-memory search indexes of this process hold, in postings (a vector component counts a third).
    SEARCH_INDEX_POSTINGS: Gauge = "rag_search_index_postings" [] "What the in-memory search indexes of this process hold, in postings";
    /// Files the sources of the deployment have seen, by state: present (a document), failed (refused), pending (to announce in a running sync, or announced and not yet confirmed).
    SOURCE_FILES: Gauge = "rag_source_files" ["state"] "Files the sources have seen, by state";
    /// Seconds since the source synced longest ago last went through every file (never: since it was added).
    SOURCE_SYNC_AGE: Gauge seconds(1) = "rag_source_oldest_sync_age_seconds" [] "Seconds since the least recently synced source last completed a sync";
    /// One source's files: seen (listed by its last complete sync), present, failed, pending.
    SOURCE_FILES_PER_SOURCE: Gauge = "rag_source_files_per_source" ["source", "state"] "One source's files by state";
    /// Seconds since one source last completed a sync (never: since it was added).
    SOURCE_SYNC_AGE_PER_SOURCE: Gauge seconds(1) = "rag_source_sync_age_seconds" ["source"] "Seconds since a source last completed a sync";
}

/// Tells the installed recorder the help text and unit of every metric.
pub fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    for m in METRICS {
        match (m.kind, m.seconds) {
            (MetricKind::Counter, _) => describe_counter!(m.name, m.help),
            (MetricKind::Gauge, true) => describe_gauge!(m.name, Unit::Seconds, m.help),
            (MetricKind::Gauge, false) => describe_gauge!(m.name, m.help),
            (MetricKind::Histogram, true) => describe_histogram!(m.name, Unit::Seconds, m.help),
            (MetricKind::Histogram, false) => describe_histogram!(m.name, m.help),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_prometheus_names_with_the_conventional_suffixes() {
        let mut seen = std::collections::HashSet::new();
        for m in METRICS {
            assert!(seen.insert(m.name), "{} twice", m.name);
            assert!(m.name.starts_with("rag_") && m.name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{}", m.name);
            assert_eq!(m.kind == MetricKind::Counter, m.name.ends_with("_total"), "{}: counters and only counters end in _total", m.name);
            assert_eq!(m.seconds, m.name.ends_with("_seconds"), "{}: seconds-valued metrics end in _seconds", m.name);
            assert!(!m.help.is_empty());
        }
    }
}

//! Instrumentation as named events, after Vector's `internal_events`: one
//! type per thing worth knowing, whose [`emit`](InternalEvent::emit) writes
//! the log line and updates the metrics together, so they cannot drift
//! apart and every label is spelled once. Logs carry the stage and topic;
//! the surrounding `tracing` span adds workspace, document and event ids.

mod consumer;
mod product;
mod stage;
mod startup;

pub use consumer::*;
pub use product::*;
pub use stage::*;
pub use startup::*;

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

/// Something that happened, logged and counted in one call.
pub trait InternalEvent {
    fn emit(self);
}

#[cfg(test)]
mod tests {
    use super::labels::*;
    use super::*;
    use crate::catalog::names;
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

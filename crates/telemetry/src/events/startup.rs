//! What a process registers when it starts: every series whose labels are
//! known then exists from zero.

use metrics::{counter, histogram};

use super::labels::*;
use super::InternalEvent;
use crate::catalog::names;

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

/// The answerer starts: its answer times per mode and the token counters
/// exist from zero: the configured model's, or, without a language model
/// (extractive answers), `model="none"`'s, so the dashboard's token panel
/// shows 0 rather than "No data".
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
        let model = self.llm_model.unwrap_or("none");
        for kind in ["prompt", "completion"] {
            counter!(names::LLM_TOKENS, "model" => model.to_string(), KIND => kind).increment(0);
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

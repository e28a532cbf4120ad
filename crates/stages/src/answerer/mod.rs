//! The answerer: QuestionAsked -> `rag_answer::question` (each part of the
//! question, a follow-up condensed into a standalone query, searched here
//! through `part::IndexSearch` -> an LLM answer grounded in numbered
//! evidence, or an extractive one, or an abstention) -> AnswerProduced. Every question
//! gets an answer event, a failure included, so no message stays pending.
//! While the model writes, the text so far goes out as ephemeral deltas
//! (Postgres NOTIFY, see docs/answers.md); the event stays the record.

use rag_answer::llm::ChatClient;
use rag_answer::prompt::Turn;
use rag_answer::question::answer_whole_question;
use rag_answer::AnswerMode;
use rag_bus::{Inbound, Outcome, Positions, Stage, StageIdentity, StageOutput};
use rag_events::{AnswerProduced, Envelope, EventType, Failure, QuestionAsked};
use rag_store::messages;
use rag_telemetry::events::{AnswererStarted, LlmTokensUsed};
use rag_telemetry::InternalEvent;
use tracing::warn;
use uuid::Uuid;

use crate::common::{decode, producer_name};
use crate::error::StageError;
use rag_search::retriever::Retriever;

mod deltas;
mod metadata;
mod part;
mod sources;

use deltas::DeltaSender;
use metadata::retrieval_json;
use part::{IndexSearch, SearchFailed};

pub const STAGE: &str = "answerer";
pub const GROUP: &str = "rag-answerer";

/// Earlier turns read for the model and for condensing a follow-up.
const HISTORY_TURNS: i64 = rag_answer::HISTORY_TURNS as i64;
/// Upper bound on a question's top_k.
const MAX_TOP_K: usize = 50;

pub fn identity() -> StageIdentity {
    StageIdentity {
        name: STAGE,
        group: GROUP.into(),
        consumes: vec![EventType::QuestionAsked],
        produces: vec![EventType::AnswerProduced],
        positions: Positions::Kafka,
        max_in_flight: None,
    }
}

/// Why a question was answered `failed` (the answer's `failure.code`; the
/// wire strings are what the API, the page and stored messages know).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerFailure {
    /// A document or conversation id in the question is not a UUID.
    InvalidQuestion,
    /// The workspace's documents could not be searched.
    RetrievalFailed,
    /// The language model did not answer (and the fallback is `fail`).
    LlmFailed,
}

impl AnswerFailure {
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerFailure::InvalidQuestion => "invalid_question",
            AnswerFailure::RetrievalFailed => "retrieval_failed",
            AnswerFailure::LlmFailed => "llm_failed",
        }
    }
}

pub struct Answerer {
    pub retriever: Retriever,
    pub llm: Option<ChatClient>,
    pub top_k: usize,
    /// Evidence budget and the check of answers.
    pub options: rag_answer::AnswerOptions,
    /// A model sees only the chunks scoring at least this fraction of the
    /// best one (`rag_answer::evidence::within_best`; 0: all of them).
    pub evidence_cutoff: f64,
    pub output: StageOutput,
}

impl Answerer {
    fn produced(&self, q: &QuestionAsked) -> AnswerProduced {
        AnswerProduced {
            envelope: Envelope::caused_by(&q.envelope, STAGE, producer_name(STAGE)),
            conversation_id: q.conversation_id.clone(),
            assistant_message_id: q.assistant_message_id.clone(),
            answer: String::new(),
            mode: "failed".into(),
            abstained: false,
            sections: Vec::new(),
            citations: Vec::new(),
            llm_usage: None,
            retrieval_json: "{}".into(),
            failure: None,
        }
    }

    fn failed(&self, q: &QuestionAsked, code: AnswerFailure, message: String) -> AnswerProduced {
        let mut out = self.produced(q);
        out.failure = Some(Failure { code: code.as_str().into(), message });
        out
    }

    async fn answer(&self, q: &QuestionAsked) -> Result<AnswerProduced, StageError> {
        let ws = &q.envelope.workspace_id;
        let mut document_ids = Vec::new();
        for d in &q.document_ids {
            match Uuid::parse_str(d) {
                Ok(id) => document_ids.push(id),
                Err(_) => return Ok(self.failed(q, AnswerFailure::InvalidQuestion, format!("document id {d:?} is not a UUID"))),
            }
        }
        let (Ok(conversation), Ok(user), Ok(assistant)) =
            (Uuid::parse_str(&q.conversation_id), Uuid::parse_str(&q.user_message_id), Uuid::parse_str(&q.assistant_message_id))
        else {
            return Ok(self.failed(q, AnswerFailure::InvalidQuestion, "conversation or message id is not a UUID".into()));
        };
        let top_k = q.top_k.filter(|k| *k > 0).map(|k| k as usize).unwrap_or(self.top_k).clamp(1, MAX_TOP_K);
        // The turns the question carries are its history: every door puts
        // in the conversation it continues (`rag_asking::continued_turns`,
        // or the turns an OpenAI-compatible client sent). A question with
        // none (a new conversation, one asked while an earlier answer was
        // still being written, one a producer of its own emitted) reads the
        // conversation's stored messages as they stand.
        let history: Vec<Turn> = if q.history.is_empty() {
            messages::history(&self.retriever.pool, ws, conversation, (user, assistant), HISTORY_TURNS)
                .await?
                .into_iter()
                .map(|m| Turn { role: m.role, content: m.content })
                .collect()
        } else {
            let from = q.history.len().saturating_sub(rag_answer::HISTORY_TURNS);
            q.history[from..].iter().map(|t| Turn { role: t.role.clone(), content: t.content.clone() }).collect()
        };
        // A question that asks several things is answered part by part,
        // each on its own evidence, a section (or more) per part in the
        // question's order (`rag_answer::question`).
        let search = IndexSearch { answerer: self, workspace_id: ws, event_id: &q.envelope.event_id, top_k, document_ids: &document_ids };
        let deltas = DeltaSender::start(self.retriever.pool.clone(), ws, conversation, assistant);
        let whole = {
            let mut stream = deltas.stream();
            answer_whole_question(self.llm.as_ref(), &q.question, &history, self.options, &search, &mut stream).await
        };
        deltas.finish().await;
        let whole = match whole {
            Ok(w) => w,
            Err(SearchFailed::Retry(e)) => return Err(e),
            Err(SearchFailed::Refused) => {
                return Ok(self.failed(q, AnswerFailure::RetrievalFailed, "the documents could not be searched for this question".into()))
            }
        };
        let Some(outcome) = whole.outcome else {
            let mut out = self.failed(q, AnswerFailure::LlmFailed, "the language model did not answer this question".into());
            // The part the model failed on: what it had found.
            if let Some(failed) = whole.parts.last() {
                out.retrieval_json = retrieval_json(&failed.found, &part::asked(failed), None, &[]);
            }
            return Ok(out);
        };
        let Some(first) = whole.parts.first() else {
            return Ok(self.failed(q, AnswerFailure::RetrievalFailed, "the question has no part to answer".into()));
        };
        let mut out = self.produced(q);
        out.answer = outcome.text();
        out.mode = outcome.mode.as_str().into();
        out.abstained = outcome.abstained;
        let mut sections = Vec::with_capacity(outcome.sections.len());
        for s in &outcome.sections {
            let mut citations = Vec::with_capacity(s.citations.len());
            for c in &s.citations {
                citations.push(self.to_event(ws, c).await?);
            }
            sections.push(rag_events::Section { text: s.text.clone(), source_ids: s.source_ids.clone(), citations });
        }
        out.citations = sections.iter().flat_map(|s| s.citations.iter().cloned()).collect();
        out.sections = sections;
        out.llm_usage = outcome.usage.as_ref().map(|u| rag_events::LlmUsage {
            model: u.model.clone(),
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            total_tokens: u.total_tokens,
        });
        let part_reports: Vec<serde_json::Value> =
            if whole.parts.len() > 1 { whole.parts.iter().map(part::summary).collect() } else { vec![] };
        out.retrieval_json = retrieval_json(&first.found, &part::asked(first), Some(&outcome), &part_reports);
        Ok(out)
    }
}

impl Stage for Answerer {
    type Error = StageError;

    fn identity(&self) -> StageIdentity {
        identity()
    }

    fn started(&self) {
        // "failed": an answer produced for a question that could not be
        // answered (`Answerer::failed`).
        let modes = [AnswerMode::Llm.as_str(), AnswerMode::Extractive.as_str(), AnswerMode::NoAnswer.as_str(), "failed"];
        AnswererStarted { modes: &modes, llm_model: self.llm.as_ref().map(|c| c.model()) }.emit();
    }

    async fn process(&self, msg: &Inbound) -> Result<Outcome, StageError> {
        let q: QuestionAsked = decode(self.output.codec(), msg)?;
        let out = self.answer(&q).await?;
        if let Some(f) = &out.failure {
            warn!(workspace_id = %q.envelope.workspace_id, conversation_id = %q.conversation_id,
                  message_id = %q.assistant_message_id, code = %f.code, reason = %f.message, "question not answered");
        }
        if let (true, Some(u), Some(llm)) = (out.mode == AnswerMode::Llm.as_str(), &out.llm_usage, &self.llm) {
            // Labelled with the configured model, not the one the server
            // reports (a path, a dated snapshot): the series is the one
            // registered at start, and the label set stays bounded.
            LlmTokensUsed { model: llm.model(), prompt: u.prompt_tokens, completion: u.completion_tokens }.emit();
        }
        self.output.send(&out).await?;
        let waited = (out.envelope.occurred_at - q.envelope.occurred_at).max(0) as u64;
        rag_telemetry::events::QuestionAnswered {
            workspace_id: &q.envelope.workspace_id,
            conversation_id: &q.conversation_id,
            mode: &out.mode,
            sections: out.sections.len(),
            since_question: std::time::Duration::from_millis(waited),
        }
        .emit();
        Ok(Outcome::Applied)
    }
}

//! The answerer: QuestionAsked -> (a follow-up condensed into a standalone
//! query) -> retrieval -> an LLM answer grounded in numbered evidence, or
//! an extractive one, or an abstention -> AnswerProduced. Every question
//! gets an answer event, a failure included, so no message stays pending.
//! While the model writes, the text so far goes out as ephemeral deltas
//! (Postgres NOTIFY, see docs/answers.md); the event stays the record.

use rag_answer::llm::ChatClient;
use rag_answer::prompt::Turn;
use rag_answer::{answer_question, retrieval_query, AnswerMode, AnswerOutcome, StreamedSection};
use rag_bus::{Inbound, Outcome, Positions, Stage, StageIdentity, StageOutput};
use rag_events::{AnswerProduced, Envelope, EventType, Failure, QuestionAsked};
use rag_store::messages;
use rag_telemetry::events::{AnswererStarted, LlmTokensUsed};
use rag_telemetry::InternalEvent;
use tracing::warn;
use uuid::Uuid;

use crate::common::{decode, producer_name};
use crate::error::StageError;
use rag_search::retriever::{Mode, Retriever};

mod deltas;
mod metadata;
mod part;
mod sources;

use deltas::DeltaSender;
use metadata::retrieval_json;
use part::{model_question, PartAnswer};
use sources::sources_read;

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
        // question's order (`rag_answer::parts`).
        let asked_parts = rag_answer::parts::question_parts_as_asked(&q.question);
        let parts: Vec<String> = asked_parts.iter().map(|p| p.text.clone()).collect();
        let deltas = DeltaSender::start(self.retriever.pool.clone(), ws, conversation, assistant);
        let mut send = deltas.callback();
        let mut answered: Vec<PartAnswer> = Vec::with_capacity(parts.len());
        let mut shown_so_far: Vec<StreamedSection> = Vec::new();
        let mut done: Vec<(String, AnswerOutcome)> = Vec::with_capacity(parts.len());
        let mut failure: Option<(AnswerFailure, &'static str)> = None;
        for (i, part) in parts.iter().enumerate() {
            // A later part may lean on an earlier one ("... sinh năm nào và
            // quê ở đâu?"): the earlier parts are its conversation so far.
            let mut part_history = history.clone();
            if !asked_parts[i].stands_alone {
                part_history.extend(parts[..i].iter().map(|p| Turn { role: "user".into(), content: p.clone() }));
            }
            // Earlier parts show their final text; this part's words are
            // compared with what was sent of this part only, so a restart
            // is said only when this part is written again.
            let prefix = shown_so_far.clone();
            let mut sent_of_part: Vec<StreamedSection> = Vec::new();
            let mut on_partial = |sections: &[StreamedSection]| {
                let restart = deltas::taken_back(&sent_of_part, sections);
                sent_of_part = sections.to_vec();
                let mut all = prefix.clone();
                all.extend_from_slice(sections);
                send(&all, restart, prefix.len());
            };
            let a = match self
                .answer_part(q, part, &part_history, i > 0, parts.len() > 1, top_k, &document_ids, &deltas, &mut on_partial)
                .await?
            {
                Ok(a) => a,
                Err(f) => {
                    failure = Some(f);
                    break;
                }
            };
            let Some(o) = &a.outcome else {
                failure = Some((AnswerFailure::LlmFailed, "the language model did not answer this question"));
                answered.push(a);
                break;
            };
            // What the answer will show of the parts done so far, exactly
            // as the combined answer will (a part that abstained adds
            // nothing, a section citing what an earlier one cites is said
            // once): final, so said as confirmed while later parts are
            // written (after the last one the answer itself follows).
            done.push((part.clone(), o.clone()));
            shown_so_far = rag_answer::combine_parts(done.clone())
                .sections
                .iter()
                .map(|s| StreamedSection { text: s.text.clone(), closed: true, citations: s.citations.clone() })
                .collect();
            if i + 1 < parts.len() {
                send(&shown_so_far, false, shown_so_far.len());
            }
            answered.push(a);
        }
        drop(send);
        deltas.finish().await;
        if let Some((code, message)) = failure {
            let mut out = self.failed(q, code, message.into());
            // The part the model failed on: what it had found.
            if let Some(failed) = answered.iter().find(|a| a.outcome.is_none()) {
                out.retrieval_json = retrieval_json(&failed.retrieval, &failed.asked(), None, &[]);
            }
            return Ok(out);
        }
        let Some(first) = answered.first() else {
            return Ok(self.failed(q, AnswerFailure::RetrievalFailed, "the question has no part to answer".into()));
        };
        let outcomes: Vec<(String, AnswerOutcome)> =
            parts.iter().zip(&answered).filter_map(|(p, a)| a.outcome.clone().map(|o| (p.clone(), o))).collect();
        let outcome = rag_answer::combine_parts(outcomes);
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
            if answered.len() > 1 { answered.iter().map(PartAnswer::summary).collect() } else { vec![] };
        out.retrieval_json = retrieval_json(&first.retrieval, &first.asked(), Some(&outcome), &part_reports);
        Ok(out)
    }

    /// One part of a question (the whole question when it asks one thing):
    /// searched (condensed first when it follows earlier turns or parts)
    /// and answered (`outcome` None: the model failed, and the fallback is
    /// to fail). `Ok(Err)`: the search failed.
    #[allow(clippy::too_many_arguments)]
    async fn answer_part(
        &self,
        q: &QuestionAsked,
        part: &str,
        history: &[Turn],
        later_part: bool,
        part_of_several: bool,
        top_k: usize,
        document_ids: &[Uuid],
        deltas: &DeltaSender,
        on_partial: &mut (dyn FnMut(&[StreamedSection]) + Send),
    ) -> Result<Result<PartAnswer, (AnswerFailure, &'static str)>, StageError> {
        let ws = &q.envelope.workspace_id;
        // A follow-up ("Còn năm 2022 thì sao?") is searched as a standalone query.
        let retrieval_started = std::time::Instant::now();
        let (query, query_source) = retrieval_query(self.llm.as_ref(), part, history).await;
        let retrieval = match self.retriever.retrieve(ws, &query, top_k, document_ids, Mode::Hybrid).await {
            Ok(r) => r,
            Err(e) if e.is_transient() => return Err(e.into()),
            Err(e) => {
                // The message is read by the user: the details (hosts,
                // statements) go to the log only.
                warn!(workspace_id = %ws, event_id = %q.envelope.event_id, error = %e, "retrieval failed for a question");
                return Ok(Err((AnswerFailure::RetrievalFailed, "the documents could not be searched for this question")));
            }
        };
        let sources = self.sources(ws, &retrieval).await?;
        // A reranker's order is not the fused scores' order, and its own
        // scores are on its own scale: the cutoff applies to fused lists.
        let reranked = retrieval.chunks.iter().any(|c| c.rerank_score.is_some());
        let scores: Vec<f64> = retrieval.chunks.iter().map(|c| c.score).collect();
        let llm_chunks = if reranked { sources.len() } else { rag_answer::evidence::within_best(&scores, self.evidence_cutoff) };
        let confidence = rag_answer::RetrievalConfidence {
            best_cosine: retrieval.chunks.iter().filter_map(|c| c.cosine).reduce(f64::max),
            lexical_coverage: retrieval.fusion.as_ref().map(|f| f.lexical_coverage),
        };
        let options = rag_answer::AnswerOptions {
            llm_chunks,
            retrieval: confidence,
            part_of_several,
            without_marks: rag_answer::decision::typed_without_marks(part),
            ..self.options
        };
        let retrieval_ms = retrieval_started.elapsed().as_millis() as u64;
        // Sources before words: what the model reads, on the page at once
        // (an extractive answer is there at once itself).
        if self.llm.is_some() {
            deltas.sources(sources_read(&sources[..llm_chunks.min(sources.len())]));
        }
        // A question the model condensed is read, and checked, as it was
        // condensed: a later part ("quê ở đâu?" -> "Thủ tướng Phạm Minh
        // Chính quê ở đâu?") without the earlier parts as turns, a
        // follow-up ("Còn nghỉ kết hôn thì sao?" -> "Nhân viên được nghỉ
        // kết hôn bao nhiêu ngày?") with the conversation. Judged as
        // written, a follow-up's own words name nothing the check can find
        // in the cited row, and a right answer was held back.
        // A follow-up the model could not condense is read as written,
        // with the conversation: asked the previous question and the
        // follow-up together, the model answered the previous one again.
        let (asked, model_history) = match (query_source, later_part) {
            ("llm", true) => {
                (query.clone(), &history[..history.len().saturating_sub(history.iter().rev().take_while(|t| t.role == "user").count())])
            }
            ("llm", false) => (query.clone(), history),
            _ => (part.to_string(), history),
        };
        let question = if self.retriever.restore_diacritics { model_question(&asked, query_source, &retrieval) } else { asked };
        // Evidence sentences are ranked against what was embedded.
        let ranked_against = retrieval.restoration.as_ref().map_or(query.as_str(), |r| r.text.as_str());
        let ranker = crate::evidence_ranker::EmbedderRanker { embedder: &self.retriever.embedder, query: ranked_against };
        let outcome = match answer_question(self.llm.as_ref(), &question, model_history, &sources, options, Some(&ranker), on_partial).await
        {
            Ok(o) => Some(o),
            Err(e) => {
                warn!(workspace_id = %ws, event_id = %q.envelope.event_id, error = %e, "the language model failed for a question");
                None
            }
        };
        Ok(Ok(PartAnswer { part: part.to_string(), query, query_source, retrieval_ms, retrieval, outcome }))
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

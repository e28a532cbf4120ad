//! Answering one question: the evidence a model is shown, its streamed
//! sections grounded as they close, the check of the whole answer, and the
//! extractive fallback; and the query a follow-up question is searched
//! with.

use crate::{
    abstention, contract, evidence, extractive, grounding, llm, prompt, AnswerError, AnswerMode, AnswerOutcome, Citation, CitationReport,
    LlmFallback, Section, SourceChunk,
};

/// Sections per extractive answer.
pub const EXTRACTIVE_SECTIONS: usize = 3;

/// Earlier turns given to the model.
pub const HISTORY_TURNS: usize = 6;

/// Evidence characters an answer keeps whatever the history takes.
const MIN_EVIDENCE_CHARS: usize = 1_200;

/// How an answer is made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnswerOptions {
    /// What happens when the model fails (down, timeouts, invalid output
    /// twice).
    pub fallback: LlmFallback,
    /// Characters of evidence in the prompt.
    pub evidence_chars: usize,
    /// Check the answer against what it cites before showing it.
    pub verify: bool,
    /// The check's certainty (0 to 1) below which an answer is held back,
    /// when the provider gives token probabilities; otherwise the check's
    /// own true/false decides.
    pub verify_threshold: f64,
    /// A model is shown only the first this many chunks (the answerer's
    /// evidence cutoff, `evidence::within_best`); a second look and an
    /// extractive answer (no model, or the model failed) read every chunk.
    pub llm_chunks: usize,
    /// A model is shown only this many evidence sentences, those an
    /// [`EvidenceRanker`] finds closest to the question (0: all of them,
    /// and all of them when there is no ranker).
    pub evidence_sentences: usize,
    /// When the check holds an answer back, show the model the sentences
    /// of every retrieved chunk but those it cited (narrowed to the
    /// closest, with a ranker) and let it answer once more
    /// (`ANSWER_SECOND_LOOK`).
    pub second_look: bool,
}

/// How close each evidence sentence is to the question (the embedder's
/// cosine, say), so a model is shown the few that can answer it.
pub trait EvidenceRanker: Sync {
    /// One score per text, higher is closer; None when it cannot tell (the
    /// model is then shown every sentence).
    fn rank<'a>(
        &'a self,
        question: &'a str,
        texts: &'a [String],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<Vec<f64>>> + Send + 'a>>;
}

/// The default of the answerer's evidence cutoff: chunks scoring below
/// this fraction of the best one are not shown to a model
/// (`evidence::within_best`, docs/answers.md).
pub const EVIDENCE_CUTOFF: f64 = 0.7;

/// The default of `evidence_sentences` (`ANSWER_EVIDENCE_SENTENCES`): the
/// evidence sentences closest to the question a model is shown
/// (docs/answers.md).
pub const EVIDENCE_SENTENCES: usize = 4;

/// The default of `verify_threshold`: the model's own choice (true more
/// likely than false), not a value tuned to a set. With the check's
/// Vietnamese instructions, right answers on eval/vi-dev scored from 0.54
/// up and wrong ones up to 0.48 (two it cannot tell apart, at 0.84 and
/// 0.93); on eval/en-dev the two overlap between 0.42 and 0.54, where any
/// threshold trades a right answer for a wrong one. docs/answers.md has
/// the sweep.
pub const VERIFY_THRESHOLD: f64 = 0.5;

/// Candidates asked for at each token of the check's reply: enough for
/// both `true` and `false` to be among them.
const VERIFY_CANDIDATES: u8 = 5;

/// A section while the answer is written: its text so far and, once the
/// model has closed it, its citations, grounded as the final answer's
/// are (the check may still turn the whole answer into an abstention).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamedSection {
    pub text: String,
    pub closed: bool,
    pub citations: Vec<Citation>,
}

/// What the answer says so far, while the model writes it.
pub type OnPartial<'a> = &'a mut (dyn FnMut(&[StreamedSection]) + Send);

/// The sections so far, each closed one with its citations. `grounded`
/// keeps what earlier calls grounded, so a section is grounded once
/// however many deltas follow it.
fn streamed_sections(
    partial: &[contract::PartialSection],
    evidence: &evidence::Evidence,
    chunks: &[SourceChunk],
    grounded: &mut Vec<(contract::ModelSection, Vec<Citation>)>,
) -> Vec<StreamedSection> {
    partial
        .iter()
        .map(|p| {
            let citations = match &p.written {
                Some(written) => match grounded.iter().find(|(w, _)| w == written) {
                    Some((_, c)) => c.clone(),
                    None => {
                        let one = contract::ModelAnswer { answerable: true, sections: vec![written.clone()] };
                        let c: Vec<Citation> = grounding::ground(&one, evidence, chunks, &mut CitationReport::default())
                            .into_iter()
                            .flat_map(|s| s.citations)
                            .collect();
                        grounded.push((written.clone(), c.clone()));
                        c
                    }
                },
                None => Vec::new(),
            };
            StreamedSection { text: p.text.clone(), closed: p.closed, citations }
        })
        .collect()
}

fn add_usage(total: &mut Option<llm::LlmUsage>, u: &llm::LlmUsage) {
    *total = Some(match total.take() {
        None => u.clone(),
        Some(t) => llm::LlmUsage {
            model: u.model.clone(),
            prompt_tokens: t.prompt_tokens + u.prompt_tokens,
            completion_tokens: t.completion_tokens + u.completion_tokens,
            total_tokens: t.total_tokens + u.total_tokens,
        },
    });
}

/// One look at the evidence: the model's answer to the units it was
/// shown, checked.
struct Look {
    outcome: AnswerOutcome,
    /// The units an answer the check held back cited: a second look is
    /// shown others.
    held_back_units: Vec<evidence::EvidenceUnit>,
}

/// Answers `question` from `chunks` (best ranked first). With the LLM: the
/// chunks become numbered evidence units (as many chunks as fit
/// `evidence_chars`), the model answers under the output contract (two
/// tries at a readable reply), cited ids become exact spans, and
/// `answerable: false` (or no section left with a valid citation) is an
/// abstention. When the check holds an answer back, the model gets a
/// second look (`second_look`): the sentences of every retrieved chunk,
/// not only those within the evidence cutoff (`llm_chunks`), without the
/// ones the held-back answer cited, narrowed again to the closest.
/// `on_partial` sees the sections' text as it streams. Without the LLM,
/// or when it fails and the fallback is extractive, the best evidence
/// units are the answer, or it abstains. `Err` only when the LLM failed
/// and the fallback is `Fail`.
pub async fn answer_question(
    llm: Option<&llm::ChatClient>,
    question: &str,
    history: &[prompt::Turn],
    chunks: &[SourceChunk],
    options: AnswerOptions,
    ranker: Option<&dyn EvidenceRanker>,
    on_partial: OnPartial<'_>,
) -> Result<AnswerOutcome, AnswerError> {
    let extractive_or_abstain = |llm_error: Option<String>| {
        let sections = extractive::answer(question, chunks, EXTRACTIVE_SECTIONS);
        let mut out = if sections.is_empty() {
            AnswerOutcome::plain(AnswerMode::NoAnswer, abstention(question), true)
        } else {
            AnswerOutcome::plain(AnswerMode::Extractive, sections, false)
        };
        out.llm_error = llm_error;
        out
    };
    let Some(client) = llm else {
        return Ok(extractive_or_abstain(None));
    };
    if chunks.is_empty() {
        return Ok(AnswerOutcome::plain(AnswerMode::NoAnswer, abstention(question), true));
    }
    // The history shares the context with the evidence.
    let history_chars: usize = history.iter().rev().take(HISTORY_TURNS).map(|t| t.content.chars().count().min(prompt::TURN_CHARS)).sum();
    let budget = options.evidence_chars.saturating_sub(history_chars).max(MIN_EVIDENCE_CHARS);
    let looks = if options.second_look && options.verify { 2 } else { 1 };
    // Sentences a held-back answer cited, and every sentence shown so far.
    let mut excluded: Vec<UnitKey> = Vec::new();
    let mut shown: Vec<UnitKey> = Vec::new();
    let mut first: Option<AnswerOutcome> = None;
    for look in 0..looks {
        // The first look reads the chunks within the evidence cutoff; a
        // second one every retrieved chunk (the extractive fallback above
        // always does).
        let chunks = if look == 0 { &chunks[..options.llm_chunks.clamp(1, chunks.len())] } else { chunks };
        let mut evidence = evidence::build(chunks, budget);
        if !excluded.is_empty() {
            let keep: Vec<f64> =
                evidence.units.iter().map(|u| if excluded.contains(&unit_key(chunks, u)) { f64::NEG_INFINITY } else { 1.0 }).collect();
            match keep.iter().filter(|k| k.is_finite()).count() {
                0 => evidence.units.clear(),
                left => evidence.keep_closest(&keep, left),
            }
        }
        if let Some(ranker) = ranker.filter(|_| options.evidence_sentences > 0 && evidence.units.len() > options.evidence_sentences) {
            let texts: Vec<String> = evidence
                .units
                .iter()
                .map(|u| match &u.heading {
                    Some(h) => format!("{} {}", h.trim_start_matches('#').trim(), u.text),
                    None => u.text.clone(),
                })
                .collect();
            if let Some(scores) = ranker.rank(question, &texts).await {
                evidence.keep_closest(&scores, options.evidence_sentences);
            }
        }
        // A second look at nothing new would repeat the first.
        if look > 0 && evidence.units.iter().all(|u| shown.contains(&unit_key(chunks, u))) {
            break;
        }
        shown.extend(evidence.units.iter().map(|u| unit_key(chunks, u)));
        let error = match look_at(client, question, history, chunks, &evidence, options, on_partial).await {
            Ok(seen) => {
                let mut outcome = seen.outcome;
                if let Some(earlier) = first.take() {
                    outcome = second_look_of(earlier, outcome);
                }
                if look + 1 < looks && !seen.held_back_units.is_empty() {
                    tracing::info!(
                        score = ?outcome.report.verify_score,
                        "the check held the answer back; the model takes a second look at the evidence"
                    );
                    excluded.extend(seen.held_back_units.iter().map(|u| unit_key(chunks, u)));
                    first = Some(outcome);
                    continue;
                }
                return Ok(outcome);
            }
            Err(e) => e,
        };
        // The second look failed: the first one's abstention stands.
        if let Some(earlier) = first {
            tracing::warn!(error = %error, "the second look at the evidence failed; the answer abstains");
            return Ok(earlier);
        }
        return match options.fallback {
            LlmFallback::Extractive => {
                let mut out = extractive_or_abstain(Some(error.to_string()));
                out.usage = error.usage;
                out.report.invalid_outputs = error.invalid_outputs;
                Ok(out)
            }
            LlmFallback::Fail => Err(error.error),
        };
    }
    // The second look had nothing new to show: the first one's abstention stands.
    first.ok_or(AnswerError::Contract(contract::ContractError::Violation("no reply".into())))
}

/// A sentence of the evidence wherever it was shown: its document and
/// span in the raw text.
type UnitKey = (String, u64, u64);

fn unit_key(chunks: &[SourceChunk], u: &evidence::EvidenceUnit) -> UnitKey {
    let c = &chunks[u.chunk];
    (c.document_id.clone(), c.char_start + u.start as u64, c.char_start + u.end as u64)
}

/// The outcome of a second look, which keeps the first look's start (its
/// first token and words were the first on the page), the whole time and
/// usage of both, and what the first one's check held back.
fn second_look_of(first: AnswerOutcome, mut second: AnswerOutcome) -> AnswerOutcome {
    if let Some(u) = &first.usage {
        let mut total = Some(u.clone());
        if let Some(s) = &second.usage {
            add_usage(&mut total, s);
        }
        second.usage = total;
    }
    let first_llm_ms = first
        .timings
        .as_ref()
        .and_then(|t| Some(t["prompt_ms"].as_f64()? + t["predicted_ms"].as_f64()?))
        .map(|ms| ms as u64 + first.report.verify_llm_ms.unwrap_or(0));
    second.report.first_look_llm_ms = first_llm_ms;
    second.report.second_looks = 1;
    let mut rejected = first.report.rejected_sections;
    rejected.append(&mut second.report.rejected_sections);
    second.report.rejected_sections = rejected;
    second.report.first_look_score = first.report.verify_score;
    second.first_token = first.first_token;
    second.first_token_at = first.first_token_at.or(second.first_token_at);
    second.first_words_at = first.first_words_at.or(second.first_words_at);
    second.llm_elapsed = match (first.llm_elapsed, second.llm_elapsed) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    second
}

/// Why a look gave no answer, with what it had used.
struct LookError {
    error: AnswerError,
    usage: Option<llm::LlmUsage>,
    invalid_outputs: usize,
}

impl std::fmt::Display for LookError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

/// The model answers from `evidence` under the output contract (two tries
/// at a readable reply), and the check holds back an answer its citations
/// do not support.
async fn look_at(
    client: &llm::ChatClient,
    question: &str,
    history: &[prompt::Turn],
    chunks: &[SourceChunk],
    evidence: &evidence::Evidence,
    options: AnswerOptions,
    on_partial: OnPartial<'_>,
) -> Result<Look, LookError> {
    let mut messages = prompt::build(question, &evidence.render(chunks), history, HISTORY_TURNS);
    let ids: Vec<String> = evidence.units.iter().map(|u| u.id.clone()).collect();
    let schema = contract::schema(&ids);
    let mut usage: Option<llm::LlmUsage> = None;
    let mut report = CitationReport::default();
    // Set by the loop below before it can end without an answer.
    let mut error = AnswerError::Contract(contract::ContractError::Violation("no reply".into()));
    let mut grounded = Vec::new();
    for attempt in 0..2 {
        let mut first_words_at: Option<std::time::SystemTime> = None;
        let mut on_text = |so_far: &str| {
            let (_, sections) = contract::partial_sections(so_far);
            if first_words_at.is_none() && sections.iter().any(|s| !s.text.trim().is_empty()) {
                first_words_at = Some(std::time::SystemTime::now());
            }
            on_partial(&streamed_sections(&sections, evidence, chunks, &mut grounded));
        };
        let asked_at = std::time::SystemTime::now();
        match client.complete(&messages, llm::Format::Schema(&schema), &mut on_text).await {
            Ok(c) => {
                add_usage(&mut usage, &c.usage);
                match contract::parse(&c.content) {
                    Ok(parsed) => {
                        report.lenient_parses += usize::from(parsed.lenient);
                        let mut sections = if parsed.answer.answerable {
                            grounding::ground(&parsed.answer, evidence, chunks, &mut report)
                        } else {
                            Vec::new()
                        };
                        let mut held_back_units = Vec::new();
                        if !sections.is_empty() && options.verify {
                            match verify(client, question, &sections).await {
                                Ok((verdict, score, u, llm_ms)) => {
                                    add_usage(&mut usage, &u);
                                    report.verify_llm_ms = llm_ms;
                                    report.verify_score = score;
                                    let held_back = match score {
                                        Some(p) => p < options.verify_threshold,
                                        None => verdict == Some(false),
                                    };
                                    report.verified = Some(!held_back).filter(|_| score.is_some() || verdict.is_some());
                                    if held_back {
                                        report.rejected_sections = sections.iter().map(|s| s.text.clone()).collect();
                                        held_back_units = parsed
                                            .answer
                                            .sections
                                            .iter()
                                            .flat_map(|s| &s.cites)
                                            .filter_map(|id| evidence.get(id))
                                            .map(|(_, u)| u.clone())
                                            .collect();
                                        sections.clear();
                                    }
                                }
                                // The check is a guard, not the answer: an
                                // answer it could not check is still shown.
                                Err(e) => report.verify_error = Some(e.to_string()),
                            }
                        }
                        let abstained = sections.is_empty();
                        if abstained {
                            sections = abstention(question);
                        }
                        let outcome = AnswerOutcome {
                            mode: AnswerMode::Llm,
                            sections,
                            abstained,
                            usage,
                            report,
                            llm_error: None,
                            first_token: c.first_token,
                            first_token_at: c.first_token.map(|d| asked_at + d),
                            first_words_at,
                            llm_elapsed: Some(c.elapsed),
                            timings: c.timings,
                            streamed: c.streamed,
                            evidence_units: evidence.units.len(),
                            evidence_chunks: evidence.chunks_used,
                        };
                        return Ok(Look { outcome, held_back_units });
                    }
                    Err(e) => {
                        tracing::warn!(attempt = attempt + 1, error = %e, "the model's answer does not follow the output contract");
                        report.invalid_outputs += 1;
                        // Deterministic sampling would repeat the same reply:
                        // the second try is told what was wrong.
                        messages.push(prompt::ChatMessage::new("assistant", c.content.chars().take(2000).collect::<String>()));
                        messages.push(prompt::ChatMessage::new("user", prompt::retry(&e.to_string())));
                        error = AnswerError::Contract(e);
                    }
                }
            }
            Err(e) => {
                error = AnswerError::Llm(e);
                break; // transport errors were already retried by the client
            }
        }
    }
    Err(LookError { error, usage, invalid_outputs: report.invalid_outputs })
}

/// Asks the model whether what `sections` cite answers `question`
/// (`prompt::VERIFY`): the verdict (None when the reply says neither), how
/// sure the model was (None without token probabilities), the call's
/// usage and its time inside the model server.
async fn verify(
    client: &llm::ChatClient,
    question: &str,
    sections: &[Section],
) -> Result<(Option<bool>, Option<f64>, llm::LlmUsage, Option<u64>), llm::LlmError> {
    let mut cited: Vec<&str> = Vec::new();
    for c in sections.iter().flat_map(|s| &s.citations) {
        if !cited.contains(&c.text.as_str()) && cited.len() < 6 {
            cited.push(&c.text);
        }
    }
    let schema = contract::verdict_schema();
    let messages = prompt::verify(question, &cited);
    let c = match client.complete_with_logprobs(&messages, llm::Format::Schema(&schema), VERIFY_CANDIDATES).await {
        // Some providers refuse `logprobs` (HTTP 400) rather than ignore it:
        // asked again without, the check still gives its yes/no.
        Err(llm::LlmError::Failed(e)) => {
            tracing::debug!(error = %e, "the check was refused with token probabilities; asking without");
            client.complete(&messages, llm::Format::Schema(&schema), &mut |_| {}).await?
        }
        other => other?,
    };
    let llm_ms = c.timings.as_ref().and_then(|t| Some(t["prompt_ms"].as_f64()? + t["predicted_ms"].as_f64()?)).map(|ms| ms as u64);
    Ok((contract::parse_verdict(&c.content), contract::verdict_probability(&c.logprobs), c.usage, llm_ms))
}

/// The query to retrieve with: the question itself, or for a follow-up
/// (there is history) a standalone query condensed by the model, or
/// without one (or when it fails) the previous user turn and the question
/// together. Returns the query and how it was made (`question`, `llm`,
/// `previous_turn`).
pub async fn retrieval_query(llm: Option<&llm::ChatClient>, question: &str, history: &[prompt::Turn]) -> (String, &'static str) {
    if history.iter().all(|t| t.role == "assistant") {
        return (question.to_string(), "question");
    }
    if let Some(client) = llm {
        match client.complete(&prompt::condense(question, history), llm::Format::Text, &mut |_| {}).await {
            Ok(c) => {
                if let Some(q) = prompt::read_condensed(&c.content) {
                    return (q, "llm");
                }
            }
            Err(e) => tracing::warn!(error = %e, "condensing a follow-up failed; searching with the previous turn"),
        }
    }
    (prompt::condense_without_llm(question, history), "previous_turn")
}

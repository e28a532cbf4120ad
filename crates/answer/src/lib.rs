//! Answers grounded by construction.
//!
//! Named pure steps (no I/O), each tested on its own:
//! [`evidence`] cuts the retrieved chunks into numbered sentence units with
//! exact spans; [`prompt`] shows them to the model; [`contract`] is the
//! output the model must give (unit ids, never quotes) and its lenient
//! reading; [`grounding`] turns cited ids into exact spans; [`extractive`]
//! answers from the best units without a model. [`llm`] is the I/O edge: an
//! OpenAI-compatible chat-completions client that streams.
//!
//! Offsets are Unicode scalar values into the document's full raw text, as
//! everywhere in rag-engine: a chunk's `content` is exactly
//! `full_text[char_start..char_end]`.

pub mod cite;
pub mod contract;
pub mod evidence;
pub mod extractive;
pub mod grounding;
pub mod llm;
pub mod prompt;

use serde::{Deserialize, Serialize};

/// A retrieved chunk as the answerer sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceChunk {
    pub chunk_id: String,
    pub document_id: String,
    pub content: String,
    /// Offset of `content` in the document's full text.
    pub char_start: u64,
    pub char_end: u64,
    pub filename: Option<String>,
    /// Segments of the document overlapping the chunk: (index, page, start, end).
    pub segments: Vec<SegmentSpan>,
    /// Zero-based pages the chunk spans.
    pub page_start: u32,
    pub page_end: u32,
    /// Lines of the full text the chunk spans (1-based, inclusive), when known.
    pub lines: Option<(u32, u32)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentSpan {
    pub segment_index: u32,
    pub page_idx: u32,
    pub char_start: u64,
    pub char_end: u64,
}

/// A citation, as ARCHITECTURE.md defines it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Citation {
    pub source_id: String,
    pub chunk_id: String,
    pub document_id: String,
    pub segment_index: u32,
    pub page_idx: u32,
    pub char_start: u64,
    pub char_end: u64,
    pub snippet_preview: String,
    /// The cited text itself (`full_text[char_start..char_end]`), kept so an
    /// answer keeps its evidence after the document is deleted.
    pub text: String,
    /// Always true since answers cite evidence units (kept for answers
    /// stored before: false was a whole-chunk fallback).
    pub exact: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    pub text: String,
    pub source_ids: Vec<String>,
    pub citations: Vec<Citation>,
}

/// What grounding dropped, and how the model's output was read, for the
/// message metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CitationReport {
    /// Ids the model cited that the prompt did not show.
    pub dropped_source_ids: Vec<String>,
    /// Sections left without a valid citation: not shown as facts.
    #[serde(default)]
    pub unsupported_sections: Vec<String>,
    /// Sub-sentence quotes that narrowed a highlight / that were not an
    /// exact part of a cited sentence (ignored).
    #[serde(default)]
    pub narrowed_quotes: usize,
    /// Sections whose text copies an evidence sentence whole, cited by it
    /// although the model named another.
    #[serde(default)]
    pub recited_sections: usize,
    #[serde(default)]
    pub rejected_quotes: usize,
    /// Replies read only leniently (the provider ignored the schema).
    #[serde(default)]
    pub lenient_parses: usize,
    /// Replies that could not be read at all (each one asked again once).
    #[serde(default)]
    pub invalid_outputs: usize,
    /// The check of the answer against what it cites: Some(false) turned
    /// the answer into an abstention; None when not checked (off, no
    /// answer to check, or the check itself failed: `verify_error`).
    #[serde(default)]
    pub verified: Option<bool>,
    /// How sure the check was that the cited sentences answer (0 to 1,
    /// `contract::verdict_probability`), when the provider gave token
    /// probabilities; compared with `ANSWER_VERIFY_THRESHOLD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_score: Option<f64>,
    /// The sections of an answer the check rejected (not shown), so an
    /// operator can see what was held back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected_sections: Vec<String>,
    /// The check call's time inside the model server (prefill + decode, its
    /// `timings`), when the server reports it: with the answer's own, what
    /// the model server alone took for this answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_llm_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_error: Option<String>,
    /// Quote-based answers (before evidence ids): quotes found in no
    /// chunk. Always 0 now: kept so older answers' metadata still reads.
    #[serde(default)]
    pub unlocated_quotes: usize,
}

/// Why the model gave no answer (with `LlmFallback::Fail`; otherwise the
/// extractive answer is given and this is its `llm_error`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnswerError {
    /// The model could not be reached, or refused the request.
    #[error(transparent)]
    Llm(#[from] llm::LlmError),
    /// Its reply could not be read as an answer, twice.
    #[error(transparent)]
    Contract(#[from] contract::ContractError),
}

/// Characters of text shown in a citation preview.
pub const SNIPPET_CHARS: usize = 160;

/// `text` is exactly `full_text[start..end]` (offsets in characters): what a
/// valid citation must be.
pub fn cites_exactly(full_text: &[char], start: usize, end: usize, text: &str) -> bool {
    start <= end && end <= full_text.len() && full_text[start..end].iter().copied().eq(text.chars())
}

pub(crate) fn char_slice(s: &str, start: usize, end: usize) -> String {
    s.chars().skip(start).take(end.saturating_sub(start)).collect()
}

pub(crate) fn preview(s: &str) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= SNIPPET_CHARS {
        flat
    } else {
        let mut p: String = flat.chars().take(SNIPPET_CHARS - 1).collect();
        p.push('…');
        p
    }
}

/// How an answer was produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerMode {
    Llm,
    Extractive,
    /// Without a model, nothing retrieved holds enough of the question: an
    /// abstention, no citations.
    NoAnswer,
}

impl AnswerMode {
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerMode::Llm => "llm",
            AnswerMode::Extractive => "extractive",
            AnswerMode::NoAnswer => "no_answer",
        }
    }
}

/// What to do when the LLM cannot give a valid answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlmFallback {
    Extractive,
    Fail,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AnswerOutcome {
    pub mode: AnswerMode,
    pub sections: Vec<Section>,
    /// The documents do not answer: one section saying so, no citations.
    pub abstained: bool,
    pub usage: Option<llm::LlmUsage>,
    pub report: CitationReport,
    /// Why the LLM was not used, when it was configured.
    pub llm_error: Option<String>,
    /// From asking the model to its first token / to its last.
    pub first_token: Option<std::time::Duration>,
    /// When the first token arrived (wall clock).
    pub first_token_at: Option<std::time::SystemTime>,
    /// When the answer's first words arrived (wall clock): the first token
    /// of a section's text, after the JSON around it. What the page's first
    /// words are compared with.
    pub first_words_at: Option<std::time::SystemTime>,
    pub llm_elapsed: Option<std::time::Duration>,
    /// llama.cpp's timings of the answer's call, when given.
    pub timings: Option<serde_json::Value>,
    /// The answer's call was streamed.
    pub streamed: bool,
    /// Evidence units shown to the model and chunks they came from.
    pub evidence_units: usize,
    pub evidence_chunks: usize,
}

impl AnswerOutcome {
    fn plain(mode: AnswerMode, sections: Vec<Section>, abstained: bool) -> Self {
        AnswerOutcome {
            mode,
            sections,
            abstained,
            usage: None,
            report: CitationReport::default(),
            llm_error: None,
            first_token: None,
            first_token_at: None,
            first_words_at: None,
            llm_elapsed: None,
            timings: None,
            streamed: false,
            evidence_units: 0,
            evidence_chunks: 0,
        }
    }

    /// Every citation, in section order.
    pub fn citations(&self) -> Vec<Citation> {
        self.sections.iter().flat_map(|s| s.citations.iter().cloned()).collect()
    }

    /// The answer as plain text: sections separated by blank lines.
    pub fn text(&self) -> String {
        self.sections.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join("\n\n")
    }
}

/// The question is Vietnamese (it has a letter that folding changes: a
/// Vietnamese diacritic or đ).
fn is_vietnamese(question: &str) -> bool {
    rag_lexical::words(question).iter().any(|w| rag_lexical::fold(w) != *w)
}

/// The reply when the documents do not answer, in the question's language.
pub fn abstention_text(question: &str) -> &'static str {
    if is_vietnamese(question) {
        "Tài liệu của bạn không đề cập đến nội dung này."
    } else {
        "Your documents do not say."
    }
}

fn abstention(question: &str) -> Vec<Section> {
    vec![Section { text: abstention_text(question).to_string(), source_ids: vec![], citations: vec![] }]
}

/// Sections per extractive answer.
pub const EXTRACTIVE_SECTIONS: usize = 3;

/// Earlier turns given to the model.
pub const HISTORY_TURNS: usize = 6;

/// Evidence characters an answer keeps whatever the history takes.
const MIN_EVIDENCE_CHARS: usize = 1_200;

/// How an answer is made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnswerOptions {
    /// Characters of evidence in the prompt.
    pub evidence_chars: usize,
    /// Check the answer against what it cites before showing it.
    pub verify: bool,
    /// The check's certainty (0 to 1) below which an answer is held back,
    /// when the provider gives token probabilities; otherwise the check's
    /// own true/false decides.
    pub verify_threshold: f64,
    /// A model is shown only the first this many chunks (the answerer's
    /// evidence cutoff, `evidence::within_best`); an extractive answer
    /// (no model, or the model failed) reads every chunk.
    pub llm_chunks: usize,
}

/// The default of the answerer's evidence cutoff: chunks scoring below
/// this fraction of the best one are not shown to a model
/// (`evidence::within_best`, docs/answers.md).
pub const EVIDENCE_CUTOFF: f64 = 0.7;

/// The default of `verify_threshold`. 0.5 would be the model's own
/// choice; on eval/vi-dev the 1.5B model's certainty for right answers ran
/// from 0.35 up (most above 0.54) and for answers to questions the
/// passages do not answer from 0.01 to 0.33 (two it cannot tell apart at
/// 0.85 and 0.92), so the model's choice held back right answers it was
/// merely unsure of. docs/answers.md has the sweep.
pub const VERIFY_THRESHOLD: f64 = 0.4;

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

/// Answers `question` from `chunks` (best ranked first). With the LLM: the
/// chunks become numbered evidence units (as many chunks as fit
/// `evidence_chars`), the model answers under the output contract (two
/// tries at a readable reply), cited ids become exact spans, and
/// `answerable: false` (or no section left with a valid citation) is an
/// abstention. `on_partial` sees the sections' text as it streams. Without
/// the LLM, or when it fails and the fallback is extractive, the best
/// evidence units are the answer, or it abstains. `Err` only when the LLM
/// failed and the fallback is `Fail`.
pub async fn answer_question(
    llm: Option<&llm::ChatClient>,
    fallback: LlmFallback,
    question: &str,
    history: &[prompt::Turn],
    chunks: &[SourceChunk],
    options: AnswerOptions,
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
    // What the model is shown; the extractive fallback above keeps them all.
    let chunks = &chunks[..options.llm_chunks.clamp(1, chunks.len())];
    // The history shares the context with the evidence.
    let history_chars: usize = history.iter().rev().take(HISTORY_TURNS).map(|t| t.content.chars().count().min(prompt::TURN_CHARS)).sum();
    let evidence = evidence::build(chunks, options.evidence_chars.saturating_sub(history_chars).max(MIN_EVIDENCE_CHARS));
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
            on_partial(&streamed_sections(&sections, &evidence, chunks, &mut grounded));
        };
        let asked_at = std::time::SystemTime::now();
        match client.complete(&messages, llm::Format::Schema(&schema), &mut on_text).await {
            Ok(c) => {
                add_usage(&mut usage, &c.usage);
                match contract::parse(&c.content) {
                    Ok(parsed) => {
                        report.lenient_parses += usize::from(parsed.lenient);
                        let mut sections = if parsed.answer.answerable {
                            grounding::ground(&parsed.answer, &evidence, chunks, &mut report)
                        } else {
                            Vec::new()
                        };
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
                        return Ok(AnswerOutcome {
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
                        });
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
    match fallback {
        LlmFallback::Extractive => {
            let mut out = extractive_or_abstain(Some(error.to_string()));
            out.usage = usage;
            out.report.invalid_outputs = report.invalid_outputs;
            Ok(out)
        }
        LlmFallback::Fail => Err(error),
    }
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

#[cfg(test)]
mod cites_exactly_tests {
    use super::cites_exactly;

    #[test]
    fn a_citation_must_be_exactly_its_slice_of_the_raw_text() {
        let full: Vec<char> = "Doanh thu tăng 12,4% 😀.".chars().collect();
        assert!(cites_exactly(&full, 15, 20, "12,4%"));
        assert!(cites_exactly(&full, 21, 22, "😀"));
        assert!(!cites_exactly(&full, 15, 20, "12,4"));
        assert!(!cites_exactly(&full, 20, 15, ""));
        assert!(!cites_exactly(&full, 15, 99, "12,4%"));
    }
}

#[cfg(test)]
mod tests;

//! Answers grounded by construction.
//!
//! [`question`] answers a whole question: its parts ([`parts`]) in turn,
//! each searched through a trait the caller implements (the answerer
//! stage, over the search index) and streamed through another; the crate
//! does no I/O of its own but the model's ([`llm`]).
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
pub mod decision;
pub mod evidence;
pub mod extractive;
pub mod faithful;
pub mod grounding;
pub mod injection;
pub mod llm;
pub mod parts;
pub mod prompt;
pub mod question;
pub mod signals;
pub mod support;

mod answering;
mod attempt;
mod opening;
mod options;
mod report;
mod rewrite;
mod streamed;
pub use answering::{answer_question, retrieval_query};
pub use options::{
    AnswerOptions, InstructionFilter, RetrievalConfidence, EVIDENCE_CUTOFF, EVIDENCE_SENTENCES, EXTRACTIVE_SECTIONS, HISTORY_TURNS,
};
pub use parts::combine_parts;
pub use report::CitationReport;
pub use streamed::{EvidenceRanker, OnPartial, RankedEvidence, StreamedSection};

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
    /// The document revision the chunk's offsets are in.
    #[serde(default = "first_revision")]
    pub revision: i32,
}

fn first_revision() -> i32 {
    1
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
    /// The document revision the offsets and text are in.
    #[serde(default = "first_revision")]
    pub revision: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    pub text: String,
    pub source_ids: Vec<String>,
    pub citations: Vec<Citation>,
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
    /// Of a question that asks several things, some answered: the parts the
    /// documents do not answer, as asked. Said after the sections
    /// ([`AnswerOutcome::text`]), never as a section: a section is what the
    /// documents say, and always cites it.
    pub unanswered_parts: Vec<String>,
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
            unanswered_parts: Vec::new(),
        }
    }

    /// Every citation, in section order.
    pub fn citations(&self) -> Vec<Citation> {
        self.sections.iter().flat_map(|s| s.citations.iter().cloned()).collect()
    }

    /// The answer as plain text: sections separated by blank lines, then
    /// the parts of the question the documents do not answer.
    pub fn text(&self) -> String {
        let mut paragraphs: Vec<String> = self.sections.iter().map(|s| s.text.clone()).collect();
        if !self.unanswered_parts.is_empty() {
            paragraphs.push(unanswered_text(&self.unanswered_parts));
        }
        paragraphs.join("\n\n")
    }
}

/// The question is Vietnamese, with its marks or without them ("tai lieu
/// noi gi ve nghi phep").
fn is_vietnamese(question: &str) -> bool {
    rag_retrieval::detect_language(question) == rag_retrieval::Language::Vi
}

/// The reply when the documents do not answer, in the question's language.
pub fn abstention_text(question: &str) -> &'static str {
    if is_vietnamese(question) {
        "Tài liệu của bạn không đề cập đến nội dung này."
    } else {
        "Your documents do not say."
    }
}

/// What is said of the parts of a question the documents do not answer,
/// in the language of the first: "Tài liệu của bạn không đề cập đến: lợi
/// nhuận năm 2023 tăng bao nhiêu?".
pub fn unanswered_text(parts: &[String]) -> String {
    let said = if parts.first().is_some_and(|p| is_vietnamese(p)) {
        "Tài liệu của bạn không đề cập đến:"
    } else {
        "Your documents do not say:"
    };
    format!("{said} {}", parts.join(" "))
}

fn abstention(question: &str) -> Vec<Section> {
    vec![Section { text: abstention_text(question).to_string(), source_ids: vec![], citations: vec![] }]
}

#[cfg(test)]
mod abstention_tests {
    #[test]
    fn abstentions_speak_the_questions_language_with_or_without_marks() {
        let vi = "Tài liệu của bạn không đề cập đến nội dung này.";
        assert_eq!(super::abstention_text("Giám đốc sinh năm nào?"), vi);
        assert_eq!(super::abstention_text("giam doc sinh nam nao"), vi);
        assert_eq!(super::abstention_text("When was the director born?"), "Your documents do not say.");
    }
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

/// Citations and sections for the unit tests of every module.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::{Citation, Section};

    /// An exact citation of `text` at chars `start..end` of document "d".
    pub fn citation_at(text: &str, start: u64, end: u64) -> Citation {
        Citation {
            source_id: "c".into(),
            chunk_id: "c".into(),
            document_id: "d".into(),
            segment_index: 0,
            page_idx: 0,
            char_start: start,
            char_end: end,
            snippet_preview: String::new(),
            text: text.into(),
            exact: true,
            revision: 1,
        }
    }

    /// An exact citation of `text`, from the document's first char.
    pub fn citation(text: &str) -> Citation {
        citation_at(text, 0, text.chars().count() as u64)
    }

    /// A section saying `text` with `citations`.
    pub fn section(text: &str, citations: Vec<Citation>) -> Section {
        Section { text: text.into(), source_ids: vec![], citations }
    }
}

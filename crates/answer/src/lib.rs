//! Answers with verified citations.
//!
//! Pure parts (no I/O): [`prompt`] builds the chat messages, [`parse`] reads
//! the model's JSON (fenced or not), [`cite`] validates source ids and
//! locates quotes in the cited chunks, [`extractive`] answers from the
//! chunks' best sentences. [`llm`] is the I/O edge: an OpenAI-compatible
//! chat-completions client.
//!
//! Offsets are Unicode scalar values into the document's full raw text, as
//! everywhere in rag-engine: a chunk's `content` is exactly
//! `full_text[char_start..char_end]`.

pub mod cite;
pub mod extractive;
pub mod llm;
pub mod parse;
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

impl SourceChunk {
    /// Where the chunk is, as the prompt tags it (seed 003):
    /// `Page 2, Lines 40-52`.
    pub fn location(&self) -> String {
        let pages = if self.page_start == self.page_end {
            format!("Page {}", self.page_start + 1)
        } else {
            format!("Pages {}-{}", self.page_start + 1, self.page_end + 1)
        };
        match self.lines {
            Some((a, b)) if a == b => format!("{pages}, Line {a}"),
            Some((a, b)) => format!("{pages}, Lines {a}-{b}"),
            None => pages,
        }
    }
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
    /// True when a quote was located; false for the chunk-range fallback.
    pub exact: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    pub text: String,
    pub source_ids: Vec<String>,
    pub citations: Vec<Citation>,
}

/// What validation dropped or could not place, for the message metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CitationReport {
    /// Source ids the model gave that were not retrieved for this question.
    pub dropped_source_ids: Vec<String>,
    /// Quotes found in no cited chunk (their section cites the chunk range).
    pub unlocated_quotes: usize,
    pub located_quotes: usize,
    /// Quotes found not in the chunks the section cited but in another
    /// retrieved chunk, which the section then cites instead (small models
    /// quote the right passage under the wrong source id).
    #[serde(default)]
    pub reattributed_quotes: usize,
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
    /// Nothing relevant retrieved: a "no answer" section, no citations.
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
    pub usage: Option<llm::LlmUsage>,
    pub report: CitationReport,
    /// Why the LLM was not used, when it was configured.
    pub llm_error: Option<String>,
}

impl AnswerOutcome {
    /// Every citation, in section order.
    pub fn citations(&self) -> Vec<Citation> {
        self.sections.iter().flat_map(|s| s.citations.iter().cloned()).collect()
    }

    /// The answer as plain text: sections separated by blank lines.
    pub fn text(&self) -> String {
        self.sections.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join("\n\n")
    }
}

/// The sentence given when the documents hold no answer.
pub fn no_answer_text(question: &str) -> &'static str {
    if rag_lexical::words(question).iter().any(|w| rag_lexical::fold(w) != *w) {
        "Tài liệu không chứa câu trả lời cho câu hỏi này."
    } else {
        "The documents hold no answer to this question."
    }
}

fn no_answer(question: &str) -> Vec<Section> {
    vec![Section { text: no_answer_text(question).to_string(), source_ids: vec![], citations: vec![] }]
}

/// Sections per extractive answer.
pub const EXTRACTIVE_SECTIONS: usize = 3;

/// Answers `question` from `chunks`: with the LLM when one is given (two
/// tries at valid JSON), otherwise, or when it fails and the fallback is
/// extractive, from the chunks' best sentences. `Err` only when the LLM
/// failed and the fallback is `Fail`.
pub async fn answer_question(
    llm: Option<&llm::ChatClient>,
    fallback: LlmFallback,
    question: &str,
    history: &[prompt::Turn],
    chunks: &[SourceChunk],
) -> Result<AnswerOutcome, String> {
    let extractive_or_none = |llm_error: Option<String>| {
        let sections = extractive::answer(question, chunks, EXTRACTIVE_SECTIONS);
        let (mode, sections) =
            if sections.is_empty() { (AnswerMode::NoAnswer, no_answer(question)) } else { (AnswerMode::Extractive, sections) };
        AnswerOutcome { mode, sections, usage: None, report: CitationReport::default(), llm_error }
    };
    let Some(client) = llm else {
        return Ok(extractive_or_none(None));
    };
    if chunks.is_empty() {
        return Ok(AnswerOutcome {
            mode: AnswerMode::NoAnswer,
            sections: no_answer(question),
            usage: None,
            report: CitationReport::default(),
            llm_error: None,
        });
    }
    let messages = prompt::build(question, chunks, history, 6);
    let mut usage: Option<llm::LlmUsage> = None;
    let mut error = String::new();
    for attempt in 0..2 {
        match client.complete(&messages).await {
            Ok(c) => {
                usage = Some(match usage.take() {
                    None => c.usage.clone(),
                    Some(u) => llm::LlmUsage {
                        model: c.usage.model.clone(),
                        prompt_tokens: u.prompt_tokens + c.usage.prompt_tokens,
                        completion_tokens: u.completion_tokens + c.usage.completion_tokens,
                        total_tokens: u.total_tokens + c.usage.total_tokens,
                    },
                });
                match parse::parse_answer(&c.content) {
                    Ok(raw) => {
                        let (sections, report) = cite::validate(&raw, chunks);
                        if !sections.is_empty() {
                            return Ok(AnswerOutcome { mode: AnswerMode::Llm, sections, usage, report, llm_error: None });
                        }
                        error = "the model's sections were empty".into();
                    }
                    Err(e) => {
                        tracing::warn!(attempt = attempt + 1, error = %e, "the model's answer is not valid JSON");
                        error = e.to_string();
                    }
                }
            }
            Err(e) => {
                error = e.to_string();
                break; // transport errors were already retried by the client
            }
        }
    }
    match fallback {
        LlmFallback::Extractive => {
            let mut out = extractive_or_none(Some(error));
            out.usage = usage;
            Ok(out)
        }
        LlmFallback::Fail => Err(error),
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

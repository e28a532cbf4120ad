//! An assistant message's metadata as one type: the projector writes it
//! from AnswerProduced, and every reader (the API and the page through it,
//! `/v1/chat/completions`, MCP, `rag-engine ask`, the evaluator) reads these
//! fields, never the JSON by key. A field renamed here is renamed for all;
//! `tests::the_stored_form_is_the_wire_form` fails when the JSON changes.

use rag_events::{AnswerProduced, Citation, Failure, LlmUsage, Section};
use serde::{Deserialize, Serialize};

/// `messages.metadata` of an answered (or failed) assistant message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AnswerMetadata {
    /// `llm` or `extractive`: who wrote the sections.
    #[serde(default)]
    pub mode: String,
    /// The documents do not answer: the content says so, uncited.
    #[serde(default)]
    pub abstained: bool,
    /// The answer's sections, each with its citations (and the cited text).
    #[serde(default)]
    pub sections: Vec<Section>,
    /// Every section's citations in order: what the sources list numbers.
    #[serde(default)]
    pub citations: Vec<Citation>,
    #[serde(default)]
    pub llm_usage: Option<LlmUsage>,
    /// How the answer was found and checked (the answerer's record).
    #[serde(default)]
    pub retrieval: AnswerDiagnostics,
    /// Why no answer was produced (the message is `failed`).
    #[serde(default)]
    pub failure: Option<Failure>,
}

/// The answerer's record of one answer. The fields the doors show are typed;
/// the rest (chunks and scores, timings, fusion, per-part reports) is kept
/// as written, for operators and the evaluator.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AnswerDiagnostics {
    /// The question as the retrieval read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// `vi` or `en`: the language the answer is written in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_language: Option<String>,
    /// Parts of a compound question the documents do not answer: said
    /// after the sections, never a section.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unanswered_parts: Vec<String>,
    /// The sentence that says so, in the question's language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unanswered_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citation_report: Option<HeldBack>,
    #[serde(flatten)]
    pub details: serde_json::Map<String, serde_json::Value>,
}

/// What the checks took back of the model's text (rag_answer's
/// `CitationReport`, of which the doors show these fields).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HeldBack {
    /// Sections that said what their citations do not (with what was
    /// missing, `" (not in its citations: …)"`): shown as the cited text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unfaithful_sections: Vec<String>,
    /// Sections the check of the answer rejected (not shown).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected_sections: Vec<String>,
    /// Sections written in another language than the question's, rewritten.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rewritten_sections: usize,
    #[serde(flatten)]
    pub details: serde_json::Map<String, serde_json::Value>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl AnswerDiagnostics {
    /// The whole check report as the answer crate's type (`CitationReport`,
    /// which this crate does not know); its default when absent or
    /// unreadable.
    pub fn citation_report_as<T: serde::de::DeserializeOwned + Default>(&self) -> T {
        self.citation_report
            .as_ref()
            .and_then(|r| serde_json::to_value(r).ok())
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default()
    }

    /// A diagnostic the doors do not show (`llm_timings`, `chunks`, `parts`…), as written.
    pub fn detail(&self, key: &str) -> &serde_json::Value {
        self.details.get(key).unwrap_or(&serde_json::Value::Null)
    }
}

impl HeldBack {
    /// The sections' texts taken back after being written (unfaithful, then
    /// rejected), as the record holds them: what a reader who watched the
    /// answer stream saw and must not take for the answer.
    pub fn withdrawn(&self) -> impl Iterator<Item = &str> {
        self.unfaithful_sections.iter().chain(&self.rejected_sections).map(String::as_str)
    }
}

impl AnswerMetadata {
    /// The metadata of the answer an event carries. Each citation carries
    /// the text it cites, so it survives the document's deletion (v2 of
    /// AnswerProduced; a v1 event's texts come from `citation_texts` of
    /// its retrieval JSON, matched by position).
    pub fn of_event(e: &AnswerProduced) -> AnswerMetadata {
        let retrieval: AnswerDiagnostics = serde_json::from_str(&e.retrieval_json).unwrap_or_default();
        let v1_texts: Vec<String> = retrieval
            .details
            .get("citation_texts")
            .and_then(|a| a.as_array())
            .map(|a| a.iter().map(|t| t.as_str().unwrap_or_default().to_string()).collect())
            .unwrap_or_default();
        let mut n = 0usize;
        let mut with_text = |c: &Citation| {
            let mut c = c.clone();
            if c.text.is_none() {
                c.text = v1_texts.get(n).cloned();
            }
            n += 1;
            c
        };
        let sections: Vec<Section> = e
            .sections
            .iter()
            .map(|s| Section {
                text: s.text.clone(),
                source_ids: s.source_ids.clone(),
                citations: s.citations.iter().map(&mut with_text).collect(),
            })
            .collect();
        let citations = sections.iter().flat_map(|s| s.citations.iter().cloned()).collect();
        AnswerMetadata {
            mode: e.mode.clone(),
            abstained: e.abstained,
            sections,
            citations,
            llm_usage: e.llm_usage.clone(),
            retrieval,
            failure: e.failure.clone(),
        }
    }

    /// The metadata of a stored message; `None` for a question's metadata,
    /// a pending answer's (`{}`) or one this version cannot read.
    pub fn of_stored(metadata: &serde_json::Value) -> Option<AnswerMetadata> {
        metadata.get("mode")?;
        serde_json::from_value(metadata.clone()).ok()
    }

    /// As stored in `messages.metadata`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// The texts taken back after they streamed (see `HeldBack::withdrawn`).
    pub fn withdrawn(&self) -> Vec<&str> {
        self.retrieval.citation_report.as_ref().map(|r| r.withdrawn().collect()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;

//! An assistant message's metadata as one type: the projector writes it
//! from AnswerProduced, and every reader (the API and the page through it,
//! `/v1/chat/completions`, MCP, `rag-engine ask`, the evaluator) reads these
//! fields, never the JSON by key. A field renamed here is renamed for all;
//! `tests::the_stored_form_is_the_wire_form` fails when the JSON changes.

use rag_events::{AnswerProduced, Citation, Failure, LlmUsage, Section};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `key` of `m` as a `T`: its default when absent, null or not a `T`
/// (metadata written by an older version is read as far as it goes).
fn field<T: DeserializeOwned + Default>(m: &Map<String, Value>, key: &str) -> T {
    m.get(key).and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default()
}

/// Takes `key` out of `details` when it reads as a `T`; a value that does
/// not stays there as written, so nothing is lost on the way through.
fn take<T: DeserializeOwned>(details: &mut Map<String, Value>, key: &str) -> Option<T> {
    if details.get(key).is_some_and(Value::is_null) {
        details.remove(key);
        return None;
    }
    let t = serde_json::from_value(details.get(key)?.clone()).ok()?;
    details.remove(key);
    Some(t)
}

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
    /// The record as written, read field by field: a typed field that is
    /// not of its type stays among the details.
    pub fn read(v: &Value) -> AnswerDiagnostics {
        let Some(m) = v.as_object() else { return AnswerDiagnostics::default() };
        let mut details = m.clone();
        let citation_report = match details.get("citation_report") {
            Some(Value::Object(_)) => details.remove("citation_report").map(|r| HeldBack::read(&r)),
            Some(Value::Null) => details.remove("citation_report").and(None),
            _ => None,
        };
        AnswerDiagnostics {
            query: take(&mut details, "query"),
            query_language: take(&mut details, "query_language"),
            unanswered_parts: take(&mut details, "unanswered_parts").unwrap_or_default(),
            unanswered_text: take(&mut details, "unanswered_text"),
            citation_report,
            details,
        }
    }

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
    /// The check's report as written, read field by field (see
    /// [`AnswerDiagnostics::read`]).
    pub fn read(v: &Value) -> HeldBack {
        let mut details = v.as_object().cloned().unwrap_or_default();
        HeldBack {
            unfaithful_sections: take(&mut details, "unfaithful_sections").unwrap_or_default(),
            rejected_sections: take(&mut details, "rejected_sections").unwrap_or_default(),
            rewritten_sections: take(&mut details, "rewritten_sections").unwrap_or_default(),
            details,
        }
    }

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
        let retrieval = serde_json::from_str::<Value>(&e.retrieval_json).map(|v| AnswerDiagnostics::read(&v)).unwrap_or_default();
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

    /// The metadata of a stored message, read field by field (a field of
    /// an older shape reads as its default and takes nothing else with
    /// it); `None` for a question's metadata or a pending answer's (`{}`).
    pub fn of_stored(metadata: &Value) -> Option<AnswerMetadata> {
        let m = metadata.as_object()?;
        m.get("mode")?;
        Some(AnswerMetadata {
            mode: field(m, "mode"),
            abstained: field(m, "abstained"),
            sections: field(m, "sections"),
            citations: field(m, "citations"),
            llm_usage: field(m, "llm_usage"),
            retrieval: m.get("retrieval").map(AnswerDiagnostics::read).unwrap_or_default(),
            failure: field(m, "failure"),
        })
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

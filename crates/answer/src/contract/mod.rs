//! The model's output contract: `{"answerable": bool, "sections": [{"text":
//! "...", "cites": ["S4", "S7"]}]}`: ids of evidence units, never quotes.
//!
//! [`schema`] is the JSON schema sent as the OpenAI-compatible
//! `response_format` (llama.cpp's server compiles it into a grammar, so a
//! local model cannot even write an id that is not in the prompt);
//! [`parse`] reads what a provider that ignores it returns, leniently, and
//! says whether leniency was needed. [`partial_sections`] reads the
//! sections' text out of an unfinished answer while it streams.

use serde::{Deserialize, Serialize};

mod partial;
pub mod prefill;
#[cfg(test)]
mod tests;
mod verdict;

pub use partial::{partial_sections, PartialSection};
pub use verdict::{boolean_probability, parse_verdict, verdict_probability, verdict_schema};

/// Sections an answer may have (the schema's `maxItems`).
pub const MAX_SECTIONS: usize = 4;

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ModelAnswer {
    pub answerable: bool,
    pub sections: Vec<ModelSection>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ModelSection {
    pub text: String,
    /// Evidence unit ids as the model wrote them (`S4`).
    pub cites: Vec<String>,
    /// An exact sub-sentence of a cited unit that narrows the highlight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ContractError {
    #[error("the model's answer is not JSON: {0}")]
    NotJson(String),
    #[error("the model's answer does not follow the output contract: {0}")]
    Violation(String),
}

/// How the answer was read.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub answer: ModelAnswer,
    /// The strict contract did not hold (fences, prose around the object,
    /// `source_ids` for `cites`, ids as numbers, a missing `answerable`),
    /// but the answer could still be read.
    pub lenient: bool,
}

/// A section's properties in the order the prompt shows them, for
/// [`crate::llm::Format::SchemaKeysFirst`]: the text, then what it cites.
pub const TEXT_BEFORE_CITES: &[&str] = &["text", "cites"];

/// The JSON schema of an answer citing `ids` (the evidence units in the
/// prompt): an enum of ids, so a grammar-constrained model cannot invent
/// one.
pub fn schema(ids: &[String]) -> serde_json::Value {
    let cite = if ids.is_empty() { serde_json::json!({"type": "string"}) } else { serde_json::json!({"type": "string", "enum": ids}) };
    serde_json::json!({
        "type": "object",
        "properties": {
            "answerable": {"type": "boolean"},
            "sections": {
                "type": "array",
                "maxItems": MAX_SECTIONS,
                "items": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string"},
                        "cites": {"type": "array", "items": cite, "minItems": 1, "maxItems": 4},
                        "quote": {"type": "string"}
                    },
                    "required": ["text", "cites"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["answerable", "sections"],
        "additionalProperties": false
    })
}

#[derive(Deserialize)]
struct Strict {
    answerable: bool,
    sections: Vec<StrictSection>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StrictSection {
    text: String,
    cites: Vec<String>,
    #[serde(default)]
    quote: Option<String>,
}

/// Reads the model's content. Strict first; then leniently: a fenced or
/// wrapped object, `source_ids`/`citations` for `cites`, ids as numbers or
/// `[S4]`, `quotes` for `quote`, `answerable` inferred from the sections.
pub fn parse(content: &str) -> Result<Parsed, ContractError> {
    let trimmed = content.trim();
    if let Ok(s) = serde_json::from_str::<Strict>(trimmed) {
        let answer = ModelAnswer {
            answerable: s.answerable,
            sections: s.sections.into_iter().map(|s| ModelSection { text: s.text, cites: s.cites, quote: s.quote }).collect(),
        };
        return Ok(Parsed { answer: check(answer), lenient: false });
    }
    let mut last = String::from("empty answer");
    for candidate in [Some(trimmed.to_string()), unfence(trimmed), outermost_object(trimmed)].into_iter().flatten() {
        match serde_json::from_str::<serde_json::Value>(&candidate) {
            Ok(v) => return Ok(Parsed { answer: check(lenient(&v)?), lenient: true }),
            Err(e) => last = e.to_string(),
        }
    }
    Err(ContractError::NotJson(last))
}

/// Sections without text are dropped; "answerable" with no section left
/// says nothing, and is read as not answerable (the schema allows it, and
/// asking again at temperature 0 would get it again).
fn check(mut a: ModelAnswer) -> ModelAnswer {
    a.sections.retain(|s| !s.text.trim().is_empty());
    if !a.answerable || a.sections.is_empty() {
        a.answerable = false;
        a.sections.clear();
    }
    a
}

fn lenient(v: &serde_json::Value) -> Result<ModelAnswer, ContractError> {
    let obj = v.as_object().ok_or_else(|| ContractError::Violation("not an object".into()))?;
    let sections_value = obj.get("sections").or_else(|| obj.get("answer")).cloned().unwrap_or(serde_json::Value::Null);
    let raw_sections = match sections_value {
        serde_json::Value::Array(a) => a,
        serde_json::Value::Null => Vec::new(),
        other => return Err(ContractError::Violation(format!("sections is {other}"))),
    };
    let sections: Vec<ModelSection> = raw_sections.iter().filter_map(lenient_section).collect();
    let answerable = match obj.get("answerable") {
        Some(serde_json::Value::Bool(b)) => *b,
        Some(serde_json::Value::String(s)) => s.eq_ignore_ascii_case("true"),
        _ => sections.iter().any(|s| !s.text.trim().is_empty()),
    };
    Ok(ModelAnswer { answerable, sections })
}

/// One section read leniently: a bare string, or an object whose cites
/// may be called `citations`, `source_ids`, ... and whose quote `quotes`.
fn lenient_section(s: &serde_json::Value) -> Option<ModelSection> {
    match s {
        serde_json::Value::String(t) => Some(ModelSection { text: t.clone(), cites: Vec::new(), quote: None }),
        serde_json::Value::Object(o) => {
            let text = o.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_string();
            let cites =
                ["cites", "citations", "source_ids", "sources", "ids"].iter().find_map(|k| o.get(*k)).map(ids_of).unwrap_or_default();
            let quote = match o.get("quote").or_else(|| o.get("quotes")) {
                Some(serde_json::Value::String(q)) => Some(q.clone()),
                Some(serde_json::Value::Array(qs)) => qs.iter().find_map(|q| q.as_str()).map(str::to_string),
                _ => None,
            };
            Some(ModelSection { text, cites, quote })
        }
        _ => None,
    }
}

/// `["S4", 7, "[S9]"]` or `"S4, S7"` as ids (`S4`, `S7`, `S9`).
fn ids_of(v: &serde_json::Value) -> Vec<String> {
    let one = |s: &str| -> Vec<String> {
        s.split([',', ' ', ';'])
            .map(|p| p.trim().trim_start_matches('[').trim_end_matches(']').trim())
            .filter(|p| !p.is_empty())
            .map(|p| if p.chars().all(|c| c.is_ascii_digit()) { format!("S{p}") } else { p.to_uppercase() })
            .collect()
    };
    match v {
        serde_json::Value::Array(a) => a
            .iter()
            .flat_map(|x| match x {
                serde_json::Value::Number(n) => vec![format!("S{n}")],
                serde_json::Value::String(s) => one(s),
                _ => Vec::new(),
            })
            .collect(),
        serde_json::Value::String(s) => one(s),
        serde_json::Value::Number(n) => vec![format!("S{n}")],
        _ => Vec::new(),
    }
}

fn unfence(s: &str) -> Option<String> {
    let start = s.find("```")?;
    let after = &s[start + 3..];
    let body = &after[after.find('\n')? + 1..];
    Some(body[..body.find("```")?].trim().to_string())
}

fn outermost_object(s: &str) -> Option<String> {
    let (start, end) = (s.find('{')?, s.rfind('}')?);
    (end > start).then(|| s[start..=end].to_string())
}

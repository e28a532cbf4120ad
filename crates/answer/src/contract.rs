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

/// The schema of the check's reply: `{"answers": bool}`.
pub fn verdict_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {"answers": {"type": "boolean"}},
        "required": ["answers"],
        "additionalProperties": false
    })
}

/// How sure the check was that the sentences answer: P(true) over
/// P(true) + P(false) at the token where the reply's `answers` value
/// begins, from the candidates the model weighed there. None when the
/// provider gave no token probabilities or the reply has no such token.
/// A threshold on this, rather than the model's greedy choice, sets how
/// strict the check is (`ANSWER_VERIFY_THRESHOLD`).
pub fn verdict_probability(tokens: &[crate::llm::TokenLogprobs]) -> Option<f64> {
    let mut before = String::new();
    for t in tokens {
        let word = t.token.trim().to_ascii_lowercase();
        // The value's token: the first one with text after `"answers"` and
        // its colon (not any colon: a reasoning model may write some first).
        let after_key = before.rfind("answers").is_some_and(|i| before[i..].contains(':'));
        if after_key && !word.is_empty() {
            let is = |w: &str, value: &str| !w.is_empty() && value.starts_with(w);
            if !is(&word, "true") && !is(&word, "false") {
                return None;
            }
            let mut candidates: Vec<(&str, f64)> = t.top_logprobs.iter().map(|c| (c.token.as_str(), c.logprob)).collect();
            if !candidates.iter().any(|(c, _)| *c == t.token) {
                candidates.push((&t.token, t.logprob));
            }
            let (mut yes, mut no) = (0.0, 0.0);
            for (c, lp) in candidates {
                let c = c.trim().to_ascii_lowercase();
                if is(&c, "true") {
                    yes += lp.exp();
                } else if is(&c, "false") {
                    no += lp.exp();
                }
            }
            return (yes + no > 0.0).then(|| yes / (yes + no));
        }
        before.push_str(&t.token);
    }
    None
}

/// The check's verdict; None when the reply says neither.
pub fn parse_verdict(content: &str) -> Option<bool> {
    let t = content.trim();
    let v: Option<serde_json::Value> =
        serde_json::from_str(t).ok().or_else(|| outermost_object(t).and_then(|o| serde_json::from_str(&o).ok()));
    match v.as_ref().map(|v| &v["answers"]) {
        Some(serde_json::Value::Bool(b)) => Some(*b),
        Some(serde_json::Value::String(s)) if s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("yes") => Some(true),
        Some(serde_json::Value::String(s)) if s.eq_ignore_ascii_case("false") || s.eq_ignore_ascii_case("no") => Some(false),
        _ => match t.to_ascii_lowercase().trim_matches(|c: char| !c.is_ascii_alphabetic()) {
            "yes" | "true" => Some(true),
            "no" | "false" => Some(false),
            _ => None,
        },
    }
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

/// A section's text as generated so far.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartialSection {
    pub text: String,
    /// The section's object is closed: its text and cites are final.
    pub closed: bool,
    /// Once closed: the section as written (its cites and quote, read
    /// leniently), so its citations can be shown before the answer ends.
    pub written: Option<ModelSection>,
}

/// What an unfinished answer says so far: `answerable` once written, and
/// each section's text (the last possibly cut mid-string). Reads any
/// prefix of a valid answer; never fails, a malformed prefix gives what
/// could be read before it.
pub fn partial_sections(prefix: &str) -> (Option<bool>, Vec<PartialSection>) {
    let mut scan = Scanner { chars: prefix.chars().collect(), pos: 0 };
    let mut answerable = None;
    let mut sections = Vec::new();
    if !scan.eat('{') {
        return (None, sections);
    }
    while let Some(key) = scan.string() {
        if !scan.eat(':') {
            break;
        }
        match key.text.as_str() {
            "answerable" => {
                if scan.literal("true") {
                    answerable = Some(true);
                } else if scan.literal("false") {
                    answerable = Some(false);
                } else {
                    break;
                }
            }
            "sections" => {
                if !scan.eat('[') {
                    break;
                }
                loop {
                    scan.ws();
                    let opened_at = scan.pos;
                    if !scan.eat('{') {
                        break;
                    }
                    let mut section = PartialSection::default();
                    let mut complete = true;
                    loop {
                        let Some(k) = scan.string() else {
                            complete = false;
                            break;
                        };
                        if !scan.eat(':') {
                            complete = false;
                            break;
                        }
                        if k.text == "text" {
                            let Some(v) = scan.string() else { break };
                            section.text = v.text;
                            if !v.closed {
                                complete = false;
                                break;
                            }
                        } else if !scan.skip_value() {
                            complete = false;
                            break;
                        }
                        if !scan.eat(',') {
                            break;
                        }
                    }
                    section.closed = complete && scan.eat('}');
                    if section.closed {
                        let object: String = scan.chars[opened_at..scan.pos].iter().collect();
                        section.written = serde_json::from_str::<serde_json::Value>(&object).ok().as_ref().and_then(lenient_section);
                    }
                    let closed = section.closed;
                    sections.push(section);
                    if !closed || !scan.eat(',') {
                        break;
                    }
                }
                if !scan.eat(']') {
                    break;
                }
            }
            _ => {
                if !scan.skip_value() {
                    break;
                }
            }
        }
        if !scan.eat(',') {
            break;
        }
    }
    (answerable, sections)
}

struct ScannedString {
    text: String,
    closed: bool,
}

struct Scanner {
    chars: Vec<char>,
    pos: usize,
}

impl Scanner {
    fn ws(&mut self) {
        while self.chars.get(self.pos).is_some_and(|c| c.is_whitespace()) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.ws();
        if self.chars.get(self.pos) == Some(&c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn literal(&mut self, word: &str) -> bool {
        self.ws();
        let n = word.chars().count();
        if self.chars.len() >= self.pos + n && self.chars[self.pos..self.pos + n].iter().copied().eq(word.chars()) {
            self.pos += n;
            true
        } else {
            false
        }
    }

    /// A JSON string from here; `closed: false` when the prefix ends inside
    /// it (an escape cut in half is left out).
    fn string(&mut self) -> Option<ScannedString> {
        if !self.eat('"') {
            return None;
        }
        let mut text = String::new();
        while let Some(&c) = self.chars.get(self.pos) {
            self.pos += 1;
            match c {
                '"' => return Some(ScannedString { text, closed: true }),
                '\\' => {
                    let Some(&e) = self.chars.get(self.pos) else { break };
                    self.pos += 1;
                    match e {
                        'n' => text.push('\n'),
                        't' => text.push('\t'),
                        'r' => text.push('\r'),
                        'b' | 'f' => {}
                        'u' => {
                            let hex: String = self.chars.get(self.pos..self.pos + 4).map(|h| h.iter().collect()).unwrap_or_default();
                            if hex.len() < 4 {
                                break;
                            }
                            self.pos += 4;
                            if let Some(ch) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                                text.push(ch);
                            }
                        }
                        other => text.push(other),
                    }
                }
                c => text.push(c),
            }
        }
        Some(ScannedString { text, closed: false })
    }

    /// Skips one complete value; false if the prefix ends inside it.
    fn skip_value(&mut self) -> bool {
        self.ws();
        match self.chars.get(self.pos) {
            Some('"') => self.string().is_some_and(|s| s.closed),
            Some('[') | Some('{') => {
                let mut depth = 0usize;
                while let Some(&c) = self.chars.get(self.pos) {
                    match c {
                        '"' => {
                            if !self.string().is_some_and(|s| s.closed) {
                                return false;
                            }
                            continue;
                        }
                        '[' | '{' => depth += 1,
                        ']' | '}' => {
                            depth -= 1;
                            if depth == 0 {
                                self.pos += 1;
                                return true;
                            }
                        }
                        _ => {}
                    }
                    self.pos += 1;
                }
                false
            }
            Some(_) => {
                let start = self.pos;
                while self.chars.get(self.pos).is_some_and(|c| !matches!(c, ',' | '}' | ']') && !c.is_whitespace()) {
                    self.pos += 1;
                }
                self.pos > start && self.pos < self.chars.len()
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strict_contract_is_read_as_is() {
        let p = parse(r#"{"answerable": true, "sections": [{"text": "Tăng 12,4%.", "cites": ["S2", "S3"]}]}"#).unwrap();
        assert!(!p.lenient);
        assert!(p.answer.answerable);
        assert_eq!(p.answer.sections[0].cites, ["S2", "S3"]);
        let none = parse(r#"{"answerable": false, "sections": []}"#).unwrap();
        assert!(!none.answer.answerable && none.answer.sections.is_empty() && !none.lenient);
    }

    #[test]
    fn other_shapes_are_read_leniently_and_said_so() {
        let fenced = "Sure:\n```json\n{\"sections\": [{\"text\": \"A.\", \"source_ids\": [\"[S4]\", 7, \"s9\"]}]}\n```";
        let p = parse(fenced).unwrap();
        assert!(p.lenient && p.answer.answerable);
        assert_eq!(p.answer.sections[0].cites, ["S4", "S7", "S9"]);
        let p = parse(r#"{"answerable": "true", "sections": [{"text": "B", "cites": "S1, S2", "quotes": ["x"]}]}"#).unwrap();
        assert_eq!(
            (p.answer.sections[0].cites.clone(), p.answer.sections[0].quote.clone()),
            (vec!["S1".into(), "S2".into()], Some("x".into()))
        );
        // Not answerable: whatever sections came with it are dropped.
        let p = parse(r#"{"answerable": false, "sections": [{"text": "Không rõ", "cites": []}]}"#).unwrap();
        assert!(!p.answer.answerable && p.answer.sections.is_empty());
    }

    #[test]
    fn what_cannot_be_read_is_an_error() {
        assert!(matches!(parse("I think it is 42."), Err(ContractError::NotJson(_))));
        assert!(matches!(parse(r#"{"answerable": true, "sections": [{"text": "a""#), Err(ContractError::NotJson(_))));
        // Answerable with nothing to say is read as not answerable.
        assert!(!parse(r#"{"answerable": true, "sections": [{"text": " ", "cites": []}]}"#).unwrap().answer.answerable);
        assert!(matches!(parse(r#"{"sections": 3}"#), Err(ContractError::Violation(_))));
    }

    #[test]
    fn the_checks_verdict_is_read_or_is_none() {
        assert_eq!(parse_verdict(r#"{"answers": false}"#), Some(false));
        assert_eq!(parse_verdict(r#"Sure: {"answers": "yes"}"#), Some(true));
        assert_eq!(parse_verdict("No."), Some(false));
        assert_eq!(parse_verdict(r#"{"answerable": true, "sections": []}"#), None);
        assert_eq!(verdict_schema()["required"], serde_json::json!(["answers"]));
    }

    #[test]
    fn the_checks_certainty_is_read_where_its_value_begins() {
        use crate::llm::{TokenLogprob, TokenLogprobs};
        let tok = |token: &str, top: &[(&str, f64)]| TokenLogprobs {
            token: token.into(),
            logprob: top.first().map_or(0.0, |t| t.1),
            top_logprobs: top.iter().map(|(t, l)| TokenLogprob { token: (*t).into(), logprob: *l }).collect(),
        };
        // As llama.cpp gave it for a cross-lingual question: " true" 0.81, " false" 0.19.
        let reply = [
            tok("{\"", &[("{\"", -0.09)]),
            tok("answers", &[("answers", -0.001)]),
            tok("\":", &[("\":", -0.0001)]),
            tok(" true", &[(" true", -0.215), (" false", -1.652), ("true", -7.19), (" \"", -8.0)]),
            tok("}", &[("}", -0.003)]),
        ];
        let p = verdict_probability(&reply).unwrap();
        let expected = (-0.215f64).exp() + (-7.19f64).exp();
        assert!((p - expected / (expected + (-1.652f64).exp())).abs() < 1e-9, "{p}");
        // No probabilities (a provider that ignores logprobs), or a reply
        // whose value is not a boolean: no certainty, the verdict decides.
        assert_eq!(verdict_probability(&[]), None);
        let odd = [tok("{\"answers\":", &[]), tok(" maybe", &[(" maybe", -0.1)])];
        assert_eq!(verdict_probability(&odd), None);
        // The chosen token counts even when the provider left it out of its top list.
        let bare = [tok("{\"answers\":", &[]), TokenLogprobs { token: "false".into(), logprob: -0.1, top_logprobs: vec![] }];
        assert_eq!(verdict_probability(&bare), Some(0.0));
    }

    #[test]
    fn the_schema_allows_only_the_prompt_ids() {
        let s = schema(&["S1".into(), "S2".into()]);
        assert_eq!(s["properties"]["sections"]["items"]["properties"]["cites"]["items"]["enum"], serde_json::json!(["S1", "S2"]));
        assert_eq!(s["required"], serde_json::json!(["answerable", "sections"]));
    }

    #[test]
    fn partial_answers_show_the_text_so_far() {
        let full = r#"{"answerable": true, "sections": [{"text": "Doanh thu \"tăng\"\n12,4%.", "cites": ["S2"]}, {"text": "Lợi nhuận", "cites": ["S3"]}]}"#;
        let mut seen = Vec::new();
        for n in 0..=full.chars().count() {
            let prefix: String = full.chars().take(n).collect();
            let (_, sections) = partial_sections(&prefix);
            // Text only grows, section by section.
            if let Some(last) = seen.last() {
                assert!(sections.len() >= *last, "{prefix}");
            }
            seen.push(sections.len());
        }
        let (answerable, sections) = partial_sections(full);
        assert_eq!(answerable, Some(true));
        let written = |text: &str, cites: &[&str]| {
            Some(ModelSection { text: text.into(), cites: cites.iter().map(|c| c.to_string()).collect(), quote: None })
        };
        assert_eq!(
            sections,
            [
                PartialSection {
                    text: "Doanh thu \"tăng\"\n12,4%.".into(),
                    closed: true,
                    written: written("Doanh thu \"tăng\"\n12,4%.", &["S2"])
                },
                PartialSection { text: "Lợi nhuận".into(), closed: true, written: written("Lợi nhuận", &["S3"]) }
            ]
        );
        // The first section closed, the second still being written: the
        // first one's cites are known already.
        let cut = r#"{"answerable": true, "sections": [{"text": "A.", "cites": ["S2", "S3"]}, {"text": "B"#;
        assert_eq!(
            partial_sections(cut).1,
            [
                PartialSection { text: "A.".into(), closed: true, written: written("A.", &["S2", "S3"]) },
                PartialSection { text: "B".into(), ..Default::default() }
            ]
        );
        let cut = r#"{"answerable": true, "sections": [{"text": "Doanh thu tă"#;
        assert_eq!(partial_sections(cut).1, [PartialSection { text: "Doanh thu tă".into(), ..Default::default() }]);
        let cut = r#"{"answerable": true, "sections": [{"text": "A.", "cites": ["S"#;
        assert_eq!(partial_sections(cut).1, [PartialSection { text: "A.".into(), ..Default::default() }]);
        assert_eq!(partial_sections(r#"{"answerable": fal"#), (None, vec![]));
        assert_eq!(partial_sections("garbage"), (None, vec![]));
    }
}

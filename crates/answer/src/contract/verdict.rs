//! The check's reply: `{"answers": bool}`, and how sure the model was.

use super::outermost_object;

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
/// This, rather than the model's greedy choice, is what the answer-or-
/// abstain decision weighs (`decision`).
pub fn verdict_probability(tokens: &[crate::llm::TokenLogprobs]) -> Option<f64> {
    boolean_probability(tokens, "answers")
}

/// P(true) over P(true) + P(false) at the token where the value of the
/// boolean `key` begins in a JSON reply, from the candidates the model
/// weighed there (the answer's `answerable`, the check's `answers`).
pub fn boolean_probability(tokens: &[crate::llm::TokenLogprobs], key: &str) -> Option<f64> {
    let mut before = String::new();
    for t in tokens {
        let word = t.token.trim().to_ascii_lowercase();
        // The value's token: the first one with text after the key and its
        // colon (not any colon: a reasoning model may write some first).
        let after_key = before.rfind(key).is_some_and(|i| before[i..].contains(':'));
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

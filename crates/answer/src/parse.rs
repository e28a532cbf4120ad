//! The model's answer: `{"sections": [{"text", "source_ids", "quotes"}]}`,
//! possibly inside a Markdown code fence or surrounded by prose.

use crate::cite::RawSection;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    #[error("the model's answer is not JSON: {0}")]
    NotJson(String),
    #[error("the model's answer has no sections")]
    NoSections,
}

#[derive(serde::Deserialize)]
struct Answer {
    #[serde(default)]
    sections: Vec<RawSection>,
}

/// Parses the model's content; tolerates ```json fences and text around
/// the object.
pub fn parse_answer(content: &str) -> Result<Vec<RawSection>, ParseError> {
    let trimmed = content.trim();
    let candidates = [Some(trimmed.to_string()), unfence(trimmed), outermost_object(trimmed)];
    let mut last_err = String::from("empty answer");
    for candidate in candidates.into_iter().flatten() {
        match serde_json::from_str::<Answer>(&candidate) {
            Ok(a) if a.sections.iter().any(|s| !s.text.trim().is_empty()) => return Ok(a.sections),
            Ok(_) => return Err(ParseError::NoSections),
            Err(e) => last_err = e.to_string(),
        }
    }
    Err(ParseError::NotJson(last_err))
}

fn unfence(s: &str) -> Option<String> {
    let start = s.find("```")?;
    let after = &s[start + 3..];
    let body_start = after.find('\n')? + 1;
    let body = &after[body_start..];
    let end = body.find("```")?;
    Some(body[..end].trim().to_string())
}

fn outermost_object(s: &str) -> Option<String> {
    let start = s.find('{')?;
    let end = s.rfind('}')?;
    (end > start).then(|| s[start..=end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_fenced_and_wrapped_json() {
        let plain = r#"{"sections":[{"text":"A.","source_ids":["chunk-1"],"quotes":["a"]}]}"#;
        assert_eq!(parse_answer(plain).unwrap()[0].source_ids, vec!["chunk-1"]);
        let fenced = format!("Here you go:\n```json\n{plain}\n```\nThanks");
        assert_eq!(parse_answer(&fenced).unwrap()[0].text, "A.");
        let wrapped = format!("Answer: {plain} -- end");
        assert_eq!(parse_answer(&wrapped).unwrap().len(), 1);
        // Missing quotes/source_ids default to empty.
        assert_eq!(parse_answer(r#"{"sections":[{"text":"B"}]}"#).unwrap()[0].quotes.len(), 0);
    }

    #[test]
    fn invalid_answers_are_errors() {
        assert!(matches!(parse_answer("I think the answer is 42."), Err(ParseError::NotJson(_))));
        assert!(matches!(parse_answer("{\"sections\": [{\"text\": \"a\""), Err(ParseError::NotJson(_))));
        assert_eq!(parse_answer(r#"{"sections":[]}"#), Err(ParseError::NoSections));
    }
}

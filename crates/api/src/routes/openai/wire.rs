//! OpenAI's wire shapes: the chat request as clients send it (many fields
//! this API ignores: sampling settings are the answerer's), and errors as
//! `{"error": {"message", "type", "code", "param"}}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rag_events::ConversationTurn;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{MAX_MESSAGES, MAX_TOTAL_CHARS};
use crate::error::ApiError;

#[derive(Debug, Deserialize)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<ChatMessageIn>,
    #[serde(default)]
    pub stream: bool,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// rag-engine's own: whether the reply's text ends with its sources
    /// (absent: the key's setting, on by default).
    #[serde(default)]
    pub sources_in_content: Option<bool>,
}

#[derive(Debug, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

#[derive(Debug, Deserialize)]
pub struct ChatMessageIn {
    pub role: String,
    #[serde(default)]
    pub content: Content,
}

/// A message's content: text, or parts of which the text ones are read
/// (`[{"type": "text", "text": "..."}]`).
#[derive(Debug, Default, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<Part>),
    #[default]
    None,
}

#[derive(Debug, Deserialize)]
pub struct Part {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
}

impl Content {
    fn text(&self) -> String {
        match self {
            Content::Text(t) => t.clone(),
            Content::Parts(parts) => {
                parts.iter().filter(|p| p.kind == "text").filter_map(|p| p.text.as_deref()).collect::<Vec<_>>().join("\n")
            }
            Content::None => String::new(),
        }
    }
}

fn invalid(code: &'static str, message: impl Into<String>) -> OpenAiError {
    OpenAiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", code, message)
}

impl ChatRequest {
    pub fn include_usage(&self) -> bool {
        self.stream_options.as_ref().is_some_and(|o| o.include_usage)
    }

    /// The question (the last message, from the user) and the turns before
    /// it. System and developer messages are left out: the instructions
    /// are the answerer's own, so a client cannot loosen its grounding.
    pub fn question_and_history(&self) -> Result<(String, Vec<ConversationTurn>), OpenAiError> {
        if self.messages.is_empty() {
            return Err(invalid("empty_messages", "`messages` must hold at least one user message"));
        }
        if self.messages.len() > MAX_MESSAGES {
            return Err(invalid(
                "too_many_messages",
                format!("`messages` holds {} messages; at most {MAX_MESSAGES} are accepted", self.messages.len()),
            ));
        }
        let mut total = 0;
        let mut turns = Vec::with_capacity(self.messages.len());
        for (i, m) in self.messages.iter().enumerate() {
            let text = m.content.text();
            total += text.chars().count();
            if text.chars().any(|c| c == '\0') {
                return Err(invalid("invalid_content", format!("messages[{i}] contains a NUL character")));
            }
            match m.role.as_str() {
                "user" | "assistant" => turns.push(ConversationTurn { role: m.role.clone(), content: text.trim().to_string() }),
                "system" | "developer" | "tool" | "function" => {}
                other => {
                    return Err(invalid("invalid_role", format!("messages[{i}] has role `{other}`; expected user, assistant or system")))
                }
            }
        }
        if total > MAX_TOTAL_CHARS {
            return Err(invalid(
                "messages_too_long",
                format!("the messages hold {total} characters; at most {MAX_TOTAL_CHARS} are accepted"),
            ));
        }
        let Some(last) = turns.pop().filter(|t| t.role == "user") else {
            return Err(invalid("no_question", "the last message must be the user's question"));
        };
        let question = crate::question::checked_question(&last.content)
            .map_err(|refusal| invalid("invalid_question", format!("the question {refusal}")))?
            .to_string();
        turns.retain(|t| !t.content.is_empty());
        Ok((question, turns))
    }
}

/// An error as OpenAI's clients read it.
#[derive(Debug)]
pub struct OpenAiError {
    status: StatusCode,
    kind: &'static str,
    code: String,
    message: String,
    retry_after: Option<std::time::Duration>,
}

impl OpenAiError {
    pub fn new(status: StatusCode, kind: &'static str, code: &str, message: impl Into<String>) -> Self {
        OpenAiError { status, kind, code: code.to_string(), message: message.into(), retry_after: None }
    }

    pub fn body(&self) -> Value {
        json!({"error": {"message": self.message, "type": self.kind, "code": self.code, "param": null}})
    }
}

impl From<ApiError> for OpenAiError {
    fn from(e: ApiError) -> Self {
        let (kind, code) = match e.status {
            StatusCode::UNAUTHORIZED => ("invalid_request_error", "invalid_api_key"),
            StatusCode::FORBIDDEN => ("permission_error", e.code),
            StatusCode::NOT_FOUND => ("invalid_request_error", "model_not_found"),
            StatusCode::TOO_MANY_REQUESTS => ("rate_limit_error", e.code),
            s if s.is_server_error() => ("server_error", e.code),
            _ => ("invalid_request_error", e.code),
        };
        OpenAiError { status: e.status, kind, code: code.to_string(), message: e.message, retry_after: e.retry_after }
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if let Some(after) = self.retry_after {
            if let Ok(v) = after.as_secs().max(1).to_string().parse() {
                response.headers_mut().insert(axum::http::header::RETRY_AFTER, v);
            }
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(v: Value) -> ChatRequest {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_last_user_message_is_the_question_and_the_rest_its_history() {
        let r = request(json!({"model": "m", "temperature": 0.2, "messages": [
            {"role": "system", "content": "You are a pirate."},
            {"role": "user", "content": "Doanh thu năm 2023?"},
            {"role": "assistant", "content": "1.245,6 tỷ đồng. [1]"},
            {"role": "user", "content": [{"type": "text", "text": "Còn năm 2022"}, {"type": "image_url", "image_url": {"url": "x"}}]},
        ]}));
        let (q, h) = r.question_and_history().unwrap();
        assert_eq!(q, "Còn năm 2022");
        assert_eq!(h.iter().map(|t| t.role.as_str()).collect::<Vec<_>>(), ["user", "assistant"]);
        assert!(!r.stream && !r.include_usage());
    }

    #[test]
    fn bad_message_lists_are_refused_with_a_reason() {
        for (v, code) in [
            (json!({"model": "m", "messages": []}), "empty_messages"),
            (json!({"model": "m", "messages": [{"role": "assistant", "content": "hi"}]}), "no_question"),
            (json!({"model": "m", "messages": [{"role": "user", "content": ""}]}), "invalid_question"),
            (json!({"model": "m", "messages": [{"role": "wizard", "content": "hi"}]}), "invalid_role"),
            (
                json!({"model": "m", "messages": (0..201).map(|_| json!({"role": "user", "content": "a"})).collect::<Vec<_>>()}),
                "too_many_messages",
            ),
            (json!({"model": "m", "messages": [{"role": "user", "content": "x".repeat(8001)}]}), "invalid_question"),
        ] {
            let e = request(v).question_and_history().unwrap_err();
            assert_eq!((e.status, e.code.as_str()), (StatusCode::BAD_REQUEST, code));
            assert_eq!(e.body()["error"]["type"], "invalid_request_error");
        }
    }
}

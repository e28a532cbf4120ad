//! Event types, their schemas and their topics.

use std::fmt;

/// A released version of one event's schema, kept forever so the
/// compatibility test can prove the current schema still reads it.
#[derive(Debug, Clone, Copy)]
pub struct ReleasedSchema {
    pub event: &'static str,
    pub version: u32,
    pub text: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/embedded_schemas.rs"));

/// Every event of the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventType {
    DocumentUploaded,
    DocumentParsed,
    DocumentChunked,
    DocumentIngested,
    QuestionAsked,
    AnswerProduced,
    DocumentDeleted,
}

impl EventType {
    pub const ALL: [EventType; 7] = [
        EventType::DocumentUploaded,
        EventType::DocumentParsed,
        EventType::DocumentChunked,
        EventType::DocumentIngested,
        EventType::QuestionAsked,
        EventType::AnswerProduced,
        EventType::DocumentDeleted,
    ];

    /// The record name, as in the schema and the `event-type` header.
    pub fn name(self) -> &'static str {
        match self {
            EventType::DocumentUploaded => "DocumentUploaded",
            EventType::DocumentParsed => "DocumentParsed",
            EventType::DocumentChunked => "DocumentChunked",
            EventType::DocumentIngested => "DocumentIngested",
            EventType::QuestionAsked => "QuestionAsked",
            EventType::AnswerProduced => "AnswerProduced",
            EventType::DocumentDeleted => "DocumentDeleted",
        }
    }

    /// The schema file stem under `schemas/`.
    pub fn schema_stem(self) -> &'static str {
        match self {
            EventType::DocumentUploaded => "document_uploaded",
            EventType::DocumentParsed => "document_parsed",
            EventType::DocumentChunked => "document_chunked",
            EventType::DocumentIngested => "document_ingested",
            EventType::QuestionAsked => "question_asked",
            EventType::AnswerProduced => "answer_produced",
            EventType::DocumentDeleted => "document_deleted",
        }
    }

    /// Topic name without the deployment prefix.
    pub fn topic_base(self) -> &'static str {
        match self {
            EventType::DocumentUploaded => "documents.uploaded",
            EventType::DocumentParsed => "documents.parsed",
            EventType::DocumentChunked => "documents.chunked",
            EventType::DocumentIngested => "documents.ingested",
            EventType::QuestionAsked => "questions.asked",
            EventType::AnswerProduced => "answers.produced",
            EventType::DocumentDeleted => "documents.deleted",
        }
    }

    /// Topics an operator replays to rebuild or re-chunk; they never expire.
    pub fn is_replay_source(self) -> bool {
        matches!(self, EventType::DocumentUploaded | EventType::DocumentParsed)
    }

    pub fn from_name(name: &str) -> Option<EventType> {
        EventType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The current schema text, compiled in from `schemas/<stem>.avsc`.
    pub fn current_schema_text(self) -> &'static str {
        CURRENT
            .iter()
            .find(|(stem, _)| *stem == self.schema_stem())
            .map(|(_, text)| *text)
            // build.rs embeds every file in schemas/; a missing one is a build defect.
            .unwrap_or_else(|| panic!("schemas/{}.avsc is not embedded", self.schema_stem()))
    }

    /// Released versions of this event's schema, oldest first.
    pub fn released_schemas(self) -> impl Iterator<Item = &'static ReleasedSchema> {
        RELEASED.iter().filter(move |r| r.event == self.schema_stem())
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Topic names of one deployment. A prefix lets several deployments (or
/// test runs) share one broker without seeing each other's events.
#[derive(Debug, Clone, Default)]
pub struct Topics {
    prefix: String,
}

impl Topics {
    pub fn new(prefix: impl Into<String>) -> Self {
        Topics { prefix: prefix.into() }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn of(&self, event: EventType) -> String {
        format!("{}{}", self.prefix, event.topic_base())
    }

    /// Dead-letter topic of a topic: `<topic>.dlq`.
    pub fn dlq_of(topic: &str) -> String {
        format!("{topic}.dlq")
    }

    /// The event type a topic carries, if it is one of ours.
    pub fn event_of(&self, topic: &str) -> Option<EventType> {
        let base = topic.strip_prefix(self.prefix.as_str())?;
        EventType::ALL.into_iter().find(|t| t.topic_base() == base)
    }

    /// Every event topic followed by its dead-letter topic.
    pub fn all(&self) -> Vec<String> {
        EventType::ALL
            .iter()
            .flat_map(|t| {
                let topic = self.of(*t);
                [Topics::dlq_of(&topic), topic]
            })
            .collect()
    }
}

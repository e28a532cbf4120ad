//! The contract between the stage runner and a stage: what a stage
//! receives ([`Inbound`]), what it answers ([`Outcome`], [`ProcessError`]),
//! where a partition resumes ([`StartAt`]) and who it is ([`StageSpec`]).

use std::future::Future;

use rdkafka::message::{Headers, Message, OwnedMessage};

/// A consumed record, detached from the consumer.
#[derive(Debug, Clone)]
pub struct Inbound {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub payload: Option<Vec<u8>>,
    pub headers: Vec<(String, Vec<u8>)>,
    /// Producer timestamp, milliseconds since the epoch, when known.
    pub timestamp_ms: Option<i64>,
}

impl Inbound {
    pub(crate) fn from_owned(m: &OwnedMessage) -> Self {
        let headers =
            m.headers().map(|h| h.iter().map(|h| (h.key.to_string(), h.value.unwrap_or_default().to_vec())).collect()).unwrap_or_default();
        Inbound {
            topic: m.topic().to_string(),
            partition: m.partition(),
            offset: m.offset(),
            key: m.key().map(<[u8]>::to_vec),
            payload: m.payload().map(<[u8]>::to_vec),
            headers,
            timestamp_ms: m.timestamp().to_millis(),
        }
    }

    pub fn key_str(&self) -> Option<&str> {
        self.key.as_deref().and_then(|k| std::str::from_utf8(k).ok())
    }

    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_slice())
    }

    pub fn header_str(&self, name: &str) -> Option<String> {
        self.header(name).map(|v| String::from_utf8_lossy(v).into_owned())
    }
}

/// What happened to a message the processor accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Its effect is now durable.
    Applied,
    /// It had been applied before (a re-delivery); nothing changed.
    Duplicate,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum ProcessError {
    /// May succeed later: retried with backoff, then the stage stops
    /// without storing the offset, so a restart resumes at this message.
    #[error("transient: {0}")]
    Transient(String),
    /// Will never succeed: the message goes to `<topic>.dlq`.
    #[error("permanent ({code}): {reason}")]
    Permanent { code: String, reason: String },
}

impl ProcessError {
    pub fn permanent(code: impl Into<String>, reason: impl Into<String>) -> Self {
        ProcessError::Permanent { code: code.into(), reason: reason.into() }
    }
}

/// Where a partition resumes after it is assigned to this instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    /// Kafka's committed offset decides (Kafka -> Kafka stages).
    Committed,
    /// The processor's own store says so (Kafka -> Postgres stages): the
    /// next offset to process.
    Offset(i64),
    /// The processor's store has applied everything before this offset, but
    /// the stage produces its output events after that store commits: a
    /// crash in between leaves an applied record whose output is missing.
    /// Resume at Kafka's committed offset when it is lower (it only moves
    /// once the output is delivered); the re-delivered records are
    /// recognised as applied, and only their output is produced again.
    AppliedBefore(i64),
    /// The processor's store has nothing yet: read from the beginning.
    Beginning,
}

/// One stage's effect. Implementations are the thin wiring between the bus
/// and the pure crates.
pub trait Processor: Send + Sync + 'static {
    /// Processes one message. `Ok` means its effect is durable.
    fn process(&self, msg: &Inbound) -> impl Future<Output = Result<Outcome, ProcessError>> + Send;

    /// Called once a message is in the dead-letter topic, e.g. to mark the
    /// document failed and, for database-owned offsets, to move past it.
    fn dead_lettered(&self, _msg: &Inbound, _code: &str, _reason: &str) -> impl Future<Output = Result<(), ProcessError>> + Send {
        async { Ok(()) }
    }

    /// Where a newly assigned partition resumes. Called for every partition
    /// when it is assigned, before anything is fetched from it, so a stage
    /// whose offsets live in its own store is positioned from there even
    /// when no record is waiting.
    fn start_at(&self, _topic: &str, _partition: i32) -> impl Future<Output = Result<StartAt, ProcessError>> + Send {
        async { Ok(StartAt::Committed) }
    }
}

/// A stage's identity on the bus.
#[derive(Debug, Clone)]
pub struct StageSpec {
    /// Stage name for logs, metrics and dead-letter headers.
    pub name: String,
    /// Consumer group (before the deployment prefix).
    pub group: String,
    pub topics: Vec<String>,
}

//! The contract between the stage runner and a stage: what a stage
//! receives ([`Inbound`]), what it answers ([`Outcome`], [`ProcessError`]),
//! where a partition resumes ([`StartAt`]) and who it is ([`StageIdentity`]).

use std::future::Future;
use std::sync::Arc;

use rag_events::EventType;

pub use super::failure_code::FailureCode;

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Its effect is now durable.
    Applied,
    /// It had been applied before (a re-delivery); nothing changed.
    Duplicate,
    /// The input's failure is recorded durably (e.g. its document marked
    /// failed), and the input goes to `<topic>.dlq` with `code` for an
    /// operator to inspect. It does not count toward the dead-letter limit:
    /// the input is at fault, not the stage, and a user who uploads many
    /// such inputs must not be able to stop the stage for everyone.
    DeadLetter { code: FailureCode, reason: String },
}

/// Any error, kept whole as the source of a [`ProcessError`].
pub type ErrorSource = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// A failed attempt, classified: the runner retries transient ones and
/// dead-letters permanent ones. The error that caused it stays attached as
/// its [`std::error::Error::source`], so logs show the whole chain.
#[derive(Debug, Clone)]
pub enum ProcessError {
    /// May succeed later: retried with backoff, then the stage stops
    /// without storing the offset, so a restart resumes at this message.
    Transient { reason: String, source: Option<ErrorSource> },
    /// Will never succeed: the message goes to `<topic>.dlq` with `code`.
    Permanent { code: FailureCode, reason: String, source: Option<ErrorSource> },
}

impl ProcessError {
    pub fn transient(reason: impl Into<String>) -> Self {
        ProcessError::Transient { reason: reason.into(), source: None }
    }

    pub fn permanent(code: FailureCode, reason: impl Into<String>) -> Self {
        ProcessError::Permanent { code, reason: reason.into(), source: None }
    }

    /// Transient, caused by `source` (its message becomes the reason).
    pub fn transient_from<E: std::error::Error + Send + Sync + 'static>(source: E) -> Self {
        ProcessError::Transient { reason: source.to_string(), source: Some(Arc::new(source)) }
    }

    /// Permanent with `code`, caused by `source`.
    pub fn permanent_from<E: std::error::Error + Send + Sync + 'static>(code: FailureCode, source: E) -> Self {
        ProcessError::Permanent { code, reason: source.to_string(), source: Some(Arc::new(source)) }
    }

    pub fn is_transient(&self) -> bool {
        matches!(self, ProcessError::Transient { .. })
    }

    /// The dead-letter code (`None` for a transient error).
    pub fn code(&self) -> Option<FailureCode> {
        match self {
            ProcessError::Transient { .. } => None,
            ProcessError::Permanent { code, .. } => Some(*code),
        }
    }

    pub fn reason(&self) -> &str {
        match self {
            ProcessError::Transient { reason, .. } | ProcessError::Permanent { reason, .. } => reason,
        }
    }

    /// The reason followed by every cause below it that adds something
    /// (`a: b: c`), for logs and dead-letter headers.
    pub fn chain(&self) -> String {
        let mut out = self.reason().to_string();
        let mut next = std::error::Error::source(self);
        while let Some(e) = next {
            let text = e.to_string();
            if !out.contains(&text) {
                out.push_str(": ");
                out.push_str(&text);
            }
            next = e.source();
        }
        out
    }
}

impl std::fmt::Display for ProcessError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProcessError::Transient { reason, .. } => write!(f, "transient: {reason}"),
            ProcessError::Permanent { code, reason, .. } => write!(f, "permanent ({code}): {reason}"),
        }
    }
}

impl std::error::Error for ProcessError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProcessError::Transient { source, .. } | ProcessError::Permanent { source, .. } => {
                source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
            }
        }
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

/// Who a stage is on the bus: its name (logs, metrics, dead-letter
/// headers), its consumer group (before the deployment prefix), the events
/// it consumes (their topics are its subscriptions) and those it produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageIdentity {
    pub name: &'static str,
    pub group: String,
    pub consumes: Vec<EventType>,
    pub produces: Vec<EventType>,
    /// Where the stage's positions are authoritative.
    pub positions: Positions,
    /// Records the stage may have in flight at once, whatever the
    /// configured bound (`None`: the configured bound). A stage whose
    /// topics carry events that write the same rows says `Some(1)`.
    pub max_in_flight: Option<usize>,
}

/// Who owns a stage's consumer positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Positions {
    /// Kafka's committed offsets (Kafka -> Kafka stages: the output is
    /// produced before the input's offset is stored).
    Kafka,
    /// The stage's own Postgres table, written in the effect's transaction
    /// (Kafka -> Postgres stages); Kafka's commits only mirror it.
    Postgres,
}

/// One stage: who it is and what it does with a record. The runner takes
/// it whole ([`crate::stage::run_stage`]); implementations are the thin
/// wiring between the bus and the pure crates.
pub trait Stage: Send + Sync + 'static {
    /// The stage's own error; one conversion decides transient or
    /// permanent (and keeps the error as the source).
    type Error: Into<ProcessError> + Send;

    fn identity(&self) -> StageIdentity;

    /// Processes one message. `Ok` means its effect is durable.
    fn process(&self, msg: &Inbound) -> impl Future<Output = Result<Outcome, Self::Error>> + Send;

    /// Called once a message is in the dead-letter topic, e.g. to mark the
    /// document failed and, for database-owned offsets, to move past it.
    fn dead_lettered(&self, _msg: &Inbound, _code: FailureCode, _reason: &str) -> impl Future<Output = Result<(), Self::Error>> + Send {
        async { Ok(()) }
    }

    /// Where a newly assigned partition resumes. Called for every partition
    /// when it is assigned, before anything is fetched from it, so a stage
    /// whose offsets live in its own store is positioned from there even
    /// when no record is waiting.
    fn start_at(&self, _topic: &str, _partition: i32) -> impl Future<Output = Result<StartAt, Self::Error>> + Send {
        async { Ok(StartAt::Committed) }
    }

    /// Called once when the runner starts, before anything is fetched: a
    /// stage registers its own metric series at zero here (the runner
    /// registers the per-topic ones), so a fresh process exports them.
    fn started(&self) {}
}

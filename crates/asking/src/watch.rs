//! Waiting for an answer: the projected assistant message, and meanwhile
//! the text as the answerer writes it. Every door waits the same way: it
//! reads the message (the answer is there once projected) and, between
//! reads, listens for the answer's deltas at most one poll interval; the
//! projector's note that the answer is projected ends the wait at once.

use std::sync::Arc;
use std::time::Duration;

use rag_store::messages::{self, AnswerDelta, MessageRow, MessageStatus};
use rag_store::sqlx::postgres::PgListener;
use rag_store::sqlx::PgPool;
use rag_store::StoreError;
use tokio::sync::broadcast;
use tokio::time::Instant;
use uuid::Uuid;

/// Where the answer's deltas are heard.
pub enum Deltas {
    /// A listener of this process's own on the answer-delta channel
    /// (`rag-engine ask`, the evaluator).
    Listener(Box<PgListener>),
    /// A process's shared listener (the API: one connection for every
    /// request).
    Broadcast(broadcast::Receiver<Arc<AnswerDelta>>),
    /// None: only the message is read.
    None,
}

impl Deltas {
    /// A listener on the answer-delta channel, listening before the
    /// question is asked so that no word is missed.
    pub async fn listen(pool: &PgPool) -> Result<Deltas, StoreError> {
        let mut listener = PgListener::connect_with(pool).await?;
        listener.listen(messages::ANSWER_DELTAS_CHANNEL).await?;
        Ok(Deltas::Listener(Box::new(listener)))
    }

    /// The next delta heard within `wait` (of any answer), or None.
    async fn within(&mut self, wait: Duration) -> Option<Arc<AnswerDelta>> {
        match self {
            Deltas::Listener(l) => {
                let until = Instant::now() + wait;
                match tokio::time::timeout(wait, l.recv()).await {
                    Ok(Ok(n)) => serde_json::from_str(n.payload()).ok().map(Arc::new),
                    Ok(Err(e)) => {
                        // The connection is lost (the listener reconnects on
                        // the next call): the rest of the wait, not a spin.
                        tracing::debug!(error = %e, "listening for answer deltas");
                        tokio::time::sleep_until(until).await;
                        None
                    }
                    Err(_) => None,
                }
            }
            Deltas::Broadcast(rx) => match tokio::time::timeout(wait, rx.recv()).await {
                Ok(Ok(d)) => Some(d),
                Ok(Err(broadcast::error::RecvError::Closed)) => {
                    // The shared listener is gone (shutting down): read the message only.
                    tokio::time::sleep(wait).await;
                    None
                }
                Ok(Err(broadcast::error::RecvError::Lagged(_))) | Err(_) => None,
            },
            Deltas::None => {
                tokio::time::sleep(wait).await;
                None
            }
        }
    }
}

/// What happened to the answer being watched.
#[derive(Debug)]
pub enum Watched {
    /// Its text so far (or the sources it is read from).
    Delta(Arc<AnswerDelta>),
    /// It is projected: done or failed.
    Answered(Box<MessageRow>),
    /// Not answered before the deadline (it is still answered later, and
    /// shows in its conversation).
    TimedOut,
}

/// An answer being waited for.
pub struct AnswerWatch {
    pool: PgPool,
    workspace: String,
    message: Uuid,
    deltas: Deltas,
    deadline: Instant,
    poll: Duration,
}

impl AnswerWatch {
    /// Watches the assistant message `message` of `workspace` for at most
    /// `timeout`, reading it every `poll` at least.
    pub fn new(pool: PgPool, workspace: &str, message: Uuid, deltas: Deltas, timeout: Duration, poll: Duration) -> AnswerWatch {
        AnswerWatch { pool, workspace: workspace.to_string(), message, deltas, deadline: Instant::now() + timeout, poll }
    }

    /// The next thing that happens to the answer: a delta of it, the answer
    /// itself, or the deadline. A door may select on it beside its client
    /// going away: cancelled, it loses at most a delta being received (the
    /// next one holds the whole text so far) and never the answer, which
    /// is read from the message.
    pub async fn next(&mut self) -> Result<Watched, StoreError> {
        // Read at once, then when the projector says this answer is
        // projected or a poll interval went by; not on other answers'
        // deltas (a shared listener hears every answer of the process).
        let mut read_now = true;
        let mut next_read = Instant::now();
        loop {
            if read_now || Instant::now() >= next_read {
                if let Some(row) = messages::get(&self.pool, &self.workspace, self.message).await? {
                    if row.status != MessageStatus::Pending {
                        return Ok(Watched::Answered(Box::new(row)));
                    }
                }
                read_now = false;
                next_read = Instant::now() + self.poll;
            }
            if Instant::now() >= self.deadline {
                return Ok(Watched::TimedOut);
            }
            let wait = next_read.saturating_duration_since(Instant::now()).min(self.deadline.saturating_duration_since(Instant::now()));
            if let Some(d) = self.deltas.within(wait).await {
                if d.message_id == self.message && d.workspace_id == self.workspace {
                    if d.projected {
                        read_now = true;
                    } else {
                        return Ok(Watched::Delta(d));
                    }
                }
            }
        }
    }

    /// Where the deltas were heard, for the next answer (a listener kept
    /// for a whole run).
    pub fn into_deltas(self) -> Deltas {
        self.deltas
    }

    /// Waits for the answer, deltas aside: the message, or None at the deadline.
    pub async fn answer(&mut self) -> Result<Option<MessageRow>, StoreError> {
        loop {
            match self.next().await? {
                Watched::Answered(row) => return Ok(Some(*row)),
                Watched::TimedOut => return Ok(None),
                Watched::Delta(_) => {}
            }
        }
    }
}

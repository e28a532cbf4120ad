//! Answers being written, for the event streams: one Postgres LISTEN per
//! API process on the answer-delta channel, fanned out to every open
//! conversation stream. Deltas are ephemeral (see docs/answers.md): a
//! stream that misses some still gets the answer from the read model.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rag_store::messages::{AnswerDelta, ANSWER_DELTAS_CHANNEL};
use rag_store::sqlx::postgres::PgListener;
use rag_store::sqlx::PgPool;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Deltas a slow stream may fall behind by before it skips some (it then
/// shows the next one: each delta holds the whole text so far).
const BACKLOG: usize = 256;

pub struct DeltaHub {
    tx: broadcast::Sender<Arc<AnswerDelta>>,
    started: OnceLock<()>,
}

impl Default for DeltaHub {
    fn default() -> Self {
        DeltaHub { tx: broadcast::channel(BACKLOG).0, started: OnceLock::new() }
    }
}

impl DeltaHub {
    /// Deltas from now on; the first call starts listening.
    pub fn subscribe(&self, pool: &PgPool, shutdown: &CancellationToken) -> broadcast::Receiver<Arc<AnswerDelta>> {
        self.started.get_or_init(|| {
            tokio::spawn(listen(pool.clone(), self.tx.clone(), shutdown.clone()));
        });
        self.tx.subscribe()
    }
}

async fn listen(pool: PgPool, tx: broadcast::Sender<Arc<AnswerDelta>>, shutdown: CancellationToken) {
    loop {
        match PgListener::connect_with(&pool).await {
            Ok(mut listener) => match listener.listen(ANSWER_DELTAS_CHANNEL).await {
                Ok(()) => loop {
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        n = listener.recv() => match n {
                            Ok(n) => match serde_json::from_str::<AnswerDelta>(n.payload()) {
                                Ok(d) => {
                                    // No subscriber is not an error: nobody is watching.
                                    let _ = tx.send(Arc::new(d));
                                }
                                Err(e) => tracing::debug!(error = %e, "an answer delta that does not parse"),
                            },
                            Err(e) => {
                                tracing::warn!(error = %e, "listening for answer deltas; reconnecting");
                                break;
                            }
                        },
                    }
                },
                Err(e) => tracing::warn!(error = %e, "LISTEN for answer deltas failed; retrying"),
            },
            Err(e) => tracing::warn!(error = %e, "connecting to listen for answer deltas; retrying"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

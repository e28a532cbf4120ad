//! The answer's text so far, sent as it grows (ephemeral deltas; the event
//! stays the record).

use rag_answer::question::AnswerStream;
use rag_answer::{SourceChunk, StreamedSection};
use rag_store::messages;
use uuid::Uuid;

/// At most one delta per this long (plus one whenever a section is added
/// or closes): enough for text to flow, few enough notifications.
const DELTA_EVERY: std::time::Duration = std::time::Duration::from_millis(120);

/// Sends the answer's text so far as it grows ([`messages::AnswerDelta`]
/// notifications): the model's callback only queues a snapshot (at most
/// one per [`DELTA_EVERY`], and one whenever a section is added or
/// closes); a task sends them in order.
pub(super) struct DeltaSender {
    tx: tokio::sync::mpsc::UnboundedSender<messages::AnswerDelta>,
    task: tokio::task::JoinHandle<()>,
    template: messages::AnswerDelta,
    /// Shared by the text's deltas and the sources' (one order for both).
    seq: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl DeltaSender {
    pub(super) fn start(pool: rag_store::sqlx::PgPool, ws: &str, conversation: Uuid, message: Uuid) -> Self {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<messages::AnswerDelta>();
        let task = tokio::spawn(async move {
            while let Some(delta) = rx.recv().await {
                if let Err(e) = messages::notify_answer_delta(&pool, &delta).await {
                    // Deltas are a courtesy: the answer itself is the event.
                    tracing::debug!(error = %e, "sending an answer delta");
                }
            }
        });
        let template = messages::AnswerDelta {
            workspace_id: ws.to_string(),
            conversation_id: conversation,
            message_id: message,
            seq: 0,
            from: 0,
            sections: vec![],
            sources: vec![],
            restart: false,
            confirmed: 0,
            projected: false,
        };
        DeltaSender { tx, task, template, seq: Default::default() }
    }

    /// Says at once which documents and pages the model is shown (the
    /// page shows them before the first words).
    pub(super) fn sources(&self, sources: Vec<messages::DeltaSource>) {
        if sources.is_empty() {
            return;
        }
        let seq = self.seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let _ = self.tx.send(messages::AnswerDelta { seq, sources, ..self.template.clone() });
    }

    /// The sender of the text so far: `restart` says the part being written
    /// began again (`rag_answer::question::taken_back`); such a delta goes at once, also with
    /// nothing written yet. `confirmed`: how many of the sections are final
    /// ([`messages::AnswerDelta::confirmed`]); a delta that confirms more
    /// goes at once too.
    fn callback(&self) -> impl FnMut(&[StreamedSection], bool, usize) + Send + 'static {
        let tx = self.tx.clone();
        let template = self.template.clone();
        let seq = self.seq.clone();
        let mut last_sent: Option<std::time::Instant> = None;
        let mut last_shape: (usize, usize, usize) = (0, 0, 0);
        move |sections: &[StreamedSection], restart: bool, confirmed: usize| {
            let shape = (sections.len(), sections.iter().filter(|s| s.closed).count(), confirmed);
            let due = last_sent.is_none_or(|t| t.elapsed() >= DELTA_EVERY);
            if !restart && (sections.is_empty() || !(due || shape != last_shape)) {
                return;
            }
            last_shape = shape;
            last_sent = Some(std::time::Instant::now());
            let delta = messages::AnswerDelta {
                seq: seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                sections: sections
                    .iter()
                    .map(|s| messages::DeltaSection {
                        text: s.text.clone(),
                        closed: s.closed,
                        citations: s
                            .citations
                            .iter()
                            .map(|c| messages::DeltaCitation {
                                document_id: c.document_id.clone(),
                                page_idx: c.page_idx,
                                char_start: c.char_start,
                                char_end: c.char_end,
                                snippet_preview: c.snippet_preview.clone(),
                                revision: c.revision,
                            })
                            .collect(),
                    })
                    .collect(),
                restart,
                confirmed,
                ..template.clone()
            };
            let _ = tx.send(delta);
        }
    }

    /// The answer's stream: its sources and its text so far, as deltas.
    pub(super) fn stream(&self) -> impl AnswerStream + '_ {
        DeltaStream { deltas: self, send: self.callback() }
    }

    pub(super) async fn finish(self) {
        drop(self.tx);
        let _ = self.task.await;
    }
}

/// [`DeltaSender`] as the answer's stream.
struct DeltaStream<'a, F> {
    deltas: &'a DeltaSender,
    send: F,
}

impl<F: FnMut(&[StreamedSection], bool, usize) + Send> AnswerStream for DeltaStream<'_, F> {
    fn sources(&mut self, sources: &[SourceChunk]) {
        self.deltas.sources(super::sources::sources_read(sources));
    }

    fn sections(&mut self, sections: &[StreamedSection], restart: bool, confirmed: usize) {
        (self.send)(sections, restart, confirmed);
    }
}

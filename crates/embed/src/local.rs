//! The in-process encoder behind one queue.
//!
//! Why a queue: the indexer runs one document per partition at a time, so
//! several documents may be embedded at once. Each call used to start the
//! encoder's threads on its own: two calls on two cores ran four compute
//! threads fighting over the cores and their caches. Here one worker
//! thread takes every passage request waiting when it is free, encodes
//! them as one batch (across documents) with the encoder's threads, and
//! answers each caller with its own vectors: the encoder never runs twice
//! at once for passages. (With two partitions and a document's I/O shorter
//! than its encoding, a request seldom waits: the gain measured was the
//! end of the oversubscription, docs/performance.md.)
//!
//! Queries do not queue: a question is a handful of word pieces and must
//! not wait behind a batch of documents (the retriever's latency), so they
//! are encoded on the caller's blocking thread as before.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc;
use std::sync::Arc;

use rag_bert::SentenceEncoder;

use crate::EmbedError;

/// At most this many texts in one batch: bounds the worker's memory when
/// many callers are waiting (the rest wait for the next batch).
const MAX_BATCH_TEXTS: usize = 512;

type Reply = tokio::sync::oneshot::Sender<Result<Vec<Vec<f32>>, EmbedError>>;

struct Job {
    texts: Vec<String>,
    reply: Reply,
}

/// Cheap to clone: every clone feeds the same worker.
#[derive(Clone)]
pub(crate) struct LocalEncoder {
    encoder: Arc<SentenceEncoder>,
    jobs: mpsc::Sender<Job>,
}

impl std::fmt::Debug for LocalEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEncoder").field("encoder", &self.encoder).finish_non_exhaustive()
    }
}

impl LocalEncoder {
    /// Starts the worker thread; it stops when the last clone is dropped.
    pub(crate) fn start(encoder: SentenceEncoder) -> std::io::Result<Self> {
        let encoder = Arc::new(encoder);
        let (jobs, queue) = mpsc::channel();
        let worker = encoder.clone();
        std::thread::Builder::new().name("rag-encoder".into()).spawn(move || work(&worker, &queue))?;
        Ok(LocalEncoder { encoder, jobs })
    }

    pub(crate) fn encoder(&self) -> &SentenceEncoder {
        &self.encoder
    }

    /// Passages: through the queue, batched with whatever else is waiting.
    pub(crate) async fn encode_passages(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.jobs.send(Job { texts, reply }).map_err(|_| EmbedError::Transient("the encoder worker has stopped".into()))?;
        answer.await.map_err(|_| EmbedError::Transient("the encoder worker dropped the request".into()))?
    }

    /// Queries: on the caller's blocking thread, never behind a batch.
    pub(crate) async fn encode_queries(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encoder = self.encoder.clone();
        tokio::task::spawn_blocking(move || encode(&encoder, &texts))
            .await
            .map_err(|e| EmbedError::Transient(format!("encoder task: {e}")))?
    }
}

fn encode(encoder: &SentenceEncoder, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    match std::panic::catch_unwind(AssertUnwindSafe(|| encoder.encode(&refs))) {
        Ok(Ok(vectors)) => Ok(vectors),
        // A text the tokenizer refuses will be refused again.
        Ok(Err(e)) => Err(EmbedError::Permanent(e.to_string())),
        Err(_) => Err(EmbedError::Transient("the encoder panicked".into())),
    }
}

/// The worker: waits for a request, takes every other one waiting (up to
/// [`MAX_BATCH_TEXTS`]), encodes them together, answers each.
fn work(encoder: &SentenceEncoder, queue: &mpsc::Receiver<Job>) {
    let mut held: Option<Job> = None;
    loop {
        let first = match held.take() {
            Some(job) => job,
            None => match queue.recv() {
                Ok(job) => job,
                Err(_) => return,
            },
        };
        let mut batch = vec![first];
        let mut count = batch[0].texts.len();
        while count < MAX_BATCH_TEXTS {
            match queue.try_recv() {
                Ok(job) if count + job.texts.len() > MAX_BATCH_TEXTS => {
                    held = Some(job);
                    break;
                }
                Ok(job) => {
                    count += job.texts.len();
                    batch.push(job);
                }
                Err(_) => break,
            }
        }
        answer(encoder, batch);
    }
}

fn answer(encoder: &SentenceEncoder, batch: Vec<Job>) {
    if batch.len() == 1 {
        for job in batch {
            let _ = job.reply.send(encode(encoder, &job.texts));
        }
        return;
    }
    let texts: Vec<String> = batch.iter().flat_map(|j| j.texts.iter().cloned()).collect();
    match encode(encoder, &texts) {
        Ok(vectors) => {
            let mut vectors = vectors.into_iter();
            for job in batch {
                let own: Vec<Vec<f32>> = vectors.by_ref().take(job.texts.len()).collect();
                // A caller that gave up (its task was cancelled) is no loss.
                let _ = job.reply.send(Ok(own));
            }
        }
        // One request's text failed the batch: each on its own, so only
        // that request gets the error.
        Err(_) => {
            for job in batch {
                let _ = job.reply.send(encode(encoder, &job.texts));
            }
        }
    }
}

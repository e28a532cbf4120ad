// Kept whole at ~450 lines (90 of them its tests): one command, its two phases and the wait between them.
//! `rag-engine replay chunking`: re-runs chunking over the retained
//! DocumentParsed events into another chunking version. The chunker runs
//! here, in a consumer group of its own that reads the topic from the
//! beginning up to its end as of the start; the running pipeline's indexer
//! builds the new version beside the old one, and the projector flips each
//! document to it once it is fully ingested (removing the old version in
//! the same transaction). Queries keep working throughout and read exactly
//! one version of each document.

use std::collections::{BTreeMap, HashMap};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rag_bus::{headers, EventProducer, Inbound, Outcome, Stage, StageIdentity, StageOutput};
use rag_events::{Codec, DocumentParsed, EventType};
use rag_stages::chunker::{self, Chunker};
use rag_stages::StageError;
use rag_store::documents::DocumentStatus;
use rag_store::sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use rag_app::config::Settings;

#[derive(Subcommand, Debug)]
pub enum ReplayCommand {
    /// Re-chunk parsed documents with another profile (e.g. `fine@1`); needs `rag-engine run` (indexer, projector) running.
    Chunking(ChunkingArgs),
}

#[derive(Args, Debug, Clone)]
pub struct ChunkingArgs {
    /// The profile `name@version` to chunk with (shipped: default@1, fine@1).
    #[arg(long)]
    pub profile: String,
    /// Only this workspace.
    #[arg(long)]
    pub workspace: Option<String>,
    /// Only this document (repeatable).
    #[arg(long = "document")]
    pub documents: Vec<uuid::Uuid>,
    /// Seconds to wait for the replayed documents to be ingested in the new version.
    #[arg(long, default_value_t = 1800)]
    pub timeout: u64,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// What a replay did (printed by the command, reported by `bench`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReplaySummary {
    pub profile: String,
    pub workspace: Option<String>,
    /// DocumentParsed events read (the whole topic up to its end as of the start).
    pub events_read: i64,
    pub documents: usize,
    pub documents_on_new_version: i64,
    pub documents_failed_or_deleted: i64,
    /// Of those, deleted during the replay: not a failure of it.
    pub documents_deleted: i64,
    /// With a revision newer than the one replayed (uploaded during the
    /// replay, or one it could not chunk), which the pipeline chunks with
    /// its own profile: not on the new version, and not a failure
    /// (`rag_store::operations::ReplayProgress::revised`).
    pub documents_revised: i64,
    /// Those documents, to replay with `--document` once their newest
    /// revision is parsed.
    pub revised_documents: Vec<uuid::Uuid>,
    pub events_skipped: u64,
    pub chunks: i64,
    pub chunking_seconds: f64,
    /// From the start until every replayed document is ingested on the new version.
    pub duration_seconds: f64,
}

#[derive(Default)]
struct Progress {
    /// Next offset per partition (what the replay has consumed).
    next: HashMap<i32, i64>,
    /// Documents handed to the chunker, each with the newest revision
    /// chunked of it.
    replayed: BTreeMap<String, i32>,
    skipped: u64,
}

/// The chunker, restricted to the selected documents, recording progress.
struct Replaying {
    chunker: Chunker,
    /// A group of its own per run: the replay always reads from the
    /// beginning and never moves the offsets of the pipeline's chunker.
    group: String,
    pool: PgPool,
    workspace: Option<String>,
    documents: Vec<String>,
    progress: Arc<Mutex<Progress>>,
}

impl Replaying {
    fn selected(&self, msg: &Inbound, event: &DocumentParsed) -> bool {
        let ws = msg.header(headers::WORKSPACE_ID).map(|w| String::from_utf8_lossy(w).into_owned());
        self.workspace.as_ref().is_none_or(|w| Some(w) == ws.as_ref() || *w == event.envelope.workspace_id)
            && (self.documents.is_empty() || self.documents.contains(&event.document_id))
            && event.failure.is_none()
    }

    fn record(&self, msg: &Inbound, replayed: Option<(String, i32)>) {
        if let Ok(mut p) = self.progress.lock() {
            p.next.insert(msg.partition, msg.offset + 1);
            match replayed {
                Some((doc, revision)) => {
                    let newest = p.replayed.entry(doc).or_insert(revision);
                    *newest = (*newest).max(revision);
                }
                None => p.skipped += 1,
            }
        }
    }
}

impl Stage for Replaying {
    type Error = StageError;

    fn identity(&self) -> StageIdentity {
        StageIdentity { name: "replay-chunker", group: self.group.clone(), ..self.chunker.identity() }
    }

    async fn process(&self, msg: &Inbound) -> Result<Outcome, StageError> {
        let payload = msg.payload.as_deref().unwrap_or_default();
        let event: DocumentParsed = match self.chunker.output.codec().decode(payload) {
            Ok(e) => e,
            Err(_) => {
                // Undecodable records were dead-lettered by the pipeline already.
                self.record(msg, None);
                return Ok(Outcome::Applied);
            }
        };
        let live = match uuid::Uuid::parse_str(&event.document_id) {
            Ok(id) => rag_store::documents::status_of(&self.pool, id)
                .await?
                .is_some_and(|s| !matches!(s, DocumentStatus::Deleted | DocumentStatus::Uploaded)),
            Err(_) => false,
        };
        if !(live && self.selected(msg, &event)) {
            self.record(msg, None);
            return Ok(Outcome::Applied);
        }
        let outcome = self.chunker.process(msg).await?;
        self.record(msg, Some((event.document_id, event.revision)));
        Ok(outcome)
    }
}

pub async fn replay(s: &Settings, cmd: ReplayCommand) -> anyhow::Result<ExitCode> {
    let ReplayCommand::Chunking(args) = cmd;
    let summary = replay_chunking(s, &args).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        println!(
            "replayed {} document(s) onto {}: {} ingested ({} chunks), {} failed, {} deleted and {} revised meanwhile; {} events read, {} skipped; {:.1} s",
            summary.documents,
            summary.profile,
            summary.documents_on_new_version,
            summary.chunks,
            summary.documents_failed_or_deleted - summary.documents_deleted,
            summary.documents_deleted,
            summary.documents_revised,
            summary.events_read,
            summary.events_skipped,
            summary.duration_seconds
        );
        if !summary.revised_documents.is_empty() {
            let ids: Vec<String> = summary.revised_documents.iter().map(|d| d.to_string()).collect();
            println!("revised meanwhile, on the pipeline's profile (replay them with --document): {}", ids.join(" "));
        }
    }
    Ok(if summary.succeeded() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

impl ReplaySummary {
    /// Every replayed document is on the new version, deleted, or has a
    /// newer revision than the one replayed: a document a user deletes during a replay has
    /// nothing left to re-chunk (seen in the soak: its replay exited 1 for
    /// one document deleted by the load), a newer revision is the
    /// pipeline's to chunk, while one that failed is a failure.
    pub fn succeeded(&self) -> bool {
        self.documents_failed_or_deleted == self.documents_deleted
            && self.documents_on_new_version + self.documents_deleted + self.documents_revised == self.documents as i64
    }
}

/// Replays DocumentParsed into `args.profile` and waits until every
/// replayed document is ingested on it, failed, deleted or revised (needs
/// the indexer and projector running on the same topics). Progress bars
/// unless `args.json`.
pub async fn replay_chunking(s: &Settings, args: &ChunkingArgs) -> anyhow::Result<ReplaySummary> {
    let profile = rag_chunking::profile(&args.profile).ok_or_else(|| {
        let known: Vec<String> = rag_chunking::profiles().iter().map(|p| p.id()).collect();
        anyhow::anyhow!("unknown profile {:?}; known: {}", args.profile, known.join(", "))
    })?;
    if let Some(ws) = &args.workspace {
        rag_app::config::validate_workspace(ws)?;
    }
    let started = Instant::now();
    let bus = s.bus();
    let pool = rag_store::connect(&s.store()).await.context("connecting to Postgres (DATABASE_URL)")?;
    let codec = Codec::embedded()?;
    let topic = bus.topics.of(EventType::DocumentParsed);
    let ends: HashMap<i32, i64> = rag_bus::admin::watermarks(&bus, &topic)
        .await
        .with_context(|| format!("reading the watermarks of {topic} (KAFKA_BROKERS)"))?
        .into_iter()
        .filter(|(_, low, high)| high > low)
        .map(|(p, _, high)| (p, high))
        .collect();
    let total: i64 = ends.values().sum();
    let chunker = Chunker {
        blobs: rag_blobs::BlobStore::new(&s.blobs()),
        output: StageOutput::new(EventProducer::new(&bus, codec.clone(), "rag-engine/replay")?, chunker::STAGE),
        profile: profile.clone(),
        counter: s.embedding.token_counter()?,
    };
    let progress = Arc::new(Mutex::new(Progress::default()));
    let replaying = Replaying {
        chunker,
        group: format!("{}.replay-{}", chunker::group(&profile), uuid::Uuid::now_v7()),
        pool: pool.clone(),
        workspace: args.workspace.clone(),
        documents: args.documents.iter().map(|d| d.to_string()).collect(),
        progress: progress.clone(),
    };
    let bar = ProgressBar::new(total.max(0) as u64);
    if args.json {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{spinner} chunking   [{elapsed_precise}] {bar:30} {pos}/{len} events {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let shutdown = CancellationToken::new();
    let stage = if total > 0 {
        let dlq = EventProducer::new(&bus, codec.clone(), "rag-engine/replay-dlq")?;
        let (bus, shutdown) = (bus.clone(), shutdown.clone());
        Some(tokio::spawn(async move { rag_bus::stage::run_stage(&bus, Arc::new(replaying), dlq, shutdown).await }))
    } else {
        None
    };
    // Phase 1: every retained DocumentParsed (as of the start) is chunked.
    if let Some(mut stage) = stage {
        loop {
            let (consumed, replayed) = {
                let p = progress.lock().map_err(|_| anyhow::anyhow!("progress lock poisoned"))?;
                let consumed: i64 = ends.iter().map(|(part, end)| p.next.get(part).copied().unwrap_or(0).min(*end)).sum();
                (consumed, p.replayed.len())
            };
            bar.set_position(consumed as u64);
            bar.set_message(format!("({replayed} documents)"));
            if consumed >= total {
                break;
            }
            tokio::select! {
                r = &mut stage => anyhow::bail!("the replay's chunker stopped: {:?}", r),
                _ = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
        }
        shutdown.cancel();
        let _ = stage.await;
    }
    bar.finish_and_clear();
    let (replayed, skipped) = {
        let p = progress.lock().map_err(|_| anyhow::anyhow!("progress lock poisoned"))?;
        (p.replayed.iter().map(|(d, r)| (d.clone(), *r)).collect::<Vec<_>>(), p.skipped)
    };
    let chunked_secs = started.elapsed().as_secs_f64();
    // Phase 2: the pipeline ingests the new version and flips each document.
    let version = profile.id();
    let ids: Vec<(uuid::Uuid, i32)> = replayed.iter().filter_map(|(d, r)| Some((uuid::Uuid::parse_str(d).ok()?, *r))).collect();
    let bar = ProgressBar::new(ids.len() as u64);
    if args.json {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{spinner} ingesting  [{elapsed_precise}] {bar:30} {pos}/{len} documents on {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(version.clone());
    let deadline = Instant::now() + Duration::from_secs(args.timeout);
    let progress = ingested_on_version(
        || rag_store::operations::replay_progress(&pool, &ids, &version),
        ids.len(),
        deadline,
        Duration::from_millis(300),
        |done| bar.set_position(done as u64),
    )
    .await;
    let rag_store::operations::ReplayProgress { flipped, failed, deleted, revised, chunks } = match progress {
        Ok(p) => p,
        Err(Unfinished::TimedOut(left)) => {
            bar.finish_and_clear();
            anyhow::bail!(
                "{left} of {} replayed documents are not ingested on {version} after {} s: is `rag-engine run` (indexer, projector) running?",
                ids.len(),
                args.timeout
            );
        }
        Err(Unfinished::Store(e)) => return Err(e.into()),
    };
    bar.finish_and_clear();
    Ok(ReplaySummary {
        profile: version,
        workspace: args.workspace.clone(),
        events_read: total,
        documents: ids.len(),
        documents_on_new_version: flipped,
        documents_failed_or_deleted: failed + deleted,
        documents_deleted: deleted,
        documents_revised: revised.len() as i64,
        revised_documents: revised,
        events_skipped: skipped,
        chunks,
        chunking_seconds: (chunked_secs * 10.0).round() / 10.0,
        duration_seconds: (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
    })
}

/// Why the replayed documents did not all reach the new version.
#[derive(Debug)]
enum Unfinished {
    /// The deadline passed with this many documents still on their way.
    TimedOut(i64),
    /// The database refused the question for good.
    Store(rag_store::StoreError),
}

/// Reads the replay's progress (`read`) every `poll` until each of the
/// `wanted` documents is on the new version, failed, deleted or revised,
/// or the deadline passes. A transient database error (Postgres restarting, its
/// connections cut) is waited out like a document still on its way: the
/// hour of soak found a replay ended by one, its re-chunking done and its
/// documents flipping, while the pipeline rode the restart out.
async fn ingested_on_version<F, Fut>(
    mut read: F,
    wanted: usize,
    deadline: Instant,
    poll: Duration,
    mut on_progress: impl FnMut(i64),
) -> Result<rag_store::operations::ReplayProgress, Unfinished>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<rag_store::operations::ReplayProgress, rag_store::StoreError>>,
{
    let mut left = wanted as i64;
    loop {
        match read().await {
            Ok(p) => {
                let done = p.settled();
                on_progress(done);
                if done >= wanted as i64 {
                    return Ok(p);
                }
                left = wanted as i64 - done;
            }
            Err(e) if e.is_transient() => {
                tracing::warn!(error = %e, "reading the replay's progress failed; retrying (is Postgres restarting?)");
            }
            Err(e) => return Err(Unfinished::Store(e)),
        }
        if Instant::now() > deadline {
            return Err(Unfinished::TimedOut(left));
        }
        tokio::time::sleep(poll).await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use rag_store::operations::ReplayProgress;
    use rag_store::StoreError;

    use super::{ingested_on_version, ReplaySummary, Unfinished};

    #[tokio::test]
    async fn the_wait_for_the_new_version_rides_out_a_database_restart() {
        // Postgres cut the connections twice, then the documents flipped.
        let mut reads = vec![
            Ok(ReplayProgress { flipped: 1, ..Default::default() }),
            Err(StoreError::Database(rag_store::sqlx::Error::PoolTimedOut)),
            Err(StoreError::Database(rag_store::sqlx::Error::PoolClosed)),
            Ok(ReplayProgress { flipped: 2, deleted: 1, chunks: 7, ..Default::default() }),
        ]
        .into_iter();
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        let done = ingested_on_version(|| std::future::ready(reads.next().unwrap()), 3, deadline, Duration::ZERO, |d| seen.push(d)).await;
        assert_eq!(done.unwrap(), ReplayProgress { flipped: 2, deleted: 1, chunks: 7, failed: 0, revised: vec![] });
        assert_eq!(seen, [1, 3]);
    }

    #[tokio::test]
    async fn a_lasting_refusal_or_the_deadline_ends_the_wait() {
        let refused = ingested_on_version(
            || std::future::ready(Err(StoreError::Invalid("no such version".into()))),
            1,
            Instant::now() + Duration::from_secs(30),
            Duration::ZERO,
            |_| {},
        )
        .await;
        assert!(matches!(refused, Err(Unfinished::Store(_))), "{refused:?}");
        let late = ingested_on_version(
            || std::future::ready(Ok(ReplayProgress { flipped: 1, ..Default::default() })),
            4,
            Instant::now(),
            Duration::from_millis(1),
            |_| {},
        )
        .await;
        assert!(matches!(late, Err(Unfinished::TimedOut(3))), "{late:?}");
    }

    fn summary(documents: usize, on_new: i64, failed: i64, deleted: i64, revised: i64) -> ReplaySummary {
        ReplaySummary {
            profile: "fine@1".into(),
            workspace: None,
            events_read: 0,
            documents,
            documents_on_new_version: on_new,
            documents_failed_or_deleted: failed + deleted,
            documents_deleted: deleted,
            documents_revised: revised,
            revised_documents: Vec::new(),
            events_skipped: 0,
            chunks: 0,
            chunking_seconds: 0.0,
            duration_seconds: 0.0,
        }
    }

    #[test]
    fn a_document_deleted_or_revised_during_the_replay_is_not_a_failure_and_a_failed_one_is() {
        assert!(summary(51, 51, 0, 0, 0).succeeded());
        // The soak's hour: 50 re-chunked, one deleted by the load meanwhile.
        assert!(summary(51, 50, 0, 1, 0).succeeded());
        assert!(!summary(51, 50, 1, 0, 0).succeeded());
        assert!(!summary(51, 49, 1, 1, 0).succeeded());
        // The five-minute soak: files of the followed folder edited during
        // the replay are the pipeline's to chunk.
        assert!(summary(22, 7, 0, 11, 4).succeeded());
        assert!(!summary(22, 7, 1, 11, 3).succeeded());
    }
}

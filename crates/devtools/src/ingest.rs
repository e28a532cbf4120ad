//! A corpus through the real pipeline in this process: private topics
//! (a fresh prefix) and a private workspace, every stage running, uploads
//! to S3 + DocumentUploaded, waiting until every document is ingested or
//! failed. Shared by `bench ingest` and `eval retrieval`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rag_bus::EventProducer;
use rag_events::{Codec, DocumentUploaded, Envelope};
use rag_store::sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use rag_app::config::Settings;
use rag_app::run::{start_stages, StageName};

/// One document to ingest.
#[derive(Clone)]
pub struct CorpusItem {
    pub filename: String,
    pub content_type: &'static str,
    pub bytes: Vec<u8>,
}

pub struct IngestRun {
    pub workspace: String,
    /// The settings of the run (its topic prefix), to read its topics.
    pub settings: Settings,
    pub pool: PgPool,
    pub upload_seconds: f64,
    pub total_seconds: f64,
    /// The run's stages, still running when asked for (`keep_running`).
    pub pipeline: Option<Pipeline>,
}

impl IngestRun {
    /// Stops the stages, deletes the run's topics and consumer groups and
    /// its workspace's rows: a broker keeping every run's topics slows down
    /// as they pile up. Failures are reported, not fatal (the numbers are in).
    pub async fn discard(mut self) {
        if let Some(pipeline) = self.pipeline.take() {
            pipeline.stop().await;
        }
        let bus = self.settings.bus();
        let groups = self.settings.pipeline_groups().unwrap_or_default();
        if let Err(e) = rag_bus::admin::delete_deployment(&bus, &groups).await {
            eprintln!("deleting the run's topics ({}*): {e}", self.settings.kafka.topic_prefix);
        }
        if let Err(e) = rag_store::operations::delete_workspace_rows(&self.pool, &self.workspace).await {
            eprintln!("deleting the rows of workspace {}: {e}", self.workspace);
        }
    }
}

/// Every stage of a run, on the run's own topics, until stopped.
pub struct Pipeline {
    /// The settings of the run (its topic prefix).
    pub settings: Settings,
    shutdown: CancellationToken,
    stages: tokio::task::JoinSet<(String, Result<(), rag_bus::BusError>)>,
}

impl Pipeline {
    /// A stage that ended (they run until stopped, so this is a failure).
    pub fn failed_stage(&mut self) -> Option<String> {
        self.stages.try_join_next().map(describe_ended)
    }

    pub async fn stop(mut self) {
        self.shutdown.cancel();
        while self.stages.join_next().await.is_some() {}
    }
}

/// How [`ingest`] feeds the pipeline.
#[derive(Debug, Clone, Copy)]
pub struct IngestOptions {
    /// Uploads in flight.
    pub concurrency: usize,
    /// No progress bar.
    pub quiet: bool,
    /// The stages keep running after the ingest (for questions through the
    /// same pipeline) and the caller stops them.
    pub keep_running: bool,
    /// Each upload waits until the previous document is settled (ingested
    /// or failed): nothing queues, so hops are timed without load.
    pub one_at_a_time: bool,
}

impl IngestOptions {
    pub fn new(concurrency: usize, quiet: bool) -> Self {
        IngestOptions { concurrency, quiet, keep_running: false, one_at_a_time: false }
    }
}

type StageEnded = Result<(String, Result<(), rag_bus::BusError>), tokio::task::JoinError>;

fn describe_ended(ended: StageEnded) -> String {
    match ended {
        Ok((name, Err(e))) => format!("{name}: {e}"),
        Ok((name, Ok(()))) => format!("{name} ended"),
        Err(e) => e.to_string(),
    }
}

/// Ingests `count` documents made by `make(i)`; `label` names the run
/// (`bench`, `eval`) in topic prefixes, workspaces and progress output.
pub async fn ingest<F>(s: &Settings, label: &str, count: usize, options: IngestOptions, make: F) -> anyhow::Result<IngestRun>
where
    F: Fn(usize) -> CorpusItem + Send + Sync + 'static,
{
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..10].to_string();
    let mut s = s.clone();
    s.kafka.topic_prefix = format!("{label}-{run_id}.");
    let workspace = format!("{label}-{run_id}");
    let bus = s.bus();
    rag_bus::admin::ensure_topics(&bus).await.context("creating the run's topics (KAFKA_BROKERS)")?;
    let pool = rag_store::connect(&s.store()).await.context("connecting to Postgres (DATABASE_URL)")?;
    rag_store::migrate(&pool).await?;
    let blobs = rag_blobs::BlobStore::new(&s.blobs());
    blobs.ensure_bucket().await?;
    let shutdown = CancellationToken::new();
    let mut stages = start_stages(&s, StageName::All, &pool, &shutdown).await?;
    let producer = Arc::new(EventProducer::new(&bus, Codec::embedded()?, &format!("rag-engine/{label}"))?);
    let bar = ProgressBar::new(count as u64 * 2);
    if options.quiet {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message("uploading");
    eprintln!("{label}: {count} documents, workspace {workspace}, topic prefix {}", s.kafka.topic_prefix);

    let started = Instant::now();
    let make = Arc::new(make);
    let document_ids: Vec<uuid::Uuid> = (0..count).map(|_| uuid::Uuid::now_v7()).collect();
    let semaphore = Arc::new(tokio::sync::Semaphore::new(if options.one_at_a_time { 1 } else { options.concurrency.max(1) }));
    let mut uploads = tokio::task::JoinSet::new();
    for (i, id) in document_ids.iter().enumerate() {
        if options.one_at_a_time {
            while let Some(r) = uploads.join_next().await {
                r??;
            }
            while (rag_store::operations::settled_documents(&pool, &workspace).await? as usize) < i {
                if let Some(ended) = stages.try_join_next() {
                    shutdown.cancel();
                    anyhow::bail!("a stage stopped during the run: {}", describe_ended(ended));
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        let permit = semaphore.clone().acquire_owned().await?;
        let (blobs, producer, workspace, bar, make, id) =
            (blobs.clone(), producer.clone(), workspace.clone(), bar.clone(), make.clone(), *id);
        let label = label.to_string();
        uploads.spawn(async move {
            let _permit = permit;
            let item = make(i);
            let size = item.bytes.len() as i64;
            let key = format!("{label}/{workspace}/{i}");
            let stored = blobs.put_bytes(&key, item.bytes, item.content_type).await?;
            let event = DocumentUploaded {
                envelope: Envelope::originating(&workspace, format!("rag-engine/{label}")),
                document_id: id.to_string(),
                blob_uri: stored.uri,
                filename: item.filename,
                content_type: item.content_type.into(),
                size_bytes: size,
                sha256: stored.sha256,
                uploaded_by: label,
                metadata: Default::default(),
                revision: 1,
                replaces_sha256: None,
            };
            producer.send(&event).await?;
            bar.inc(1);
            anyhow::Ok(())
        });
    }
    while let Some(r) = uploads.join_next().await {
        r??;
    }
    let upload_seconds = started.elapsed().as_secs_f64();
    bar.set_message("ingesting");

    let total_seconds = loop {
        if let Some(ended) = stages.try_join_next() {
            shutdown.cancel();
            anyhow::bail!("a stage stopped during the run: {}", describe_ended(ended));
        }
        let done = rag_store::operations::settled_documents(&pool, &workspace).await?;
        bar.set_position(count as u64 + done as u64);
        if done as usize >= count {
            break started.elapsed().as_secs_f64();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    bar.finish_and_clear();
    let settings = s.clone();
    let pipeline = Pipeline { settings: s, shutdown, stages };
    let pipeline = if options.keep_running {
        Some(pipeline)
    } else {
        pipeline.stop().await;
        None
    };
    Ok(IngestRun { workspace, settings, pool, upload_seconds, total_seconds, pipeline })
}

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

use crate::config::Settings;
use crate::run::{start_stages, StageName};

/// One document to ingest.
#[derive(Clone)]
pub struct CorpusItem {
    pub filename: String,
    pub content_type: &'static str,
    pub bytes: Vec<u8>,
}

pub struct IngestRun {
    pub workspace: String,
    pub pool: PgPool,
    pub upload_seconds: f64,
    pub total_seconds: f64,
    /// The run's stages, still running when asked for (`keep_running`).
    pub pipeline: Option<Pipeline>,
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
        self.stages.try_join_next().map(|ended| match ended {
            Ok((name, Err(e))) => format!("{name}: {e}"),
            Ok((name, Ok(()))) => format!("{name} ended"),
            Err(e) => e.to_string(),
        })
    }

    pub async fn stop(mut self) {
        self.shutdown.cancel();
        while self.stages.join_next().await.is_some() {}
    }
}

/// Ingests `count` documents made by `make(i)`; `label` names the run
/// (`bench`, `eval`) in topic prefixes, workspaces and progress output.
/// With `keep_running`, the stages keep running after the ingest (for
/// questions through the same pipeline) and the caller stops them.
pub async fn ingest<F>(
    s: &Settings,
    label: &str,
    count: usize,
    concurrency: usize,
    quiet: bool,
    keep_running: bool,
    make: F,
) -> anyhow::Result<IngestRun>
where
    F: Fn(usize) -> CorpusItem + Send + Sync + 'static,
{
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..10].to_string();
    let mut s = s.clone();
    s.topic_prefix = format!("{label}-{run_id}.");
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
    if quiet {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message("uploading");
    eprintln!("{label}: {count} documents, workspace {workspace}, topic prefix {}", s.topic_prefix);

    let started = Instant::now();
    let make = Arc::new(make);
    let document_ids: Vec<uuid::Uuid> = (0..count).map(|_| uuid::Uuid::now_v7()).collect();
    let semaphore = Arc::new(tokio::sync::Semaphore::new(concurrency.max(1)));
    let mut uploads = tokio::task::JoinSet::new();
    for (i, id) in document_ids.iter().enumerate() {
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
            let detail = match ended {
                Ok((name, Err(e))) => format!("{name}: {e}"),
                Ok((name, Ok(()))) => format!("{name} ended"),
                Err(e) => e.to_string(),
            };
            anyhow::bail!("a stage stopped during the run: {detail}");
        }
        let done = rag_store::operations::settled_documents(&pool, &workspace).await?;
        bar.set_position(count as u64 + done as u64);
        if done as usize >= count {
            break started.elapsed().as_secs_f64();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    bar.finish_and_clear();
    let pipeline = Pipeline { settings: s, shutdown, stages };
    let pipeline = if keep_running {
        Some(pipeline)
    } else {
        pipeline.stop().await;
        None
    };
    Ok(IngestRun { workspace, pool, upload_seconds, total_seconds, pipeline })
}

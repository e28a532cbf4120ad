//! `rag-dev bench sources`: a sync of a large bucket where nothing changed
//! (how long, and how many objects it fetched: none is the goal), then one
//! object changed, timed from the start of the sync to its new revision
//! being what search reads (docs/sources.md, docs/performance.md).
//!
//! The bucket's other objects get their checkpoint rows written directly,
//! as a completed first sync leaves them: ingesting them all is what
//! `bench ingest` measures, and is not what a sync of an unchanged bucket
//! costs. The one object that changes is a real document, announced by a
//! real sync and ingested by the pipeline running here.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use rag_app::config::Settings;
use rag_app::run::{start_stages, StageName};
use rag_store::sources::SourceFileRow;
use serde::Serialize;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

#[derive(Args, Debug, Clone)]
pub struct SourcesArgs {
    /// Objects in the bucket.
    #[arg(long, default_value_t = 10_000)]
    pub objects: usize,
    /// Uploads of the objects in flight while the bucket is filled.
    #[arg(long, default_value_t = 32)]
    pub concurrency: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct SourcesReport {
    pub objects: usize,
    /// A sync where nothing changed: listing, comparing, no fetch.
    pub unchanged_sync_seconds: f64,
    /// Objects that sync read (the goal is none).
    pub unchanged_sync_fetched: i32,
    /// One object changed: from the start of the sync to its new revision
    /// being the one search reads.
    pub changed_searchable_seconds: f64,
    /// That sync alone.
    pub changed_sync_seconds: f64,
}

const POLICY_KEY: &str = "quy-che.md";

pub async fn run(s: &Settings, args: &SourcesArgs) -> anyhow::Result<SourcesReport> {
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..10].to_string();
    let mut s = s.clone();
    s.kafka.topic_prefix = format!("bench-src-{run_id}.");
    // The syncs are this bench's own: no background sync of every source.
    s.sources.source_sync_interval_secs = 0;
    let workspace = format!("bench-src-{run_id}");
    let bucket = format!("bench-src-{run_id}");
    let bus = s.bus();
    rag_bus::admin::ensure_topics(&bus).await.context("creating the run's topics (KAFKA_BROKERS)")?;
    let pool = rag_store::connect(&s.store()).await.context("connecting to Postgres (DATABASE_URL)")?;
    rag_store::migrate(&pool).await?;
    let blobs = rag_blobs::BlobStore::new(&s.blobs());
    blobs.ensure_bucket().await?;
    let followed = blobs.in_bucket(&bucket);
    followed.ensure_bucket().await?;
    eprintln!("bench sources: {} objects in bucket {bucket}, workspace {workspace}", args.objects);

    // Fill the bucket.
    let started = Instant::now();
    let followed = Arc::new(followed);
    let semaphore = Arc::new(tokio::sync::Semaphore::new(args.concurrency.max(1)));
    let mut puts = tokio::task::JoinSet::new();
    for i in 0..args.objects.saturating_sub(1) {
        let (store, permit) = (followed.clone(), semaphore.clone().acquire_owned().await?);
        puts.spawn(async move {
            let _permit = permit;
            store.put_bytes(&object_key(i), object_text(i).into_bytes(), "text/plain").await
        });
        if i % 1000 == 999 {
            eprintln!("  {} objects stored ({:.0} s)", i + 1, started.elapsed().as_secs_f64());
        }
    }
    while let Some(r) = puts.join_next().await {
        r??;
    }
    followed.put_bytes(POLICY_KEY, "Nhân viên được nghỉ phép 12 ngày mỗi năm.\n".as_bytes().to_vec(), "text/markdown").await?;
    eprintln!("  bucket filled in {:.0} s", started.elapsed().as_secs_f64());

    let source = rag_store::sources::add(&pool, &workspace, "s3", &format!("s3://{bucket}/"), "bench")
        .await?
        .context("the bench's source exists already")?;
    // The checkpoint of a completed first sync, for every object but the policy.
    let listed = rag_sources::list::bucket(&followed, "", |_| {}).await?;
    for l in listed.iter().filter(|l| l.key != POLICY_KEY) {
        let i: usize = l.key.trim_start_matches("kho/tep-").trim_end_matches(".txt").parse().unwrap_or(0);
        let sha = hex::encode(Sha256::digest(object_text(i).as_bytes()));
        let row = SourceFileRow {
            key: l.key.clone(),
            generation: 0,
            document_id: rag_sources::plan::document_id(source.id, &l.key, 0),
            listed_version: Some(l.version.clone()),
            size_bytes: Some(l.size as i64),
            sha256: Some(sha),
            revision: 1,
            pending_sha256: None,
            pending_revision: None,
            state: rag_sources::plan::PRESENT.into(),
            failure: None,
            failure_code: None,
        };
        rag_store::sources::put_file(&pool, source.id, &row).await?;
    }

    let shutdown = CancellationToken::new();
    let stages = start_stages(&s, StageName::All, &pool, &shutdown).await?;
    let syncer = rag_sources::Syncer {
        pool: pool.clone(),
        places: rag_sources::SyncPlaces { folder_roots: Vec::new(), buckets: vec![bucket.clone()], own_bucket: s.blobs.s3_bucket.clone() },
        blobs: blobs.clone(),
        producer: rag_bus::EventProducer::new(&bus, rag_events::Codec::embedded()?, "rag-engine/bench")?,
        limits: rag_sources::SyncLimits { max_bytes: s.uploads.upload_max_bytes, workspace_max_bytes: s.uploads.workspace_max_bytes },
        producer_name: "rag-engine/bench".into(),
    };
    let result = async {
        // The first real sync announces the policy (the only new object).
        let first = syncer.sync(&source, &|_| {}).await?;
        anyhow::ensure!(first.added == 1, "the first sync added {} objects, not the one policy", first.added);
        let document = rag_sources::plan::document_id(source.id, POLICY_KEY, 0);
        searchable(&pool, &workspace, document, 1).await?;

        let t = Instant::now();
        let unchanged = syncer.sync(&source, &|_| {}).await?;
        let unchanged_sync_seconds = t.elapsed().as_secs_f64();
        eprintln!("  unchanged sync: {unchanged_sync_seconds:.1} s, {} fetched, {} unchanged", unchanged.fetched, unchanged.unchanged);

        followed.put_bytes(POLICY_KEY, "Nhân viên được nghỉ phép 15 ngày mỗi năm.\n".as_bytes().to_vec(), "text/markdown").await?;
        let t = Instant::now();
        let changed = syncer.sync(&source, &|_| {}).await?;
        let changed_sync_seconds = t.elapsed().as_secs_f64();
        anyhow::ensure!(changed.changed == 1, "the sync after the change changed {} objects", changed.changed);
        searchable(&pool, &workspace, document, 2).await?;
        let changed_searchable_seconds = t.elapsed().as_secs_f64();
        Ok(SourcesReport {
            objects: listed.len(),
            unchanged_sync_seconds,
            unchanged_sync_fetched: unchanged.fetched,
            changed_searchable_seconds,
            changed_sync_seconds,
        })
    }
    .await;
    shutdown.cancel();
    let mut stages = stages;
    while stages.join_next().await.is_some() {}
    // The run's topics, rows, source and bucket go.
    let groups = s.pipeline_groups().unwrap_or_default();
    if let Err(e) = rag_bus::admin::delete_deployment(&bus, &groups).await {
        eprintln!("deleting the run's topics: {e}");
    }
    let _ = rag_store::sources::remove(&pool, &workspace, source.id).await;
    if let Err(e) = rag_store::operations::delete_workspace_rows(&pool, &workspace).await {
        eprintln!("deleting the run's rows: {e}");
    }
    if let Err(e) = followed.delete_prefix("").await {
        eprintln!("emptying bucket {bucket}: {e}");
    }
    result
}

fn object_key(i: usize) -> String {
    format!("kho/tep-{i:05}.txt")
}

fn object_text(i: usize) -> String {
    format!("Tệp số {i}: mã kho K{i}, ngăn {}.\n", i % 97)
}

/// Waits until `revision` of the document is what search reads.
async fn searchable(pool: &rag_store::sqlx::PgPool, workspace: &str, id: uuid::Uuid, revision: i32) -> anyhow::Result<()> {
    let t = Instant::now();
    loop {
        if let Some(d) = rag_store::documents::get(pool, workspace, id).await? {
            if d.revision == Some(revision) {
                return Ok(());
            }
            anyhow::ensure!(d.status != rag_store::documents::DocumentStatus::Failed, "the document failed: {:?}", d.failure_reason);
        }
        anyhow::ensure!(t.elapsed() < Duration::from_secs(120), "revision {revision} not searchable after 120 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn print(r: &SourcesReport) {
    println!("source sync of a bucket of {} objects", r.objects);
    println!(
        "  nothing changed: {:.1} s, {} objects fetched   (goal: under 30 s, none fetched)",
        r.unchanged_sync_seconds, r.unchanged_sync_fetched
    );
    println!(
        "  one object changed: searchable {:.1} s after the sync started (the sync itself {:.1} s)   (goal: under 10 s)",
        r.changed_searchable_seconds, r.changed_sync_seconds
    );
}

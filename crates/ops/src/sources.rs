//! `rag-engine sources add|list|sync|remove`: the folders and S3 prefixes
//! a workspace follows (`rag_sources`; docs/sources.md).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use rag_app::config::{BlobSettings, DatabaseSettings, KafkaSettings, SourceSettings, UploadSettings};
use rag_sources::sync::Progress;
use rag_sources::{Adder, Location, SyncLimits, Syncer};
use rag_store::sources::{SourceRow, SyncCounts};
use rag_store::sqlx::PgPool;

#[derive(Subcommand, Debug)]
pub enum SourcesCommand {
    /// Follow a folder on this server (under SOURCE_FOLDER_ROOTS) or an S3 prefix: its files become the
    /// workspace's documents at the next sync.
    Add {
        /// The workspace: its name or id.
        #[arg(long, short)]
        workspace: String,
        /// An absolute folder path.
        #[arg(long, conflicts_with = "s3", required_unless_present = "s3")]
        folder: Option<std::path::PathBuf>,
        /// s3://bucket/prefix of a bucket SOURCE_S3_BUCKETS allows, read with the server's own object-store settings.
        #[arg(long)]
        s3: Option<String>,
        /// Recorded as who added it.
        #[arg(long, default_value = "operator")]
        user: String,
        #[arg(long)]
        json: bool,
    },
    /// The sources of a workspace (or every source), with their last sync.
    List {
        #[arg(long, short)]
        workspace: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Sync sources: new files become documents, changed files new revisions, removed files are deleted.
    /// Without --once, syncs again every SOURCE_SYNC_INTERVAL_SECS until interrupted.
    Sync {
        /// One source (its id); default: every source of the workspace, or every source.
        source: Option<uuid::Uuid>,
        #[arg(long, short)]
        workspace: Option<String>,
        #[arg(long)]
        once: bool,
        #[arg(long)]
        json: bool,
    },
    /// Stop following a source. Its documents stay, unless --with-documents deletes them (DocumentDeleted).
    Remove {
        source: uuid::Uuid,
        #[arg(long, short)]
        workspace: String,
        #[arg(long)]
        with_documents: bool,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Debug)]
pub struct SourcesCommandSettings {
    #[command(flatten)]
    pub database: DatabaseSettings,
    #[command(flatten)]
    pub kafka: KafkaSettings,
    #[command(flatten)]
    pub blobs: BlobSettings,
    #[command(flatten)]
    pub uploads: UploadSettings,
    #[command(flatten)]
    pub sources: SourceSettings,
}

pub async fn sources(s: &SourcesCommandSettings, command: SourcesCommand) -> anyhow::Result<ExitCode> {
    let pool = rag_store::connect(&s.database.store()).await.context("connecting to Postgres (DATABASE_URL)")?;
    match command {
        SourcesCommand::Add { workspace, folder, s3, user, json } => {
            let ws = crate::workspaces::resolve_or_id_in(&pool, &workspace).await?;
            let location = match (folder, s3) {
                (Some(path), _) => rag_sources::allowed_folder(&path, &s.sources.folder_roots(), Adder::Operator, &ws)?,
                (None, Some(url)) => {
                    let location = rag_sources::allowed_bucket(&url, &s.blobs.s3_bucket, &s.sources.buckets(), Adder::Operator, &ws)?;
                    if let Location::S3 { bucket, prefix } = &location {
                        // Read once now, so a bucket the server cannot reach is said at once.
                        let store = rag_blobs::BlobStore::new(&s.blobs.blobs()).in_bucket(bucket);
                        store.list_page(prefix, None).await.with_context(|| format!("listing {url} with the server's S3 settings"))?;
                    }
                    location
                }
                (None, None) => anyhow::bail!("give --folder PATH or --s3 s3://bucket/prefix"),
            };
            let Some(row) = rag_store::sources::add(&pool, &ws, location.kind(), &location.stored(), &user).await? else {
                anyhow::bail!("workspace {ws} already follows {}", location.stored());
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&row)?);
            } else {
                println!(
                    "source {} added: workspace {ws} follows {} ({}); `rag-engine sources sync --once {}` syncs it now",
                    row.id, row.location, row.kind, row.id
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        SourcesCommand::List { workspace, json } => {
            let ws = match workspace {
                Some(w) => Some(crate::workspaces::resolve_or_id_in(&pool, &w).await?),
                None => None,
            };
            let rows = rag_store::sources::list(&pool, ws.as_deref()).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
                return Ok(ExitCode::SUCCESS);
            }
            for r in &rows {
                println!("{}  {}  {}  {}", r.id, r.workspace_id, r.kind, r.location);
                println!("    {}", last_sync(r));
            }
            println!("{} source(s)", rows.len());
            Ok(ExitCode::SUCCESS)
        }
        SourcesCommand::Sync { source, workspace, once, json } => {
            let syncer = syncer(s, pool.clone())?;
            let interval = Duration::from_secs(s.sources.source_sync_interval_secs);
            loop {
                let chosen = chosen_sources(&pool, source, workspace.as_deref()).await?;
                let failed = sync_each(&syncer, &chosen, json).await;
                if once || interval.is_zero() {
                    return Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE });
                }
                tokio::select! {
                    _ = tokio::time::sleep(interval) => {}
                    _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
                }
            }
        }
        SourcesCommand::Remove { source, workspace, with_documents, json } => {
            let ws = crate::workspaces::resolve_or_id_in(&pool, &workspace).await?;
            let Some(row) = rag_store::sources::get(&pool, &ws, source).await? else {
                anyhow::bail!("no source {source} in workspace {ws} (`rag-engine sources list -w {workspace}`)");
            };
            let deleted = if with_documents {
                let producer = rag_bus::EventProducer::new(&s.kafka.client_bus()?, rag_events::Codec::embedded()?, "rag-engine/cli")?;
                rag_sources::sync::delete_documents(&pool, &producer, &row, "rag-engine/cli", &format!("source:{}", row.id))
                    .await
                    .context("producing DocumentDeleted (KAFKA_BROKERS)")?
            } else {
                0
            };
            rag_store::sources::remove(&pool, &ws, row.id).await?;
            if json {
                println!("{}", serde_json::json!({"source_id": row.id, "documents_deleted": deleted}));
            } else {
                println!("source {} removed ({}); {deleted} document(s) deleted", row.id, row.location);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The syncer of the server's settings (`run all` builds the same).
pub fn syncer(s: &SourcesCommandSettings, pool: PgPool) -> anyhow::Result<Syncer> {
    Ok(Syncer {
        pool,
        places: rag_sources::SyncPlaces {
            folder_roots: s.sources.folder_roots(),
            buckets: s.sources.buckets(),
            own_bucket: s.blobs.s3_bucket.clone(),
        },
        blobs: rag_blobs::BlobStore::new(&s.blobs.blobs()),
        producer: rag_bus::EventProducer::new(&s.kafka.client_bus()?, rag_events::Codec::embedded()?, "rag-engine/sources")?,
        limits: SyncLimits { max_bytes: s.uploads.upload_max_bytes, workspace_max_bytes: s.uploads.workspace_max_bytes },
        producer_name: format!("rag-engine/sources@{}", env!("CARGO_PKG_VERSION")),
    })
}

async fn chosen_sources(pool: &PgPool, source: Option<uuid::Uuid>, workspace: Option<&str>) -> anyhow::Result<Vec<SourceRow>> {
    let ws = match workspace {
        Some(w) => Some(crate::workspaces::resolve_or_id_in(pool, w).await?),
        None => None,
    };
    let all = rag_store::sources::list(pool, ws.as_deref()).await?;
    match source {
        Some(id) => {
            let one: Vec<SourceRow> = all.into_iter().filter(|r| r.id == id).collect();
            anyhow::ensure!(!one.is_empty(), "no source {id}{}", ws.map(|w| format!(" in workspace {w}")).unwrap_or_default());
            Ok(one)
        }
        None => Ok(all),
    }
}

/// Syncs each source in turn, printing as it goes; how many failed.
async fn sync_each(syncer: &Syncer, chosen: &[SourceRow], json: bool) -> usize {
    let mut failed = 0;
    let mut results = Vec::with_capacity(chosen.len());
    for source in chosen {
        let started = std::time::Instant::now();
        let bar = indicatif::ProgressBar::new(0);
        if json {
            bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {prefix} {bar:25} {pos}/{len} {wide_msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.set_prefix(source.location.clone());
        let progress = |p: Progress<'_>| match p {
            Progress::Listing(n) => bar.set_message(format!("listing: {n} file(s)")),
            Progress::File { done, of, key } => {
                bar.set_length(of as u64);
                bar.set_position(done as u64);
                bar.set_message(key.to_string());
            }
        };
        let outcome = syncer.sync(source, &progress).await;
        bar.finish_and_clear();
        let seconds = started.elapsed().as_secs_f64();
        match &outcome {
            Ok(c) if !json => println!("{}  {}: {}  ({seconds:.1} s)", source.id, source.location, counts_line(c)),
            Err(e) if !json => eprintln!("{}  {}: sync stopped: {e} (the next sync goes on from here)", source.id, source.location),
            _ => {}
        }
        if outcome.is_err() {
            failed += 1;
        }
        results.push(serde_json::json!({
            "source_id": source.id,
            "location": source.location,
            "seconds": seconds,
            "counts": outcome.as_ref().ok(),
            "error": outcome.as_ref().err().map(|e| e.to_string()),
        }));
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&results).unwrap_or_default());
    }
    failed
}

fn counts_line(c: &SyncCounts) -> String {
    format!(
        "{} file(s): {} added, {} changed, {} removed, {} failed, {} unchanged",
        c.seen, c.added, c.changed, c.removed, c.failed, c.unchanged
    )
}

fn last_sync(r: &SourceRow) -> String {
    match (r.sync_completed_at, &r.last_error) {
        (_, Some(e)) => format!("last sync stopped: {e}"),
        (Some(at), None) => format!(
            "last complete sync {}: {} file(s), {} added, {} changed, {} removed, {} failed",
            at.format("%Y-%m-%d %H:%M:%S UTC"),
            r.files_seen,
            r.files_added,
            r.files_changed,
            r.files_removed,
            r.files_failed
        ),
        (None, None) => "never synced".into(),
    }
}

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rag_blobs::BlobStore;
use rag_bus::EventProducer;
use rag_events::Codec;
use serde::Serialize;

use rag_app::config::{validate_workspace, BlobSettings, DatabaseSettings, KafkaSettings, UploadSettings};

#[derive(Args, Debug)]
pub struct UploadArgs {
    /// Files or directories (walked recursively; hidden files are skipped).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Workspace the documents belong to: its id, or the name of a workspace (looked up in DATABASE_URL).
    #[arg(long, short)]
    workspace: String,
    /// Who uploads (recorded on the event).
    #[arg(long, default_value = "cli")]
    uploaded_by: String,
    /// Content type for every file instead of guessing from the extension.
    #[arg(long)]
    content_type: Option<String>,
    /// Metadata `key=value` recorded on each event (repeatable).
    #[arg(long = "meta", value_parser = parse_kv)]
    metadata: Vec<(String, String)>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

fn parse_kv(s: &str) -> Result<(String, String), String> {
    s.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())).ok_or_else(|| format!("expected key=value, got {s:?}"))
}

#[derive(Debug, Serialize)]
struct UploadResult {
    path: String,
    document_id: Option<String>,
    filename: String,
    content_type: String,
    size_bytes: u64,
    sha256: Option<String>,
    blob_uri: Option<String>,
    ok: bool,
    error: Option<String>,
}

fn collect(paths: &[PathBuf]) -> anyhow::Result<Vec<(PathBuf, u64)>> {
    let mut files = Vec::new();
    for root in paths {
        let meta = std::fs::metadata(root).with_context(|| format!("{}", root.display()))?;
        if meta.is_file() {
            files.push((root.clone(), meta.len()));
            continue;
        }
        for entry in walkdir::WalkDir::new(root)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'))
        {
            let entry = entry.with_context(|| format!("walking {}", root.display()))?;
            if entry.file_type().is_file() {
                let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
                files.push((entry.into_path(), len));
            }
        }
    }
    Ok(files)
}

pub fn guess_content_type(path: &Path) -> String {
    let ext = path.extension().map(|e| e.to_string_lossy().to_lowercase()).unwrap_or_default();
    // mime_guess lacks or misnames a few formats we parse.
    match ext.as_str() {
        "md" | "markdown" => "text/markdown".into(),
        "txt" | "text" => "text/plain".into(),
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document".into(),
        _ => mime_guess::from_path(path).first_raw().unwrap_or("application/octet-stream").to_string(),
    }
}

/// What `upload` reads: the bucket originals go to, the broker they are
/// announced on, and the size limit.
#[derive(clap::Args, Debug)]
pub struct UploadCommandSettings {
    #[command(flatten)]
    pub kafka: KafkaSettings,
    #[command(flatten)]
    pub blobs: BlobSettings,
    #[command(flatten)]
    pub uploads: UploadSettings,
    /// Only to find a workspace given by name.
    #[command(flatten)]
    pub database: DatabaseSettings,
}

pub async fn upload(s: &UploadCommandSettings, args: UploadArgs) -> anyhow::Result<ExitCode> {
    let mut args = args;
    args.workspace = rag_ops::workspaces::resolve_or_id(&s.database, &args.workspace).await?;
    validate_workspace(&args.workspace)?;
    let files = collect(&args.paths)?;
    if files.is_empty() {
        anyhow::bail!("no files found under {}", args.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "));
    }
    let blobs = BlobStore::new(&s.blobs.blobs());
    let producer = EventProducer::new(&s.kafka.client_bus()?, Codec::embedded()?, "rag-engine/cli-upload")?;
    let total: u64 = files.iter().map(|(_, n)| n).sum();
    let bar = ProgressBar::new(total);
    if args.json {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {bytes}/{total_bytes} {pos_files} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .with_key("pos_files", {
                let n = files.len();
                move |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "({} files)", n);
                    let _ = state;
                }
            }),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let metadata: HashMap<String, String> = args.metadata.iter().cloned().collect();
    let mut results = Vec::with_capacity(files.len());
    for (path, len) in &files {
        let filename = path.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default();
        bar.set_message(filename.clone());
        let content_type = args.content_type.clone().unwrap_or_else(|| guess_content_type(path));
        let file = LocalFile { path, filename: &filename, content_type: &content_type, metadata: &metadata };
        let r = upload_one(s, &args, &blobs, &producer, file).await;
        let result = match r {
            Ok((document_id, sha256, blob_uri, size)) => UploadResult {
                path: path.display().to_string(),
                document_id: Some(document_id),
                filename,
                content_type,
                size_bytes: size,
                sha256: Some(sha256),
                blob_uri: Some(blob_uri),
                ok: true,
                error: None,
            },
            Err(e) => UploadResult {
                path: path.display().to_string(),
                document_id: None,
                filename,
                content_type,
                size_bytes: *len,
                sha256: None,
                blob_uri: None,
                ok: false,
                error: Some(format!("{e:#}")),
            },
        };
        if !args.json {
            bar.suspend(|| match &result {
                UploadResult { ok: true, document_id: Some(id), .. } => {
                    println!("uploaded  {id}  {}  ({} bytes)", result.path, result.size_bytes)
                }
                _ => eprintln!("failed    {}: {}", result.path, result.error.as_deref().unwrap_or("")),
            });
        }
        bar.inc(*len);
        results.push(result);
    }
    bar.finish_and_clear();
    let failed = results.iter().filter(|r| !r.ok).count();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        println!("{} uploaded, {} failed, workspace {}", results.len() - failed, failed, args.workspace);
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// One file of an upload, as found on disk.
struct LocalFile<'a> {
    path: &'a Path,
    filename: &'a str,
    content_type: &'a str,
    /// The upload's metadata (`--metadata`).
    metadata: &'a HashMap<String, String>,
}

async fn upload_one(
    s: &UploadCommandSettings,
    args: &UploadArgs,
    blobs: &BlobStore,
    producer: &EventProducer,
    file: LocalFile<'_>,
) -> anyhow::Result<(String, String, String, u64)> {
    let LocalFile { path, filename, content_type, metadata } = file;
    let on_disk = tokio::fs::metadata(path).await.with_context(|| path.display().to_string())?.len();
    if on_disk > s.uploads.upload_max_bytes {
        anyhow::bail!("file is {on_disk} bytes, over the limit of {} (UPLOAD_MAX_BYTES)", s.uploads.upload_max_bytes);
    }
    let (sha256, size) = rag_blobs::hash_file(path).await?;
    if size > s.uploads.upload_max_bytes {
        anyhow::bail!("file is {size} bytes, over the limit of {} (UPLOAD_MAX_BYTES)", s.uploads.upload_max_bytes);
    }
    let mut metadata = metadata.clone();
    metadata.insert("source_path".to_string(), path.display().to_string());
    let doc = rag_upload::NewDocument {
        workspace_id: args.workspace.clone(),
        filename: filename.to_string(),
        content_type: content_type.to_string(),
        uploaded_by: args.uploaded_by.clone(),
        metadata,
        producer: format!("rag-engine/cli@{}", env!("CARGO_PKG_VERSION")),
    };
    let event = rag_upload::store_and_announce(blobs, producer, rag_upload::Original { path, size, sha256: &sha256 }, doc).await?;
    let (document_id, blob_uri) = (event.document_id, event.blob_uri);
    Ok((document_id, sha256, blob_uri, size))
}

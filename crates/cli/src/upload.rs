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
    /// Upload the one file given as a new revision of this document (its id
    /// stays; search switches to the new text once it is ingested, earlier
    /// answers keep citing the text they quoted). Needs DATABASE_URL.
    #[arg(long, value_name = "DOCUMENT_ID")]
    replace: Option<uuid::Uuid>,
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
    /// The revision uploaded (1 for a new document).
    revision: Option<i32>,
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
    let replaces = match args.replace {
        Some(id) => Some(replaced_document(s, &args, id, files.len()).await?),
        None => None,
    };
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
        let r = upload_one(s, &args, &blobs, &producer, file, replaces.as_ref()).await;
        let result = match r {
            Ok(Uploaded { document_id, sha256, blob_uri, size, revision }) => UploadResult {
                path: path.display().to_string(),
                document_id: Some(document_id),
                filename,
                content_type,
                size_bytes: size,
                sha256: Some(sha256),
                blob_uri,
                revision: Some(revision),
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
                revision: None,
                ok: false,
                error: Some(format!("{e:#}")),
            },
        };
        if !args.json {
            bar.suspend(|| match &result {
                UploadResult { ok: true, document_id: Some(id), blob_uri: None, revision: Some(r), .. } => {
                    println!("unchanged {id}  {}  (the same bytes as revision {r})", result.path)
                }
                UploadResult { ok: true, document_id: Some(id), revision: Some(r), .. } if *r > 1 => {
                    println!("uploaded  {id}  {}  ({} bytes, revision {r})", result.path, result.size_bytes)
                }
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

/// What one file's upload did.
struct Uploaded {
    document_id: String,
    sha256: String,
    /// None: the bytes were those of the document's newest revision, and
    /// nothing was uploaded.
    blob_uri: Option<String>,
    size: u64,
    revision: i32,
}

/// The document `--replace` names, checked: it exists in the workspace, is
/// not deleted, and one file is given.
async fn replaced_document(
    s: &UploadCommandSettings,
    args: &UploadArgs,
    id: uuid::Uuid,
    files: usize,
) -> anyhow::Result<(rag_store::sqlx::PgPool, rag_store::documents::DocumentRow)> {
    if files != 1 {
        anyhow::bail!("--replace takes exactly one file ({files} given): the file becomes the document's new revision");
    }
    let pool = rag_store::connect(&s.database.store()).await.context("--replace reads the document (DATABASE_URL)")?;
    match rag_store::documents::get(&pool, &args.workspace, id).await? {
        Some(d) if d.status != rag_store::documents::DocumentStatus::Deleted => Ok((pool, d)),
        Some(_) => anyhow::bail!("document {id} was deleted: upload the file as a new document"),
        None => anyhow::bail!("document {id} not found in workspace {}", args.workspace),
    }
}

async fn upload_one(
    s: &UploadCommandSettings,
    args: &UploadArgs,
    blobs: &BlobStore,
    producer: &EventProducer,
    file: LocalFile<'_>,
    replaces: Option<&(rag_store::sqlx::PgPool, rag_store::documents::DocumentRow)>,
) -> anyhow::Result<Uploaded> {
    let LocalFile { path, filename, content_type, metadata } = file;
    let on_disk = tokio::fs::metadata(path).await.with_context(|| path.display().to_string())?.len();
    if on_disk > s.uploads.upload_max_bytes {
        anyhow::bail!("file is {on_disk} bytes, over the limit of {} (UPLOAD_MAX_BYTES)", s.uploads.upload_max_bytes);
    }
    let (sha256, size) = rag_blobs::hash_file(path).await?;
    if size > s.uploads.upload_max_bytes {
        anyhow::bail!("file is {size} bytes, over the limit of {} (UPLOAD_MAX_BYTES)", s.uploads.upload_max_bytes);
    }
    let revision_of = match replaces {
        Some((_, doc)) if doc.sha256.as_deref() == Some(sha256.as_str()) => {
            return Ok(Uploaded { document_id: doc.id.to_string(), sha256, blob_uri: None, size, revision: doc.latest_revision });
        }
        Some((pool, doc)) => Some(rag_upload::NextRevision {
            document_id: doc.id.to_string(),
            revision: rag_store::documents::allocate_revision(pool, &args.workspace, doc.id, doc.latest_revision).await?,
            replaces_sha256: doc.sha256.clone(),
        }),
        None => None,
    };
    let mut metadata = metadata.clone();
    metadata.insert("source_path".to_string(), path.display().to_string());
    let doc = rag_upload::NewDocument {
        workspace_id: args.workspace.clone(),
        filename: filename.to_string(),
        content_type: content_type.to_string(),
        uploaded_by: args.uploaded_by.clone(),
        metadata,
        producer: format!("rag-engine/cli@{}", env!("CARGO_PKG_VERSION")),
        revision_of,
        event_id: None,
    };
    let event = rag_upload::store_and_announce(blobs, producer, rag_upload::Original { path, size, sha256: &sha256 }, doc).await?;
    Ok(Uploaded { document_id: event.document_id, sha256, blob_uri: Some(event.blob_uri), size, revision: event.revision })
}

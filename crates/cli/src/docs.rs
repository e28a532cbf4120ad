use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;

use rag_app::config::{validate_workspace, BlobSettings, DatabaseSettings, KafkaSettings};

/// A chunk as `docs show --json` prints it: its stored mapping and the
/// boxes of its characters (computed here: the store returns rows only).
#[derive(serde::Serialize)]
struct ChunkShown<'a> {
    #[serde(flatten)]
    mapping: &'a rag_store::raw::ChunkMappingRow,
    boxes: Vec<rag_docparse::PageBox>,
}

#[derive(Subcommand, Debug)]
pub enum DocsCommand {
    /// List a workspace's documents, newest first.
    List {
        #[arg(long, short)]
        workspace: String,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The raw-text viewer: a document's segments with pages and character offsets.
    Segments {
        /// Document id.
        id: uuid::Uuid,
        #[arg(long, short)]
        workspace: String,
        /// Print as JSON (`{document_id, workspace_id, status, segments: [...]}`).
        #[arg(long)]
        json: bool,
    },
    /// Delete a document (produces DocumentDeleted): it leaves search at once; its segments, mappings and blobs follow.
    Delete {
        /// Document id.
        id: uuid::Uuid,
        #[arg(long, short)]
        workspace: String,
        /// Who deletes it (recorded on the event).
        #[arg(long, default_value = "cli")]
        deleted_by: String,
        /// Print `{document_id, event_id}` as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one document; with --page, write a PNG of that PDF page with a
    /// cited span's boxes drawn on it.
    Show {
        /// Document id.
        id: uuid::Uuid,
        #[arg(long, short)]
        workspace: String,
        /// Render this page (1-based) of a PDF to a PNG.
        #[arg(long)]
        page: Option<u32>,
        /// Characters `START-END` of the full text to highlight, e.g. a
        /// citation's `char_start-char_end` (only its boxes on --page are drawn).
        #[arg(long, value_parser = parse_span, requires = "page")]
        highlight: Option<(u64, u64)>,
        /// Where to write the PNG (default: page-N.png in the current directory).
        #[arg(long, requires = "page")]
        out: Option<std::path::PathBuf>,
        /// Rendering resolution of the PNG.
        #[arg(long, default_value_t = 110, requires = "page")]
        dpi: u32,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
}

fn parse_span(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once('-').ok_or_else(|| format!("{s:?} is not START-END"))?;
    let (a, b): (u64, u64) =
        (a.trim().parse().map_err(|_| format!("{a:?} is not a number"))?, b.trim().parse().map_err(|_| format!("{b:?} is not a number"))?);
    if a >= b {
        return Err(format!("the span {a}-{b} is empty"));
    }
    Ok((a, b))
}

fn human_size(n: Option<i64>) -> String {
    let Some(n) = n else { return "-".into() };
    let n = n as f64;
    if n < 1024.0 {
        format!("{n} B")
    } else if n < 1024.0 * 1024.0 {
        format!("{:.1} KiB", n / 1024.0)
    } else {
        format!("{:.1} MiB", n / 1024.0 / 1024.0)
    }
}

/// What `docs` reads: the database, the originals (page images), and the
/// broker a deletion is announced on.
#[derive(clap::Args, Debug)]
pub struct DocsSettings {
    #[command(flatten)]
    pub kafka: KafkaSettings,
    #[command(flatten)]
    pub database: DatabaseSettings,
    #[command(flatten)]
    pub blobs: BlobSettings,
}

pub async fn docs(s: &DocsSettings, cmd: DocsCommand) -> anyhow::Result<ExitCode> {
    let pool = rag_store::connect(&s.database.store()).await.context("connecting to Postgres (DATABASE_URL)")?;
    match cmd {
        DocsCommand::List { workspace, json } => {
            validate_workspace(&workspace)?;
            let rows = rag_store::documents::list(&pool, &workspace).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
                return Ok(ExitCode::SUCCESS);
            }
            if rows.is_empty() {
                println!("no documents in workspace {workspace}");
                return Ok(ExitCode::SUCCESS);
            }
            println!("{:<36}  {:<9}  {:>10}  {:<19}  FILENAME", "ID", "STATUS", "SIZE", "UPLOADED (UTC)");
            for d in &rows {
                let uploaded = d.uploaded_at.map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string()).unwrap_or_default();
                let mut line = format!(
                    "{:<36}  {:<9}  {:>10}  {:<19}  {}",
                    d.id,
                    d.status,
                    human_size(d.size_bytes),
                    uploaded,
                    d.filename.as_deref().unwrap_or("-")
                );
                if let Some(reason) = &d.failure_reason {
                    line.push_str(&format!("  ({reason})"));
                }
                println!("{line}");
            }
            println!("{} document(s)", rows.len());
        }
        DocsCommand::Segments { id, workspace, json } => {
            validate_workspace(&workspace)?;
            let Some(d) = rag_store::documents::get(&pool, &workspace, id).await? else {
                anyhow::bail!("document {id} not found in workspace {workspace}");
            };
            let segments = rag_store::raw::segments(&pool, &workspace, id, None).await?;
            if json {
                let v = serde_json::json!({"document_id": d.id, "workspace_id": d.workspace_id, "status": d.status,
                                           "segments": segments});
                println!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(ExitCode::SUCCESS);
            }
            if segments.is_empty() {
                anyhow::bail!("document {id} has no segments yet (status {})", d.status);
            }
            let noun = match rag_docparse::detect_format(d.content_type.as_deref().unwrap_or(""), d.filename.as_deref().unwrap_or("")) {
                Some(f) if f.is_presentation() => "slide",
                _ => "page",
            };
            let mut page = -1;
            for seg in &segments {
                if seg.page_idx != page {
                    page = seg.page_idx;
                    println!("── {noun} {} ──", page + 1);
                }
                let lines = match (seg.line_start, seg.line_end) {
                    (Some(a), Some(b)) if a == b => format!("  line {a}"),
                    (Some(a), Some(b)) => format!("  lines {a}-{b}"),
                    _ => String::new(),
                };
                let boxes = match seg.boxes.0.len() {
                    0 => String::new(),
                    n => format!("  {n} box(es) from ({:.0}, {:.0})", seg.boxes.0[0].rect.x0, seg.boxes.0[0].rect.y0),
                };
                println!("[{}] {}..{}{lines}{boxes}", seg.segment_index, seg.char_start, seg.char_end);
                for line in seg.text.trim_end().lines() {
                    println!("    {line}");
                }
            }
            println!("{} segment(s), {} character(s)", segments.len(), segments.last().map(|s| s.char_end).unwrap_or(0));
        }
        DocsCommand::Delete { id, workspace, deleted_by, json } => {
            validate_workspace(&workspace)?;
            match rag_store::documents::get(&pool, &workspace, id).await? {
                Some(d) if d.status != rag_store::documents::DocumentStatus::Deleted => {}
                _ => anyhow::bail!("document {id} not found in workspace {workspace}"),
            }
            let producer = rag_bus::EventProducer::new(&s.kafka.client_bus()?, rag_events::Codec::embedded()?, "rag-engine/cli")?;
            let event = rag_events::DocumentDeleted {
                envelope: rag_events::Envelope::originating(&workspace, format!("rag-engine/cli@{}", env!("CARGO_PKG_VERSION"))),
                document_id: id.to_string(),
                deleted_by,
            };
            producer.send(&event).await.context("producing DocumentDeleted (KAFKA_BROKERS)")?;
            if json {
                println!("{}", serde_json::json!({"document_id": id, "event_id": event.envelope.event_id}));
            } else {
                println!("deleted {id} (event {}); the pipeline purges its rows and blobs", event.envelope.event_id);
            }
        }
        DocsCommand::Show { id, workspace, page: Some(page), highlight, out, dpi, json } => {
            validate_workspace(&workspace)?;
            let Some(d) = rag_store::documents::get(&pool, &workspace, id).await? else {
                anyhow::bail!("document {id} not found in workspace {workspace}");
            };
            let out = out.unwrap_or_else(|| format!("page-{page}.png").into());
            let shown = crate::page_png::write(&s.blobs, &pool, &d, page, highlight, dpi, &out).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&shown)?);
            } else {
                println!(
                    "wrote {} (page {page} of {}, {}×{} {})",
                    out.display(),
                    d.filename.as_deref().unwrap_or("-"),
                    shown.page.width,
                    shown.page.height,
                    shown.page.unit
                );
                if let Some((a, b)) = highlight {
                    let lines = match (shown.span.line_start, shown.span.line_end) {
                        (Some(x), Some(y)) if x == y => format!("line {x}"),
                        (Some(x), Some(y)) => format!("lines {x}-{y}"),
                        _ => "lines unknown".into(),
                    };
                    println!("highlighted characters {a}..{b} ({lines}): {} box(es) on this page", shown.drawn.len());
                    for b in &shown.drawn {
                        println!("    ({:.1}, {:.1})-({:.1}, {:.1})", b.x0, b.y0, b.x1, b.y1);
                    }
                }
            }
        }
        DocsCommand::Show { id, workspace, json, .. } => {
            validate_workspace(&workspace)?;
            let Some(d) = rag_store::documents::get(&pool, &workspace, id).await? else {
                anyhow::bail!("document {id} not found in workspace {workspace}");
            };
            let mappings = rag_store::raw::chunk_mappings(&pool, &workspace, id).await?;
            if json {
                // Each active chunk with where its characters are on the
                // pages, from the document's line fragments.
                let segments = rag_store::raw::segments(&pool, &workspace, id, None).await?;
                let fragments: Vec<&rag_docparse::LineFragment> = segments.iter().flat_map(|s| s.boxes.0.iter()).collect();
                let chunks: Vec<ChunkShown> = mappings
                    .iter()
                    .filter(|m| Some(&m.chunking_version) == d.active_chunking_version.as_ref())
                    .map(|mapping| ChunkShown {
                        mapping,
                        boxes: rag_docparse::geometry::span_boxes(
                            fragments.iter().copied(),
                            mapping.char_start as u64,
                            mapping.char_end as u64,
                        ),
                    })
                    .collect();
                let mut v = serde_json::to_value(&d)?;
                v["chunks"] = serde_json::to_value(chunks)?;
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                println!("id:            {}", d.id);
                println!("workspace:     {}", d.workspace_id);
                println!("filename:      {}", d.filename.as_deref().unwrap_or("-"));
                println!("status:        {}", d.status);
                if let Some(r) = &d.failure_reason {
                    println!("failure:       {} ({})", r, d.failure_code.as_deref().unwrap_or("-"));
                }
                println!("content type:  {}", d.content_type.as_deref().unwrap_or("-"));
                println!("size:          {}", human_size(d.size_bytes));
                println!("sha256:        {}", d.sha256.as_deref().unwrap_or("-"));
                println!("blob:          {}", d.blob_uri.as_deref().unwrap_or("-"));
                println!("pages:         {}", d.page_count.map(|p| p.to_string()).unwrap_or("-".into()));
                let pages = |ps: &[i32]| ps.iter().map(|p| (p + 1).to_string()).collect::<Vec<_>>().join(", ");
                if !d.ocr_pages.is_empty() {
                    println!("read by OCR:   page {}", pages(&d.ocr_pages));
                }
                if !d.pages_without_text.is_empty() {
                    println!("no text:       page {} (not searchable)", pages(&d.pages_without_text));
                }
                println!(
                    "chunking:      {} ({} chunks)",
                    d.active_chunking_version.as_deref().unwrap_or("-"),
                    d.chunk_count.map(|c| c.to_string()).unwrap_or("-".into())
                );
                println!("uploaded by:   {}", d.uploaded_by.as_deref().unwrap_or("-"));
                println!("metadata:      {}", d.metadata);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

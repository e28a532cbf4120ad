//! `rag-engine bench ingest`: a generated corpus through the real pipeline
//! (S3, Kafka, every stage, Postgres), timed from the first upload to the
//! last document ingested.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use rag_store::audit::RowProblem;
use rag_store::documents::DocumentStatus;
use rag_store::operations::WorkspaceTotals;
use serde::Serialize;

use crate::config::Settings;
use crate::ingest::{ingest, CorpusItem};

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Upload a generated corpus and measure pages/s and chunks/s to ingested.
    Ingest(IngestArgs),
}

#[derive(Args, Debug)]
pub struct IngestArgs {
    /// Documents to generate.
    #[arg(long, default_value_t = 1000)]
    documents: usize,
    /// Pages per document (Document AI JSON, so pages are real).
    #[arg(long, default_value_t = 3)]
    pages: usize,
    /// Paragraphs per page.
    #[arg(long, default_value_t = 6)]
    paragraphs: usize,
    /// Uploads in flight.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct IngestReport {
    documents: usize,
    failed: i64,
    pages: i64,
    segments: i64,
    chunks: i64,
    embedder: String,
    chunking_profile: String,
    upload_seconds: f64,
    total_seconds: f64,
    documents_per_second: f64,
    pages_per_second: f64,
    chunks_per_second: f64,
    latency_p50_seconds: f64,
    latency_p95_seconds: f64,
    latency_max_seconds: f64,
    /// Exactly once, counted in the read models after the run: documents
    /// not in a terminal state, and row counts that differ from what the
    /// events give (doubled: an effect applied twice; missing: one lost).
    stuck: usize,
    doubled: usize,
    missing: usize,
    /// Segments the generated documents must have (pages x paragraphs each).
    expected_segments: i64,
}

const WORDS: &[&str] = &[
    "doanh", "thu", "lợi", "nhuận", "tăng", "giảm", "năm", "quý", "công", "ty", "cổ", "phần", "tài", "chính", "báo", "cáo", "rủi", "ro",
    "tỷ", "giá", "đồng", "vốn", "chủ", "sở", "hữu", "nợ", "phải", "trả", "the", "revenue", "grew", "market", "share", "export", "margin",
    "quarter", "risk", "interest", "rate", "board", "approved", "dividend",
];

/// Deterministic text (xorshift), Vietnamese and English mixed.
fn paragraph(seed: &mut u64, sentences: usize) -> String {
    let mut next = || {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    };
    let mut out = String::new();
    for _ in 0..sentences {
        let n = 8 + (next() % 12) as usize;
        let words: Vec<&str> = (0..n).map(|_| WORDS[(next() % WORDS.len() as u64) as usize]).collect();
        let mut s = words.join(" ");
        if let Some(first) = s.get(..1) {
            s = first.to_uppercase() + &s[1..];
        }
        out.push_str(&s);
        out.push_str(&format!(" {}.{},{}%. ", next() % 2000, next() % 1000, next() % 100));
    }
    out.trim_end().to_string()
}

/// A Document AI `Document` with `pages` pages of `paragraphs` paragraphs.
fn docai_document(seed: u64, pages: usize, paragraphs: usize) -> Vec<u8> {
    let mut seed = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut text = String::new();
    let mut json_pages = Vec::new();
    for _ in 0..pages {
        let mut paras = Vec::new();
        for _ in 0..paragraphs {
            let p = paragraph(&mut seed, 3);
            let start = text.chars().count();
            text.push_str(&p);
            text.push('\n');
            let end = text.chars().count();
            paras.push(serde_json::json!({"layout": {"textAnchor": {"textSegments": [{"startIndex": start.to_string(), "endIndex": end.to_string()}]}}}));
        }
        json_pages.push(serde_json::json!({"paragraphs": paras}));
    }
    serde_json::to_vec(&serde_json::json!({"text": text, "pages": json_pages})).unwrap_or_default()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

pub async fn bench(s: &Settings, cmd: BenchCommand) -> anyhow::Result<ExitCode> {
    let BenchCommand::Ingest(args) = cmd;
    eprintln!("bench: {} documents x {} pages x {} paragraphs", args.documents, args.pages, args.paragraphs);
    let (pages, paragraphs) = (args.pages, args.paragraphs);
    let run = ingest(s, "bench", args.documents, args.concurrency, args.json, false, move |i| CorpusItem {
        filename: format!("generated-{i}.json"),
        content_type: "application/json",
        bytes: docai_document(i as u64 + 1, pages, paragraphs),
    })
    .await?;
    let (pool, workspace, settled, upload_seconds) = (&run.pool, &run.workspace, run.total_seconds, run.upload_seconds);
    let WorkspaceTotals { failed, pages, segments, chunks } = rag_store::operations::workspace_totals(pool, workspace).await?;
    let latencies = rag_store::operations::settle_seconds(pool, workspace).await?;
    let audits = rag_store::audit::documents(pool, Some(workspace)).await?;
    let stuck = audits.iter().filter(|a| !matches!(a.status, DocumentStatus::Ingested | DocumentStatus::Failed)).count()
        + args.documents.saturating_sub(audits.len());
    let (doubled_rows, missing_rows): (Vec<RowProblem>, Vec<RowProblem>) = audits
        .iter()
        .filter(|a| a.status == DocumentStatus::Ingested)
        .flat_map(|a| a.row_problems())
        .partition(|p| matches!(p, RowProblem::Doubled(_)));
    let doubled = doubled_rows.len() + audits.len().saturating_sub(args.documents);
    let missing = missing_rows.len();
    for p in doubled_rows.iter().chain(&missing_rows).take(10) {
        eprintln!("bench: {p:?}");
    }
    let expected_segments = (args.documents * args.pages * args.paragraphs) as i64;
    let report = IngestReport {
        documents: args.documents,
        failed,
        pages,
        segments,
        chunks,
        embedder: s.embedder.to_string(),
        chunking_profile: s.chunking_profile.clone(),
        upload_seconds,
        total_seconds: settled,
        documents_per_second: args.documents as f64 / settled,
        pages_per_second: pages as f64 / settled,
        chunks_per_second: chunks as f64 / settled,
        latency_p50_seconds: percentile(&latencies, 0.5),
        latency_p95_seconds: percentile(&latencies, 0.95),
        latency_max_seconds: latencies.last().copied().unwrap_or(0.0),
        stuck,
        doubled,
        missing,
        expected_segments,
    };
    let exactly_once = stuck == 0 && doubled == 0 && missing == 0 && segments == expected_segments;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("ingest benchmark ({} embedder, {} chunking)", report.embedder, report.chunking_profile);
        println!("  documents     {} ({} failed)", report.documents, report.failed);
        println!("  pages         {}   segments {}   chunks {}", report.pages, report.segments, report.chunks);
        println!("  uploads done  {:.1} s", report.upload_seconds);
        println!("  all ingested  {:.1} s", report.total_seconds);
        println!(
            "  throughput    {:.1} docs/s   {:.1} pages/s   {:.1} chunks/s",
            report.documents_per_second, report.pages_per_second, report.chunks_per_second
        );
        println!(
            "  upload->ingested latency  p50 {:.2} s   p95 {:.2} s   max {:.2} s",
            report.latency_p50_seconds, report.latency_p95_seconds, report.latency_max_seconds
        );
        println!(
            "  exactly once  {} (stuck {}, doubled {}, missing {}; segments {} of {})",
            if exactly_once { "yes" } else { "NO" },
            report.stuck,
            report.doubled,
            report.missing,
            report.segments,
            report.expected_segments
        );
    }
    Ok(if failed == 0 && exactly_once { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

//! `rag-dev bench ingest`: a generated corpus through the real pipeline
//! (S3, Kafka, every stage, Postgres), timed from the first upload to the
//! last document ingested.

use anyhow::Context;
use clap::Args;
use rag_store::audit::RowProblem;
use rag_store::documents::DocumentStatus;
use rag_store::operations::WorkspaceTotals;
use serde::Serialize;

use crate::ingest::{ingest, CorpusItem, IngestOptions, IngestRun};
use rag_app::config::{EmbedderChoice, Settings};

#[derive(Args, Debug, Clone)]
pub struct IngestArgs {
    /// Documents to generate.
    #[arg(long, default_value_t = 1000)]
    pub documents: usize,
    /// Pages per document (Document AI JSON, so pages are real).
    #[arg(long, default_value_t = 3)]
    pub pages: usize,
    /// Paragraphs per page.
    #[arg(long, default_value_t = 6)]
    pub paragraphs: usize,
    /// Uploads in flight.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// After the ingest, replay its DocumentParsed events onto this chunking profile (e.g. `fine@1`) and time it until every document is ingested on it.
    #[arg(long)]
    pub replay_profile: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct IngestReport {
    pub documents: usize,
    pub failed: i64,
    pub pages: i64,
    pub segments: i64,
    pub chunks: i64,
    pub embedder: String,
    pub chunking_profile: String,
    pub upload_seconds: f64,
    pub total_seconds: f64,
    pub documents_per_second: f64,
    pub pages_per_second: f64,
    pub chunks_per_second: f64,
    pub latency_p50_seconds: f64,
    pub latency_p95_seconds: f64,
    pub latency_max_seconds: f64,
    /// Exactly once, counted in the read models after the run: documents
    /// not in a terminal state, and row counts that differ from what the
    /// events give (doubled: an effect applied twice; missing: one lost).
    pub stuck: usize,
    pub doubled: usize,
    pub missing: usize,
    /// Segments the generated documents must have (pages x paragraphs each).
    pub expected_segments: i64,
    /// With an in-process encoder: the word pieces of every chunk (what
    /// the indexer fed the model) per second of the whole run.
    pub embedded_word_pieces: Option<u64>,
    pub embedded_word_pieces_per_second: Option<f64>,
    /// The encoder alone on the same chunk texts in the same calls (one per
    /// document), timed after the run: what "bound by the encoder" means.
    pub standalone_word_pieces_per_second: Option<f64>,
    /// The in-process encoder's precision (`fp32` or `int8`).
    pub encoder_precision: Option<String>,
    /// With `--replay-profile`: the replay of the run's DocumentParsed
    /// events through the same stages (re-chunked, re-indexed, flipped).
    pub replay: Option<rag_ops::replay::ReplaySummary>,
    pub replay_events_per_second: Option<f64>,
}

impl IngestReport {
    /// Every document settled, none failed, every row exactly once.
    pub fn exactly_once(&self) -> bool {
        self.failed == 0 && self.stuck == 0 && self.doubled == 0 && self.missing == 0 && self.segments == self.expected_segments
    }
}

const WORDS: &[&str] = &[
    "doanh", "thu", "lợi", "nhuận", "tăng", "giảm", "năm", "quý", "công", "ty", "cổ", "phần", "tài", "chính", "báo", "cáo", "rủi", "ro",
    "tỷ", "giá", "đồng", "vốn", "chủ", "sở", "hữu", "nợ", "phải", "trả", "the", "revenue", "grew", "market", "share", "export", "margin",
    "quarter", "risk", "interest", "rate", "board", "approved", "dividend",
];

/// Deterministic text, Vietnamese and English mixed.
fn paragraph(rng: &mut fastrand::Rng, sentences: usize) -> String {
    let mut out = String::new();
    for _ in 0..sentences {
        let n = rng.usize(8..20);
        let words: Vec<&str> = (0..n).map(|_| WORDS[rng.usize(..WORDS.len())]).collect();
        let mut s = words.join(" ");
        if let Some(first) = s.get(..1) {
            s = first.to_uppercase() + &s[1..];
        }
        out.push_str(&s);
        out.push_str(&format!(" {}.{},{}%. ", rng.u32(..2000), rng.u32(..1000), rng.u32(..100)));
    }
    out.trim_end().to_string()
}

/// A Document AI `Document` with `pages` pages of `paragraphs` paragraphs.
pub(crate) fn docai_document(seed: u64, pages: usize, paragraphs: usize) -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut text = String::new();
    let mut json_pages = Vec::new();
    for _ in 0..pages {
        let mut paras = Vec::new();
        for _ in 0..paragraphs {
            let p = paragraph(&mut rng, 3);
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

pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// The generated corpus of `args`, one Document AI JSON per document.
pub(crate) fn corpus(args: &IngestArgs) -> impl Fn(usize) -> CorpusItem + Send + Sync + 'static {
    let (pages, paragraphs) = (args.pages, args.paragraphs);
    move |i| CorpusItem {
        filename: format!("generated-{i}.json"),
        content_type: "application/json",
        bytes: docai_document(i as u64 + 1, pages, paragraphs),
    }
}

/// Ingests the generated corpus with `s`'s embedder, audits the read
/// models, then deletes the run's topics and rows.
pub async fn run(s: &Settings, args: &IngestArgs, quiet: bool) -> anyhow::Result<IngestReport> {
    eprintln!(
        "bench ingest: {} documents x {} pages x {} paragraphs, embedder {}",
        args.documents, args.pages, args.paragraphs, s.embedding.embedder
    );
    let options = IngestOptions { keep_running: args.replay_profile.is_some(), ..IngestOptions::new(args.concurrency, quiet) };
    let run = ingest(s, "bench", args.documents, options, corpus(args)).await?;
    let report = audit(s, args, &run).await;
    let report = match (report, &args.replay_profile) {
        (Ok(mut report), Some(profile)) => {
            let replay = replay(&run, profile, quiet).await;
            report.replay_events_per_second = replay.as_ref().ok().map(|r| r.events_read as f64 / r.duration_seconds.max(1e-3));
            report.replay = replay.as_ref().ok().cloned();
            replay.map(|_| report)
        }
        (report, _) => report,
    };
    run.discard().await;
    report
}

/// Replays the run's DocumentParsed onto `profile` through its still
/// running stages (the operator's re-chunking, `rag-engine replay chunking`).
async fn replay(run: &IngestRun, profile: &str, quiet: bool) -> anyhow::Result<rag_ops::replay::ReplaySummary> {
    eprintln!("bench ingest: replaying the run's DocumentParsed events onto {profile}");
    let args = rag_ops::replay::ChunkingArgs {
        profile: profile.to_string(),
        workspace: Some(run.workspace.clone()),
        documents: Vec::new(),
        timeout: 1800,
        json: quiet,
    };
    let summary = rag_ops::replay::replay_chunking(&run.settings, &args).await?;
    anyhow::ensure!(
        summary.documents_failed_or_deleted == 0 && summary.documents_on_new_version as usize == summary.documents,
        "the replay left {} of {} documents off {profile}",
        summary.documents as i64 - summary.documents_on_new_version,
        summary.documents
    );
    Ok(summary)
}

async fn audit(s: &Settings, args: &IngestArgs, run: &IngestRun) -> anyhow::Result<IngestReport> {
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
    // The word pieces the indexer embedded, and the encoder alone on the
    // same texts in the same calls (one per document, as the indexer makes
    // them), at the ingest's threads and precision: "bound by the encoder"
    // compares with the encoder's own speed on this work, whose chunks are
    // longer than the encoder part's 128 pieces (attention grows with it).
    let (embedded_word_pieces, standalone) = if s.embedding.embedder_choice() == EmbedderChoice::Local {
        let documents = rag_store::operations::chunk_contents(pool, workspace).await?;
        let dir = s.embedding.model_dir().context("EMBEDDER=local without EMBEDDING_MODEL_DIR")?.to_path_buf();
        let (threads, precision) = (s.embedding.embedding_threads, s.embedding.embedding_precision.resolve());
        // As the indexer gives them (`passage: ` first for e5).
        let convention = s.embedding.embedding_input_convention.resolve(rag_bert::is_packed_model_dir(&dir));
        let documents: Vec<Vec<String>> = documents
            .iter()
            .map(|d| d.iter().map(|t| convention.text(rag_embed::InputKind::Passage, t.trim()).into_owned()).collect())
            .collect();
        let (pieces, standalone) = tokio::task::spawn_blocking(move || -> anyhow::Result<(u64, f64)> {
            let encoder = rag_bert::SentenceEncoder::load_with(&dir, threads, precision)?;
            let mut pieces = 0u64;
            for t in documents.iter().flatten() {
                pieces += encoder.token_ids(t)?.len() as u64;
            }
            let calls: Vec<Vec<&str>> = documents.iter().map(|d| d.iter().map(String::as_str).collect()).collect();
            if let Some(first) = calls.first() {
                encoder.encode(first)?;
            }
            let start = std::time::Instant::now();
            for call in &calls {
                encoder.encode(call)?;
            }
            Ok((pieces, pieces as f64 / start.elapsed().as_secs_f64().max(1e-9)))
        })
        .await??;
        (Some(pieces), Some(standalone))
    } else {
        (None, None)
    };
    Ok(IngestReport {
        documents: args.documents,
        failed,
        pages,
        segments,
        chunks,
        embedder: s.embedding.embedder.to_string(),
        chunking_profile: s.parsing.chunking_profile.clone(),
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
        expected_segments: (args.documents * args.pages * args.paragraphs) as i64,
        embedded_word_pieces,
        embedded_word_pieces_per_second: embedded_word_pieces.map(|p| p as f64 / settled),
        standalone_word_pieces_per_second: standalone,
        encoder_precision: (s.embedding.embedder_choice() == EmbedderChoice::Local)
            .then(|| s.embedding.embedding_precision.resolve().as_str().to_string()),
        replay: None,
        replay_events_per_second: None,
    })
}

pub fn print(report: &IngestReport) {
    println!("ingest ({} embedder, {} chunking)", report.embedder, report.chunking_profile);
    println!("  documents     {} ({} failed)", report.documents, report.failed);
    println!("  pages         {}   segments {}   chunks {}", report.pages, report.segments, report.chunks);
    println!("  uploads done  {:.1} s", report.upload_seconds);
    println!("  all ingested  {:.1} s", report.total_seconds);
    println!(
        "  throughput    {:.1} docs/s   {:.1} pages/s   {:.1} chunks/s",
        report.documents_per_second, report.pages_per_second, report.chunks_per_second
    );
    if let (Some(p), Some(rate)) = (report.embedded_word_pieces, report.embedded_word_pieces_per_second) {
        let precision = report.encoder_precision.as_deref().unwrap_or("?");
        println!("  embedded      {p} word pieces, {rate:.0} word pieces/s ({precision})");
        if let Some(alone) = report.standalone_word_pieces_per_second {
            println!(
                "  encoder alone {alone:.0} word pieces/s on the same chunks and calls: the ingest ran at {:.0}%",
                100.0 * rate / alone
            );
        }
    }
    if let (Some(r), Some(rate)) = (&report.replay, report.replay_events_per_second) {
        println!(
            "  replay        {} DocumentParsed events onto {} ({} chunks) in {:.1} s: {rate:.1} events/s",
            r.events_read, r.profile, r.chunks, r.duration_seconds
        );
    }
    println!(
        "  upload->ingested latency  p50 {:.2} s   p95 {:.2} s   max {:.2} s",
        report.latency_p50_seconds, report.latency_p95_seconds, report.latency_max_seconds
    );
    println!(
        "  exactly once  {} (stuck {}, doubled {}, missing {}; segments {} of {})",
        if report.exactly_once() { "yes" } else { "NO" },
        report.stuck,
        report.doubled,
        report.missing,
        report.segments,
        report.expected_segments
    );
}

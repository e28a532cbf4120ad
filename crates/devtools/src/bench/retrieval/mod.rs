//! `rag-dev bench retrieval`: query latency as the index grows.
//!
//! A fixture of N generated chunks is written through the same store
//! functions the projector and the indexer use (DocumentUploaded,
//! `replace_index`, DocumentIngested), so the rows, indexes and eligibility
//! rules are the real ones. Chunk texts draw words from a Zipf-distributed
//! vocabulary (Vietnamese syllables and English words), so a few terms are
//! in most chunks as in real text; each chunk's vector is the normalised
//! sum of fixed random vectors of its words, so similar texts are near one
//! another as with a real encoder. Queries are a few words of a fixture
//! chunk, and each is timed end to end through the retriever (query
//! embedding with the configured encoder included). From 1,000,000 chunks
//! the fixture is spread over one workspace per 10,000 chunks, and queries
//! go round the workspaces.

use std::time::Instant;

use anyhow::Context;
use clap::Args;
use futures::{StreamExt, TryStreamExt};
use indicatif::{ProgressBar, ProgressStyle};
use rag_search::retriever::{Mode, Retriever};
use serde::Serialize;

mod fixture;

pub use fixture::drop_fixtures;
pub(crate) use fixture::write_fixture_files;
use fixture::{ensure_workspace, query_texts, workspace_name, workspaces_for, Generator};

use super::ingest::percentile;
use rag_app::config::Settings;

#[derive(Args, Debug, Clone)]
pub struct RetrievalArgs {
    /// Index sizes in chunks (from 1000000 on, spread over one workspace per 10000 chunks).
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    pub sizes: Vec<usize>,
    /// Queries timed per size and mode (after 10 warm-up queries).
    #[arg(long, default_value_t = 200)]
    pub queries: usize,
    /// Keep the fixtures for the next run (building 100,000 chunks takes minutes); drop them with --drop-fixtures.
    #[arg(long)]
    pub keep_fixtures: bool,
    /// Delete every kept fixture and exit.
    #[arg(long)]
    pub drop_fixtures: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ModeLatency {
    pub mode: String,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RetrievalReport {
    pub chunks: usize,
    pub workspaces: usize,
    pub queries: usize,
    pub top_k: usize,
    /// Whether hybrid had a dense side (EMBEDDER other than none).
    pub dense: bool,
    pub fixture_seconds: Option<f64>,
    /// Where BM25 was scored (LEXICAL_INDEX).
    pub lexical_index: String,
    /// First query of each workspace with the in-memory index (its load),
    /// before the timed queries: p50 and max, ms.
    pub index_load_ms: Option<(f64, f64)>,
    pub modes: Vec<ModeLatency>,
}

impl RetrievalReport {
    pub fn hybrid(&self) -> Option<&ModeLatency> {
        self.modes.iter().find(|m| m.mode == "hybrid")
    }
}

/// Each query with the workspace it goes to.
async fn time_queries(retriever: &Retriever, queries: &[(&str, String)], top_k: usize, mode: Mode) -> anyhow::Result<ModeLatency> {
    let mut ms = Vec::with_capacity(queries.len());
    for (i, (ws, q)) in queries.iter().enumerate() {
        let start = Instant::now();
        let result = retriever.retrieve(ws, q, top_k, &[], mode).await?;
        let elapsed = start.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(!result.chunks.is_empty(), "no result for {q:?} in {ws} ({mode:?}): the fixture is incomplete");
        // The first ten warm the caches and the connection pool.
        if i >= 10 {
            ms.push(elapsed);
        }
    }
    ms.sort_by(f64::total_cmp);
    Ok(ModeLatency {
        mode: format!("{mode:?}").to_lowercase(),
        p50_ms: percentile(&ms, 0.5),
        p99_ms: percentile(&ms, 0.99),
        max_ms: ms.last().copied().unwrap_or(0.0),
    })
}

pub async fn run(s: &Settings, args: &RetrievalArgs, quiet: bool) -> anyhow::Result<Vec<RetrievalReport>> {
    let pool = rag_store::connect(&s.store()).await.context("connecting to Postgres (DATABASE_URL)")?;
    rag_store::migrate(&pool).await?;
    let embedder = s.embedder()?;
    let model = embedder.identity().map(|(m, d)| (m.to_string(), d));
    if let Some((m, d)) = &model {
        rag_store::pipeline::ensure_vector_index(&pool, m, *d).await?;
    }
    let retriever = s.retrieval.retriever_with(&s.embedding, pool.clone(), embedder)?;
    let generator = Generator::new(30_000, model.as_ref().map(|(_, d)| *d).unwrap_or(0));
    let top_k = s.retrieval.retrieval_top_k.max(1);
    let mut reports = Vec::new();
    for &size in &args.sizes {
        let spread = workspaces_for(size);
        let per_workspace = size / spread;
        let workspaces: Vec<String> = (0..spread).map(|i| workspace_name(size, i)).collect();
        eprintln!("bench retrieval: {size} chunks in {spread} workspace(s)");
        let bar = ProgressBar::new(size as u64);
        if quiet {
            bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} chunks ({per_sec}, eta {eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let started = Instant::now();
        // Two workspaces at a time: one Postgres backend inserting into the
        // HNSW index left a core idle (a 1,000,000-chunk build, 45% idle).
        let m = model.as_ref().map(|(m, d)| (m.as_str(), *d));
        let built_each: Vec<bool> = futures::stream::iter(workspaces.iter().enumerate())
            .map(|(i, ws)| ensure_workspace(&pool, &generator, ws, i * per_workspace, per_workspace, m, &bar))
            .buffer_unordered(2)
            .try_collect()
            .await?;
        let built = built_each.into_iter().any(|b| b);
        bar.finish_and_clear();
        let fixture_seconds = if built {
            rag_store::operations::analyze_search_tables(&pool).await?;
            Some(started.elapsed().as_secs_f64())
        } else {
            eprintln!("bench retrieval: reusing the kept fixture");
            None
        };
        // Queries: four words of a fixture chunk each, from all over the
        // fixture, asked in the workspace that holds the chunk; English
        // ones, which the local encoder reads (a Vietnamese query is
        // lexical only with it: EMBEDDING_LANGUAGES).
        let queries: Vec<(&str, String)> = query_texts(&generator, size, args.queries + 10)
            .into_iter()
            .map(|(chunk, text)| (workspaces[(chunk / per_workspace).min(spread - 1)].as_str(), text))
            .collect();
        // Each workspace's in-memory index is loaded by its first query:
        // timed here, apart from the steady state.
        let index_load_ms = if retriever.search_index.is_some() {
            let mut ms = Vec::with_capacity(workspaces.len());
            for ws in &workspaces {
                let start = Instant::now();
                retriever.retrieve(ws, &queries[0].1, top_k, &[], Mode::Lexical).await?;
                ms.push(start.elapsed().as_secs_f64() * 1000.0);
            }
            ms.sort_by(f64::total_cmp);
            Some((percentile(&ms, 0.5), ms.last().copied().unwrap_or(0.0)))
        } else {
            None
        };
        if let Some((p50, max)) = index_load_ms {
            eprintln!("  search index loads: p50 {p50:.0} ms, max {max:.0} ms per workspace");
        }
        let mut modes = Vec::new();
        let dense = model.is_some();
        for mode in [Mode::Lexical, Mode::Dense, Mode::Hybrid] {
            if mode == Mode::Dense && !dense {
                continue;
            }
            let latency = time_queries(&retriever, &queries, top_k, mode).await?;
            eprintln!("  {:<8} p50 {:.1} ms  p99 {:.1} ms", latency.mode, latency.p50_ms, latency.p99_ms);
            modes.push(latency);
        }
        reports.push(RetrievalReport {
            chunks: size,
            workspaces: spread,
            queries: args.queries,
            top_k,
            dense,
            fixture_seconds,
            lexical_index: s.retrieval.lexical_index.to_string(),
            index_load_ms,
            modes,
        });
        if !args.keep_fixtures {
            eprintln!("bench retrieval: deleting the fixture (--keep-fixtures keeps it for the next run)");
            for ws in &workspaces {
                rag_store::operations::delete_workspace_rows(&pool, ws).await?;
            }
        }
    }
    Ok(reports)
}

pub fn print(reports: &[RetrievalReport]) {
    for r in reports {
        println!(
            "retrieval at {} chunks ({} workspace(s), top {}, {} queries, BM25 in {}{})",
            r.chunks,
            r.workspaces,
            r.top_k,
            r.queries,
            r.lexical_index,
            if r.dense { "" } else { ", lexical only: EMBEDDER=none" }
        );
        if let Some((p50, max)) = r.index_load_ms {
            println!("  search index load (first query of a workspace): p50 {p50:.0} ms, max {max:.0} ms");
        }
        for m in &r.modes {
            println!("  {:<8} p50 {:>7.1} ms   p99 {:>7.1} ms   max {:>7.1} ms", m.mode, m.p50_ms, m.p99_ms, m.max_ms);
        }
    }
}

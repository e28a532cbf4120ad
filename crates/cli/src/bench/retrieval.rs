//! `rag-engine bench retrieval`: query latency as the index grows.
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
use fastrand::Rng;
use futures::{StreamExt, TryStreamExt};
use indicatif::{ProgressBar, ProgressStyle};
use rag_chunking::Chunk;
use rag_events::{DocumentIngested, DocumentUploaded, Envelope};
use rag_stages::retriever::{Mode, Retriever};
use rag_store::pipeline::IndexedChunk;
use rag_store::sqlx::PgPool;
use serde::Serialize;

use super::ingest::percentile;
use crate::config::Settings;

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

/// Bumped whenever the generator changes, so an old fixture is not reused.
// 2: drawn with fastrand (was a hand-written xorshift): other texts, so
// other workspaces; a fixture of version 1 is not reused.
const FIXTURE_VERSION: u32 = 2;
const CHUNKS_PER_DOCUMENT: usize = 10;
const WORDS_PER_CHUNK: usize = 110;
const CHUNKS_PER_WORKSPACE_AT_SCALE: usize = 10_000;
const CHUNKING_VERSION: &str = "bench-fixture";

fn workspaces_for(chunks: usize) -> usize {
    if chunks >= 1_000_000 {
        chunks / CHUNKS_PER_WORKSPACE_AT_SCALE
    } else {
        1
    }
}

fn workspace_name(chunks: usize, i: usize) -> String {
    format!("bench-retrieval-v{FIXTURE_VERSION}-{chunks}-{i:03}")
}

/// The fixture's vocabulary, its Zipf distribution and a random vector per word.
struct Generator {
    words: Vec<String>,
    cumulative: Vec<f64>,
    vectors: Vec<Vec<f32>>,
}

const ONSETS: &[&str] =
    &["b", "c", "ch", "d", "đ", "g", "h", "k", "kh", "l", "m", "n", "ng", "nh", "ph", "qu", "r", "s", "t", "th", "tr", "v", "x"];
const NUCLEI: &[&str] = &["a", "e", "i", "o", "u", "ai", "ea", "ou", "io", "ee", "oa"];
const VI_NUCLEI: &[&str] = &["ă", "â", "ê", "ô", "ơ", "ư", "ươ", "iê", "uô", "á", "ạ", "ó", "ờ", "ủ", "ễ"];
const CODAS: &[&str] = &["", "", "c", "m", "n", "ng", "nh", "p", "t", "ch", "i", "o"];
const ENGLISH: &[&str] = &[
    "the", "of", "and", "revenue", "growth", "market", "risk", "interest", "rate", "board", "approved", "dividend", "export", "margin",
    "quarter", "report", "capital", "debt", "equity", "flow", "pressure", "boundary", "layer", "heat", "transfer", "wing", "tunnel",
];

impl Generator {
    fn new(vocabulary: usize, dimension: usize) -> Self {
        let mut words: Vec<String> = Vec::with_capacity(vocabulary);
        let mut seen = std::collections::HashSet::new();
        let mut rng = Rng::with_seed(0x005e_ed0f_ba5e);
        for w in ENGLISH {
            if seen.insert(w.to_string()) {
                words.push(w.to_string());
            }
        }
        while words.len() < vocabulary {
            let pick = |rng: &mut Rng, set: &[&str]| set[rng.usize(..set.len())].to_string();
            // One word in four Vietnamese, the rest ASCII pseudo-words.
            let nuclei = if rng.usize(..4) == 0 { VI_NUCLEI } else { NUCLEI };
            let mut w = pick(&mut rng, ONSETS) + &pick(&mut rng, nuclei) + &pick(&mut rng, CODAS);
            if rng.usize(..4) == 0 {
                w += &pick(&mut rng, ENGLISH);
            }
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        // Zipf with exponent 1: word r (from 1) has weight 1/r.
        let mut cumulative = Vec::with_capacity(words.len());
        let mut total = 0.0;
        for r in 1..=words.len() {
            total += 1.0 / r as f64;
            cumulative.push(total);
        }
        for c in &mut cumulative {
            *c /= total;
        }
        let vectors = (0..if dimension == 0 { 0 } else { words.len() })
            .map(|i| {
                let mut rng = Rng::with_seed(0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1));
                (0..dimension).map(|_| (rng.f64() * 2.0 - 1.0) as f32).collect()
            })
            .collect();
        Generator { words, cumulative, vectors }
    }

    fn word(&self, rng: &mut Rng) -> usize {
        let u = rng.f64();
        self.cumulative.partition_point(|c| *c < u).min(self.words.len() - 1)
    }

    /// Word indexes of chunk `seed`.
    fn chunk_words(&self, seed: u64, n: usize) -> Vec<usize> {
        let mut rng = Rng::with_seed(seed);
        (0..n).map(|_| self.word(&mut rng)).collect()
    }

    fn text(&self, words: &[usize]) -> String {
        words.iter().map(|w| self.words[*w].as_str()).collect::<Vec<_>>().join(" ")
    }

    fn vector(&self, words: &[usize], dimension: usize) -> Option<Vec<f32>> {
        if dimension == 0 {
            return None;
        }
        let mut v = vec![0f32; dimension];
        for w in words {
            for (x, y) in v.iter_mut().zip(&self.vectors[*w]) {
                *x += y;
            }
        }
        rag_embed::l2_normalize(&mut v);
        Some(v)
    }
}

/// `n` queries over a fixture of `size` chunks: four words of a fixture
/// chunk each, from all over the fixture, with the chunk's index (the
/// query is asked in the workspace that holds it). English ones, which the
/// local encoder reads (a Vietnamese query is lexical only with it:
/// EMBEDDING_LANGUAGES).
fn query_texts(generator: &Generator, size: usize, n: usize) -> Vec<(usize, String)> {
    (0..n)
        .map(|q| {
            let chunk = (q * 7919) % size;
            let words = generator.chunk_words(chunk as u64 + 1, WORDS_PER_CHUNK);
            let mut rng = Rng::with_seed(chunk as u64 ^ 0xABCD);
            let mut text = String::new();
            for _ in 0..50 {
                let picked: Vec<usize> = (0..4).map(|_| words[rng.usize(..words.len())]).collect();
                text = generator.text(&picked);
                if rag_retrieval::detect_language(&text) == rag_retrieval::Language::En {
                    break;
                }
            }
            (chunk, text)
        })
        .collect()
}

/// The fixture of `size` chunks and its queries as files, for the
/// LlamaIndex side of the bench: `chunks.jsonl` (one JSON string per
/// chunk, in fixture order), `vectors.f32` (little-endian, `dimension` per
/// chunk; empty when 0) and `fixture.json` (`dimension`, `queries`).
pub(crate) fn write_fixture_files(dir: &std::path::Path, size: usize, queries: usize, dimension: usize) -> anyhow::Result<()> {
    use std::io::Write;
    std::fs::create_dir_all(dir)?;
    let generator = Generator::new(30_000, dimension);
    let mut chunks = std::io::BufWriter::new(std::fs::File::create(dir.join("chunks.jsonl"))?);
    let mut vectors = std::io::BufWriter::new(std::fs::File::create(dir.join("vectors.f32"))?);
    for g in 0..size {
        let words = generator.chunk_words(g as u64 + 1, WORDS_PER_CHUNK);
        serde_json::to_writer(&mut chunks, &generator.text(&words))?;
        chunks.write_all(b"\n")?;
        for x in generator.vector(&words, dimension).unwrap_or_default() {
            vectors.write_all(&x.to_le_bytes())?;
        }
    }
    chunks.flush()?;
    vectors.flush()?;
    let queries: Vec<String> = query_texts(&generator, size, queries + 10).into_iter().map(|(_, q)| q).collect();
    std::fs::write(dir.join("fixture.json"), serde_json::to_vec(&serde_json::json!({"dimension": dimension, "queries": queries}))?)?;
    Ok(())
}

/// Writes one fixture workspace unless it is already complete.
async fn ensure_workspace(
    pool: &PgPool,
    generator: &Generator,
    workspace: &str,
    first_chunk: usize,
    chunks: usize,
    model: Option<(&str, usize)>,
    bar: &ProgressBar,
) -> anyhow::Result<bool> {
    // Reused when complete and embedded with the same model; a lexical-only
    // run (no model) reuses any complete one: the texts come from the same
    // seeds whatever the model, and it searches no vectors (rebuilding an
    // embedded fixture for it cost the next run with the encoder a rebuild
    // of its own: minutes at 100,000 chunks).
    let (have, same_model) = rag_store::operations::chunk_count(pool, workspace, model.map(|(m, _)| m)).await?;
    if have == chunks as i64 && (model.is_none() || same_model == have) {
        bar.inc(chunks as u64);
        return Ok(false);
    }
    if have > 0 {
        // Say why a kept fixture is not reused (a run with another EMBEDDER
        // rebuilds it, and the next run with this one rebuilds it again).
        eprintln!(
            "bench retrieval: rebuilding {workspace}: it holds {have} chunks, {same_model} of them embedded with {}; {chunks} wanted",
            model.map_or("no model".to_string(), |(m, _)| m.to_string())
        );
    }
    rag_store::operations::delete_workspace_rows(pool, workspace).await?;
    let dimension = model.map(|(_, d)| d).unwrap_or(0);
    let documents = chunks.div_ceil(CHUNKS_PER_DOCUMENT);
    // Fifty documents per transaction: fewer commits, same rows.
    for batch in (0..documents).collect::<Vec<_>>().chunks(50) {
        let mut tx = pool.begin().await?;
        for d in batch {
            let document_id = uuid::Uuid::new_v4().to_string();
            let uploaded = DocumentUploaded {
                envelope: Envelope::originating(workspace, "rag-engine/bench"),
                document_id: document_id.clone(),
                blob_uri: format!("s3://bench-fixture/{workspace}/{d}"),
                filename: format!("fixture-{d}.txt"),
                content_type: "text/plain".into(),
                size_bytes: 0,
                sha256: String::new(),
                uploaded_by: "bench".into(),
                metadata: Default::default(),
            };
            rag_store::documents::apply_uploaded(&mut tx, &uploaded).await?;
            let mut owned: Vec<(Chunk, Option<Vec<f32>>)> = Vec::new();
            let mut offset = 0u64;
            for c in 0..CHUNKS_PER_DOCUMENT.min(chunks - d * CHUNKS_PER_DOCUMENT) {
                let seed = (first_chunk + d * CHUNKS_PER_DOCUMENT + c) as u64 + 1;
                let words = generator.chunk_words(seed, WORDS_PER_CHUNK);
                let text = generator.text(&words);
                let len = text.chars().count() as u64;
                owned.push((
                    Chunk {
                        chunk_id: rag_chunking::chunk_id(&document_id, CHUNKING_VERSION, offset, &text),
                        chunk_index: c as u32,
                        token_count: WORDS_PER_CHUNK as u32,
                        page_start: c as u32,
                        page_end: c as u32,
                        segment_start_index: c as u32,
                        segment_end_index: c as u32,
                        char_start: offset,
                        char_end: offset + len,
                        line_start: None,
                        line_end: None,
                        text,
                    },
                    generator.vector(&words, dimension),
                ));
                offset += len + 1;
            }
            let indexed: Vec<IndexedChunk<'_>> = owned
                .iter()
                .map(|(chunk, embedding)| {
                    let (terms, term_count) = rag_lexical::document_terms(&chunk.text, rag_retrieval::document_analysis(&chunk.text));
                    IndexedChunk { chunk, terms, term_count, embedding: embedding.clone() }
                })
                .collect();
            let at = chrono::Utc::now();
            rag_store::pipeline::replace_index(&mut tx, workspace, &document_id, CHUNKING_VERSION, model.map(|(m, _)| m), &indexed, at)
                .await?;
            let ingested = DocumentIngested {
                envelope: Envelope::originating(workspace, "rag-engine/bench"),
                document_id,
                chunking_version: CHUNKING_VERSION.into(),
                embedding_model: model.map(|(m, _)| m.to_string()),
                embedding_dimension: model.map(|(_, d)| d as i32),
                chunk_count: owned.len() as i32,
                failure: None,
            };
            rag_store::pipeline::apply_ingested(&mut tx, &ingested).await?;
            bar.inc(owned.len() as u64);
        }
        tx.commit().await?;
    }
    Ok(true)
}

/// Deletes every fixture workspace this command ever kept.
pub async fn drop_fixtures(pool: &PgPool) -> anyhow::Result<usize> {
    let workspaces = rag_store::operations::workspaces_with_prefix(pool, "bench-retrieval-").await?;
    for ws in &workspaces {
        eprintln!("dropping {ws}");
        rag_store::operations::delete_workspace_rows(pool, ws).await?;
    }
    Ok(workspaces.len())
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
    let retriever = s.retriever_with(pool.clone(), embedder)?;
    let generator = Generator::new(30_000, model.as_ref().map(|(_, d)| *d).unwrap_or(0));
    let top_k = s.retrieval_top_k.max(1);
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
            lexical_index: s.lexical_index.to_string(),
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

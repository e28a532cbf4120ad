//! Part `llamaindex` of `rag-dev bench`: the same corpus through
//! LlamaIndex in the same run, and the ratios.
//!
//! The bench writes what it measured itself as files (the generated
//! Document AI documents of the ingest parts, the encoder's texts, the
//! retrieval fixtures with their vectors and queries), then runs
//! `scripts/llamaindex-bench` (which creates its virtualenv the first time)
//! on them with the same model directory, and reads its JSON. Ratios are
//! "how many times ahead rag-engine is": ours / theirs for rates,
//! theirs / ours for latencies, so above 1 means ahead.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::{encoder, ingest, retrieval, FullReport};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TheirEncoder {
    pub word_pieces_per_second: f64,
    pub texts_per_second: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TheirIngest {
    pub documents: usize,
    pub pages: usize,
    pub chunks: usize,
    pub seconds: f64,
    pub pages_per_second: f64,
    pub chunks_per_second: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TheirLatency {
    pub mode: String,
    /// Queries timed (a mode stops at its time budget).
    pub queries: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TheirRetrieval {
    pub chunks: usize,
    pub build_seconds: f64,
    pub modes: Vec<TheirLatency>,
}

/// What scripts/llamaindex_bench.py prints.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LlamaIndexRun {
    pub versions: serde_json::Value,
    pub threads: usize,
    pub encoder: TheirEncoder,
    pub ingest_lexical: TheirIngest,
    pub ingest_embeddings: TheirIngest,
    pub retrieval: Vec<TheirRetrieval>,
}

/// One line of the side-by-side table.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub what: String,
    pub unit: &'static str,
    pub ours: Option<f64>,
    pub llamaindex: Option<f64>,
    /// Above 1: rag-engine is ahead by that factor.
    pub ratio: Option<f64>,
    pub ahead: bool,
}

/// Inputs of the LlamaIndex run, the same as the bench's own parts.
pub struct Inputs<'a> {
    /// The sentence-transformers directory both sides embed with.
    pub model_dir: &'a Path,
    pub threads: usize,
    pub encoder: &'a encoder::EncoderArgs,
    pub ingest: &'a ingest::IngestArgs,
    pub embedding_documents: usize,
    pub sizes: &'a [usize],
    pub queries: usize,
    pub top_k: usize,
    pub candidates: usize,
}

/// Largest fixture LlamaIndex is given: its vector store keeps every
/// vector as a Python list and scans them in Python.
pub const MAX_CHUNKS: usize = 100_000;

fn script() -> PathBuf {
    let here = Path::new("scripts/llamaindex-bench");
    if here.exists() {
        return here.to_path_buf();
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/llamaindex-bench")
}

pub async fn run(inputs: &Inputs<'_>) -> anyhow::Result<LlamaIndexRun> {
    let model_dir = inputs.model_dir;
    // LlamaIndex loads a sentence-transformers directory; the packed 4-bit
    // e5 file (the default model) has no loader there.
    anyhow::ensure!(
        !rag_bert::is_packed_model_dir(model_dir),
        "the LlamaIndex comparison needs a sentence-transformers model on both sides: EMBEDDING_MODEL_DIR=$MINILM_MODEL_DIR (the packed multilingual-e5 has no LlamaIndex loader)"
    );
    let dir = std::env::temp_dir().join(format!("rag-bench-llamaindex-{}", uuid::Uuid::new_v4()));
    eprintln!("bench llamaindex: writing the corpus to {}", dir.display());
    let result = corpus_and_run(&dir, inputs).await;
    // Up to a few hundred MB of vectors: removed whatever happened.
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn corpus_and_run(dir: &Path, inputs: &Inputs<'_>) -> anyhow::Result<LlamaIndexRun> {
    write_corpus(dir, inputs).await?;
    let script = script();
    eprintln!("bench llamaindex: {} (progress below)", script.display());
    let output = tokio::process::Command::new(&script)
        .arg("--corpus")
        .arg(dir)
        .arg("--model")
        .arg(inputs.model_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        // Its progress (and a first-time install) shows as it happens;
        // `output()` would capture it.
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("running {}", script.display()))?
        .wait_with_output()
        .await?;
    anyhow::ensure!(output.status.success(), "{} failed ({})", script.display(), output.status);
    serde_json::from_slice(&output.stdout).with_context(|| format!("reading the JSON of {}", script.display()))
}

async fn write_corpus(dir: &Path, inputs: &Inputs<'_>) -> anyhow::Result<()> {
    let ingest_dir = dir.join("ingest");
    std::fs::create_dir_all(&ingest_dir)?;
    let documents = inputs.ingest.documents.max(inputs.embedding_documents);
    let corpus = ingest::corpus(inputs.ingest);
    for i in 0..documents {
        let item = corpus(i);
        std::fs::write(ingest_dir.join(&item.filename), &item.bytes)?;
    }
    let model_dir = PathBuf::from(inputs.model_dir);
    let encoder_args = inputs.encoder.clone();
    // The fixtures' vectors have the model's dimension, as the bench's own.
    let (texts, dimension) = tokio::task::spawn_blocking(move || encoder::bench_texts(&model_dir, &encoder_args)).await??;
    for &size in inputs.sizes.iter().filter(|s| **s <= MAX_CHUNKS) {
        let dir = dir.join("retrieval").join(size.to_string());
        let queries = inputs.queries;
        eprintln!("bench llamaindex: writing the {size}-chunk fixture");
        tokio::task::spawn_blocking(move || retrieval::write_fixture_files(&dir, size, queries, dimension)).await??;
    }
    let corpus_json = serde_json::json!({
        "threads": inputs.threads,
        "encoder": {"texts": texts, "batch": inputs.encoder.batch, "seconds": inputs.encoder.seconds},
        "ingest": {"lexical_documents": inputs.ingest.documents, "embedding_documents": inputs.embedding_documents},
        "retrieval": {"top_k": inputs.top_k, "candidates": inputs.candidates},
    });
    std::fs::write(dir.join("corpus.json"), serde_json::to_vec(&corpus_json)?)?;
    Ok(())
}

/// The side-by-side lines from this run's own parts and LlamaIndex's.
pub fn compare(ours: &FullReport, theirs: &LlamaIndexRun) -> Vec<Comparison> {
    let rate = |what: String, unit, ours: Option<f64>, theirs: Option<f64>| {
        let ratio = ours.zip(theirs).filter(|(_, t)| *t > 0.0).map(|(o, t)| o / t);
        Comparison { what, unit, ours, llamaindex: theirs, ratio, ahead: ratio.is_some_and(|r| r > 1.0) }
    };
    let latency = |what: String, ours: Option<f64>, theirs: Option<f64>| {
        let ratio = ours.zip(theirs).filter(|(o, _)| *o > 0.0).map(|(o, t)| t / o);
        Comparison { what, unit: "ms", ours, llamaindex: theirs, ratio, ahead: ratio.is_some_and(|r| r > 1.0) }
    };
    let mut lines = vec![
        rate(
            "lexical ingest".into(),
            "pages/s",
            ours.ingest_lexical.as_ref().map(|i| i.pages_per_second),
            Some(theirs.ingest_lexical.pages_per_second),
        ),
        rate(
            "ingest with embeddings".into(),
            "pages/s",
            ours.ingest_embeddings.as_ref().map(|i| i.pages_per_second),
            Some(theirs.ingest_embeddings.pages_per_second),
        ),
    ];
    if let Some(e) = &ours.encoder {
        let torch = Some(theirs.encoder.word_pieces_per_second);
        lines.push(rate("encoder fp32 (theirs: torch fp32)".into(), "word pieces/s", Some(e.fp32_word_pieces_per_second), torch));
        lines.push(rate("encoder int8 (theirs: torch fp32)".into(), "word pieces/s", e.int8_word_pieces_per_second, torch));
    }
    for t in &theirs.retrieval {
        let Some(o) = ours.retrieval.iter().find(|r| r.chunks == t.chunks && r.workspaces == 1) else { continue };
        for tm in &t.modes {
            let Some(om) = o.modes.iter().find(|m| m.mode == tm.mode) else { continue };
            lines.push(latency(format!("{} p50 at {} chunks", tm.mode, t.chunks), Some(om.p50_ms), Some(tm.p50_ms)));
            lines.push(latency(format!("{} p99 at {} chunks", tm.mode, t.chunks), Some(om.p99_ms), Some(tm.p99_ms)));
        }
    }
    lines
}

pub fn print(theirs: &LlamaIndexRun, lines: &[Comparison]) {
    let version = |key: &str| theirs.versions.get(key).and_then(|v| v.as_str()).unwrap_or("?").to_string();
    println!(
        "side by side with LlamaIndex (llama-index-core {}, torch {}, {} threads; same corpus, same model directory)",
        version("llama_index_core"),
        version("torch"),
        theirs.threads
    );
    println!("  {:<42} {:>14} {:>14} {:>9}", "", "rag-engine", "LlamaIndex", "ahead by");
    for l in lines {
        let show = |v: Option<f64>| v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into());
        let ratio = l.ratio.map(|r| format!("x{r:.2}")).unwrap_or_else(|| "-".into());
        let verdict = match (l.ratio, l.ahead) {
            (None, _) => "not compared",
            (Some(_), true) => "",
            (Some(_), false) => "BEHIND",
        };
        println!("  {:<42} {:>14} {:>14} {:>9}  {verdict}", format!("{} ({})", l.what, l.unit), show(l.ours), show(l.llamaindex), ratio);
    }
    for r in &theirs.retrieval {
        let timed: Vec<String> = r.modes.iter().map(|m| format!("{} {}", m.mode, m.queries)).collect();
        println!("  LlamaIndex at {} chunks: index built in {:.1} s; queries timed: {}", r.chunks, r.build_seconds, timed.join(", "));
    }
}

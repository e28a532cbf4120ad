//! Embedding throughput of the in-process encoder: `cargo bench -p rag-bert`.
//!
//! Prints sentences/s and word pieces/s for chunk-like texts of about 128
//! and 256 word pieces at several batch sizes, with one thread and with all
//! of them. Needs `MINILM_MODEL_DIR` (see .local/env).

use std::time::{Duration, Instant};

use rag_bert::sample::text_with_pieces;
use rag_bert::SentenceEncoder;

fn main() {
    let dir = std::env::var("MINILM_MODEL_DIR").unwrap_or_else(|_| {
        eprintln!("MINILM_MODEL_DIR is not set (source .local/env after scripts/stack up)");
        std::process::exit(2)
    });
    matmul_gflops();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!("{:>7} {:>7} {:>6} {:>12} {:>14}", "threads", "tokens", "batch", "sentences/s", "word pieces/s");
    for threads in [1, cores] {
        let encoder = SentenceEncoder::load(std::path::Path::new(&dir), threads).expect("model loads");
        for pieces in [128, 256] {
            let texts: Vec<String> = (0..64).map(|s| text_with_pieces(&encoder, pieces, s)).collect();
            for batch in [8, 32, 64] {
                let inputs: Vec<&str> = texts.iter().take(batch).map(String::as_str).collect();
                encoder.encode(&inputs).expect("warm-up");
                let (mut sentences, mut tokens, start) = (0usize, 0usize, Instant::now());
                while start.elapsed() < Duration::from_secs(3) {
                    let (_, stats) = encoder.encode_with_stats(&inputs).expect("encode");
                    sentences += stats.sentences;
                    tokens += stats.tokens;
                }
                let secs = start.elapsed().as_secs_f64();
                println!("{threads:>7} {pieces:>7} {batch:>6} {:>12.1} {:>14.0}", sentences as f64 / secs, tokens as f64 / secs);
            }
        }
    }
}

/// The projections' matrix product alone, one thread (the kernel's share
/// of the machine's peak).
fn matmul_gflops() {
    use rag_bert::gemm::{matmul, PackedMatrix};
    for (m, k, n) in [(1024, 384, 1152), (1024, 384, 1536), (1024, 1536, 384)] {
        let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 * 0.1).collect();
        let w: Vec<f32> = (0..n * k).map(|i| (i % 5) as f32 * 0.1).collect();
        let b = PackedMatrix::from_linear_weight(&w, n, k);
        let mut c = vec![0f32; m * n];
        matmul(&a, k, m, &b, &mut c, n, None);
        let (mut runs, start) = (0u32, Instant::now());
        while start.elapsed() < Duration::from_secs(2) {
            matmul(&a, k, m, &b, &mut c, n, None);
            runs += 1;
        }
        let gflops = 2.0 * (m * k * n) as f64 * runs as f64 / start.elapsed().as_secs_f64() / 1e9;
        println!("matmul {m}x{k} . {k}x{n}: {gflops:.1} GFLOP/s (one thread)");
    }
}

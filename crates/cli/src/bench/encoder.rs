//! `rag-engine bench encoder`: the in-process encoder alone, on chunk-like
//! texts of 128 word pieces, every core.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use rag_bert::sample::text_with_pieces;
use rag_bert::SentenceEncoder;
use serde::Serialize;

#[derive(Args, Debug, Clone)]
pub struct EncoderArgs {
    /// Word pieces per text ([CLS] and [SEP] included).
    #[arg(long, default_value_t = 128)]
    pub pieces: usize,
    /// Texts per encode call.
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    /// Seconds of timed encoding (after one warm-up batch).
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct EncoderReport {
    pub model: String,
    pub threads: usize,
    pub pieces: usize,
    pub batch: usize,
    pub fp32_word_pieces_per_second: f64,
    pub fp32_texts_per_second: f64,
    /// None: there is no int8 path yet (docs/performance.md).
    pub int8_word_pieces_per_second: Option<f64>,
}

pub async fn run(model_dir: &str, threads: usize, args: &EncoderArgs) -> anyhow::Result<EncoderReport> {
    let dir = PathBuf::from(model_dir);
    let args = args.clone();
    eprintln!("bench encoder: {} ({} word pieces, batches of {}, {} s)", dir.display(), args.pieces, args.batch, args.seconds);
    tokio::task::spawn_blocking(move || {
        let encoder = SentenceEncoder::load(&dir, threads)
            .with_context(|| format!("loading the encoder from {} (EMBEDDING_MODEL_DIR)", dir.display()))?;
        let texts: Vec<String> = (0..args.batch.max(1)).map(|seed| text_with_pieces(&encoder, args.pieces, seed)).collect();
        let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
        encoder.encode(&inputs)?;
        let (mut sentences, mut pieces, start) = (0usize, 0usize, Instant::now());
        while start.elapsed() < Duration::from_secs(args.seconds.max(1)) {
            let (_, stats) = encoder.encode_with_stats(&inputs)?;
            sentences += stats.sentences;
            pieces += stats.tokens;
        }
        let secs = start.elapsed().as_secs_f64();
        Ok(EncoderReport {
            model: encoder.name().to_string(),
            threads: if threads == 0 { std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) } else { threads },
            pieces: args.pieces,
            batch: args.batch,
            fp32_word_pieces_per_second: pieces as f64 / secs,
            fp32_texts_per_second: sentences as f64 / secs,
            int8_word_pieces_per_second: None,
        })
    })
    .await?
}

pub fn print(r: &EncoderReport) {
    println!("encoder ({}, {} threads, {} word pieces, batches of {})", r.model, r.threads, r.pieces, r.batch);
    println!("  fp32          {:.0} word pieces/s   {:.1} texts/s", r.fp32_word_pieces_per_second, r.fp32_texts_per_second);
    match r.int8_word_pieces_per_second {
        Some(v) => println!("  int8          {v:.0} word pieces/s"),
        None => println!("  int8          not implemented"),
    }
}

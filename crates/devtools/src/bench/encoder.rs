//! `rag-dev bench encoder`: the in-process encoder alone, on chunk-like
//! texts of 128 word pieces, every core.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use rag_bert::sample::text_with_pieces;
use rag_bert::{Precision, SentenceEncoder};
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
    /// None when this CPU has no AVX-512 VNNI (the portable integer kernel
    /// is not worth timing).
    pub int8_word_pieces_per_second: Option<f64>,
    pub int8_texts_per_second: Option<f64>,
    /// Lowest cosine between a text's int8 and fp32 vectors in the batch.
    pub int8_min_cosine_to_fp32: Option<f64>,
}

/// Word pieces/s and texts/s of `encoder` on `inputs` for `seconds`, after
/// one warm-up call (whose vectors are returned).
fn time_encoder(encoder: &SentenceEncoder, inputs: &[&str], seconds: u64) -> anyhow::Result<(f64, f64, Vec<Vec<f32>>)> {
    let vectors = encoder.encode(inputs)?;
    let (mut sentences, mut pieces, start) = (0usize, 0usize, Instant::now());
    while start.elapsed() < Duration::from_secs(seconds.max(1)) {
        let (_, stats) = encoder.encode_with_stats(inputs)?;
        sentences += stats.sentences;
        pieces += stats.tokens;
    }
    let secs = start.elapsed().as_secs_f64();
    Ok((pieces as f64 / secs, sentences as f64 / secs, vectors))
}

/// The texts the encoder part times (`batch` chunk-like English texts of
/// `pieces` word pieces) and the model's dimension.
pub fn bench_texts(model_dir: &std::path::Path, args: &EncoderArgs) -> anyhow::Result<(Vec<String>, usize)> {
    let encoder = SentenceEncoder::load(model_dir, 1)
        .with_context(|| format!("loading the encoder from {} (EMBEDDING_MODEL_DIR)", model_dir.display()))?;
    Ok(((0..args.batch.max(1)).map(|seed| text_with_pieces(&encoder, args.pieces, seed)).collect(), encoder.dimension()))
}

pub async fn run(model_dir: Option<&std::path::Path>, threads: usize, args: &EncoderArgs) -> anyhow::Result<EncoderReport> {
    let dir = PathBuf::from(model_dir.context("the encoder benchmark needs EMBEDDING_MODEL_DIR")?);
    let args = args.clone();
    eprintln!("bench encoder: {} ({} word pieces, batches of {}, {} s)", dir.display(), args.pieces, args.batch, args.seconds);
    tokio::task::spawn_blocking(move || {
        let load = |precision| {
            SentenceEncoder::load_with(&dir, threads, precision)
                .with_context(|| format!("loading the encoder from {} (EMBEDDING_MODEL_DIR)", dir.display()))
        };
        let encoder = load(Precision::Fp32)?;
        let texts: Vec<String> = (0..args.batch.max(1)).map(|seed| text_with_pieces(&encoder, args.pieces, seed)).collect();
        let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let (fp32_pieces, fp32_texts, fp32_vectors) = time_encoder(&encoder, &inputs, args.seconds)?;
        drop(encoder);
        let int8 = load(Precision::Int8)?;
        let (int8_pieces, int8_texts, int8_cosine) = if int8.is_accelerated() {
            let (pieces, texts, vectors) = time_encoder(&int8, &inputs, args.seconds)?;
            let cosine = vectors
                .iter()
                .zip(&fp32_vectors)
                .map(|(a, b)| a.iter().zip(b).map(|(x, y)| f64::from(x * y)).sum::<f64>())
                .fold(1f64, f64::min);
            (Some(pieces), Some(texts), Some(cosine))
        } else {
            eprintln!("bench encoder: no AVX-512 VNNI on this CPU, int8 not timed");
            (None, None, None)
        };
        Ok(EncoderReport {
            model: int8.name().to_string(),
            threads: if threads == 0 { std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) } else { threads },
            pieces: args.pieces,
            batch: args.batch,
            fp32_word_pieces_per_second: fp32_pieces,
            fp32_texts_per_second: fp32_texts,
            int8_word_pieces_per_second: int8_pieces,
            int8_texts_per_second: int8_texts,
            int8_min_cosine_to_fp32: int8_cosine,
        })
    })
    .await?
}

pub fn print(r: &EncoderReport) {
    println!("encoder ({}, {} threads, {} word pieces, batches of {})", r.model, r.threads, r.pieces, r.batch);
    println!("  fp32          {:.0} word pieces/s   {:.1} texts/s", r.fp32_word_pieces_per_second, r.fp32_texts_per_second);
    match (r.int8_word_pieces_per_second, r.int8_texts_per_second, r.int8_min_cosine_to_fp32) {
        (Some(v), Some(t), Some(c)) => println!("  int8          {v:.0} word pieces/s   {t:.1} texts/s   (cosine to fp32 >= {c:.4})"),
        _ => println!("  int8          not timed: no AVX-512 VNNI on this CPU"),
    }
}

//! The encoder's vectors against sentence-transformers' for the same model
//! (reference computed once with Python, see
//! scripts/fixtures/make_embedding_reference.py).
//!
//! Needs the model directory: `MINILM_MODEL_DIR` (written to .local/env
//! by scripts/stack). Without it the test fails rather than passing silently.

use std::path::PathBuf;

use crate::{Precision, SentenceEncoder};
use serde::Deserialize;

#[derive(Deserialize)]
struct Reference {
    max_seq_length: usize,
    items: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    text: String,
    token_ids: Vec<u32>,
    vector: Vec<f32>,
}

fn model_dir() -> PathBuf {
    PathBuf::from(
        std::env::var("MINILM_MODEL_DIR").expect("MINILM_MODEL_DIR must point at all-MiniLM-L6-v2 (scripts/stack writes it to .local/env)"),
    )
}

fn reference() -> Reference {
    serde_json::from_str(include_str!("../../tests/fixtures/minilm_reference.json")).expect("reference JSON")
}

pub(crate) fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

#[test]
fn vectors_match_sentence_transformers() {
    let reference = reference();
    for threads in [1, 2] {
        let encoder = SentenceEncoder::load(&model_dir(), threads).expect("model loads");
        assert_eq!(encoder.dimension(), 384);
        assert_eq!(encoder.max_tokens(), reference.max_seq_length);
        let texts: Vec<&str> = reference.items.iter().map(|i| i.text.as_str()).collect();
        // All at once (packed batch, split over threads) and one by one.
        let batch = encoder.encode(&texts).expect("encode");
        for (item, got) in reference.items.iter().zip(&batch) {
            assert_eq!(encoder.token_ids(&item.text).unwrap(), item.token_ids, "token ids of {:?}", item.text);
            let single = &encoder.encode(&[&item.text]).unwrap()[0];
            let (c_batch, c_single) = (cosine(got, &item.vector), cosine(single, &item.vector));
            assert!(c_batch >= 0.999 && c_single >= 0.999, "{:?}: cosine {c_batch} / {c_single}", item.text);
            let norm: f32 = got.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "not unit length: {norm}");
            let max_diff = got.iter().zip(&item.vector).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
            eprintln!(
                "{:>40?}  tokens {:>3}  cosine {c_batch:.7}  max |diff| {max_diff:.2e}",
                item.text.chars().take(38).collect::<String>(),
                item.token_ids.len()
            );
        }
    }
}

#[test]
fn int8_vectors_stay_within_cosine_0_99_of_fp32() {
    // The bar for the int8 path: cosine >= 0.99 to fp32 on the
    // reference sentences (and to sentence-transformers' own vectors).
    let reference = reference();
    let texts: Vec<&str> = reference.items.iter().map(|i| i.text.as_str()).collect();
    let fp32 = SentenceEncoder::load(&model_dir(), 2).expect("model loads").encode(&texts).expect("encode");
    let encoder = SentenceEncoder::load_with(&model_dir(), 2, Precision::Int8).expect("model loads");
    assert_eq!(encoder.precision(), Precision::Int8);
    let int8 = encoder.encode(&texts).expect("encode");
    let mut worst = 1f32;
    for ((item, q), f) in reference.items.iter().zip(&int8).zip(&fp32) {
        let (to_fp32, to_reference) = (cosine(q, f), cosine(q, &item.vector));
        worst = worst.min(to_fp32).min(to_reference);
        assert!(to_fp32 >= 0.99 && to_reference >= 0.99, "{:?}: cosine to fp32 {to_fp32}, to the reference {to_reference}", item.text);
        let norm: f32 = q.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "not unit length: {norm}");
    }
    eprintln!("int8: worst cosine over {} reference sentences {worst:.5}", texts.len());
    // Batched and one-by-one give the same vectors (activation scales are
    // per token, so the batch's other texts do not change a text's vector).
    for (text, q) in texts.iter().zip(&int8) {
        let single = &encoder.encode(&[text]).expect("encode")[0];
        assert!(cosine(single, q) > 0.99999, "{text:?}: batched and single differ");
    }
}

#[test]
fn empty_batch_and_empty_text() {
    let encoder = SentenceEncoder::load(&model_dir(), 2).expect("model loads");
    assert!(encoder.encode(&[]).unwrap().is_empty());
    let v = encoder.encode(&[""]).unwrap();
    assert_eq!(v[0].len(), 384);
    assert!(v[0].iter().all(|x| x.is_finite()));
}

#[test]
fn a_directory_without_a_model_is_a_clear_error() {
    let err = SentenceEncoder::load(std::path::Path::new("/nonexistent-model-dir"), 1).unwrap_err();
    assert!(err.to_string().contains("/nonexistent-model-dir/config.json"), "{err}");
}

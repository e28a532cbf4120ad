//! How the phrase filter (`rag_answer::injection::is_instruction`) does on
//! a set built by `eval/injection/build-sets.py` (issue 61): per language
//! and label, how many rows it flags, over all rows, without BIPIA's
//! encoding attacks, and without any of BIPIA's encoding, task-irrelevant
//! and code attacks; then up to 20 missed injections and 20 false flags.
//!
//! cargo run -q -p rag-answer --example injection_sets -- eval/injection/report.tsv

use std::collections::BTreeMap;
use std::process::ExitCode;

use rag_answer::injection::{instruction_kind, is_instruction};

struct Row {
    id: String,
    lang: String,
    label: String,
    category: String,
    source: String,
    sentence: String,
}

/// The subsets figures are given for: all rows; without BIPIA's encoding
/// attacks (they ask only to change the answer's form); without any of
/// BIPIA's encoding, task-irrelevant (a bare foreign question or task)
/// and code attacks.
const VIEWS: &[(&str, &[&str])] = &[
    ("all", &[]),
    ("without encoding", &["bipia-encoding/"]),
    ("without encoding, task-irrelevant, code", &["bipia-encoding/", "bipia-task-irrelevant/", "bipia-code/"]),
];

fn read(path: &str) -> Result<Vec<Row>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().ok_or("empty file")?.split('\t').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).ok_or(format!("no column {name}"));
    let (id, lang, label, category, source, sentence) =
        (col("id")?, col("lang")?, col("label")?, col("category")?, col("source")?, col("sentence")?);
    let mut rows = vec![];
    for (n, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split('\t').collect();
        let cell = |i: usize| cells.get(i).map(|s| s.to_string()).ok_or(format!("line {}: too few cells", n + 2));
        rows.push(Row {
            id: cell(id)?,
            lang: cell(lang)?,
            label: cell(label)?,
            category: cell(category)?,
            source: cell(source)?,
            sentence: cell(sentence)?,
        });
    }
    Ok(rows)
}

fn short(s: &str) -> String {
    let s: String = s.chars().take(160).collect();
    s
}

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: injection_sets <set.tsv>");
        return ExitCode::FAILURE;
    };
    let rows = match read(&path) {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let flags: Vec<bool> = rows.iter().map(|r| is_instruction(&r.sentence)).collect();

    println!("{path}: {} rows", rows.len());
    println!("{:<42} {:<4} {:<10} {:>7} {:>7} {:>8}", "view", "lang", "label", "rows", "flagged", "percent");
    for (view, excluded) in VIEWS {
        let mut counts: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
        for (r, &f) in rows.iter().zip(&flags) {
            if excluded.iter().any(|e| r.category.starts_with(e)) {
                continue;
            }
            let c = counts.entry((r.lang.clone(), r.label.clone())).or_default();
            c.0 += 1;
            c.1 += usize::from(f);
        }
        for ((lang, label), (n, f)) in counts.iter().rev() {
            let pct = if *n == 0 { 0.0 } else { 100.0 * *f as f64 / *n as f64 };
            println!("{view:<42} {lang:<4} {label:<10} {n:>7} {f:>7} {pct:>7.1}%");
        }
    }

    // Recall per source on injections, to see where the misses come from.
    let mut by_source: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    for (r, &f) in rows.iter().zip(&flags) {
        if r.label == "injection" {
            let c = by_source.entry((r.lang.clone(), r.source.clone())).or_default();
            c.0 += 1;
            c.1 += usize::from(f);
        }
    }
    println!("\ninjections flagged per source:");
    for ((lang, source), (n, f)) in by_source.iter().rev() {
        println!("  {lang:<3} {source:<44} {f:>4}/{n:<4}");
    }

    // Misses outside all of BIPIA's encoding, task-irrelevant and code
    // attacks (the last view), up to 10 per language.
    let core = |r: &Row| !VIEWS[VIEWS.len() - 1].1.iter().any(|e| r.category.starts_with(e));
    println!("\nmissed injections (up to 10 per language, last view):");
    for lang in ["vi", "en"] {
        let missed = rows.iter().zip(&flags).filter(|(r, f)| r.label == "injection" && !**f && r.lang == lang && core(r));
        for (r, _) in missed.take(10) {
            println!("  {} {} [{}] {}", r.id, r.lang, r.category, short(&r.sentence));
        }
    }
    println!("\nfalse flags on ordinary rows (up to 20):");
    for r in rows.iter().zip(&flags).filter(|(r, f)| r.label == "ordinary" && **f).map(|(r, _)| r).take(20) {
        println!("  {} {} [{}] {:?}: {}", r.id, r.lang, r.category, instruction_kind(&r.sentence), short(&r.sentence));
    }
    ExitCode::SUCCESS
}

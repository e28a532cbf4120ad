//! `rag-dev eval retrieval DIR`: a BEIR dataset through the real
//! pipeline into a fresh workspace, every query through the real retrieval
//! code, nDCG@10 / Recall@10 / Recall@100 / MRR@10 for lexical, dense and
//! hybrid, overall and per query language.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rag_retrieval::metrics::Summary;
use rag_search::retriever::Mode;

use super::dataset::{corpus_items, documents_by_corpus_id, read_jsonl, CorpusDoc, Query};
use crate::ingest::{ingest, IngestOptions};
use rag_app::config::Settings;

#[derive(Args, Debug)]
pub struct RetrievalArgs {
    /// Dataset directory.
    dir: PathBuf,
    /// Evaluate only the first N judged queries.
    #[arg(long)]
    max_queries: Option<usize>,
    /// Uploads in flight.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Evaluate an already ingested workspace of this dataset (from an
    /// earlier run) instead of ingesting into a fresh one.
    #[arg(long)]
    workspace: Option<String>,
    /// Also ask every query with its diacritics stripped (đ -> d), where
    /// that changes it, as a user without an input method would type it;
    /// `by_form` then reports both forms (the overall and per-language
    /// figures stay those of the queries as written).
    #[arg(long)]
    strip_diacritics: bool,
    /// Print JSON: {"lexical": {...}, "dense": {...}, "hybrid": {...}, "by_language": {...}, "by_form": {...}}.
    #[arg(long)]
    json: bool,
    /// Also write each query's rankings to this file, one JSON object per
    /// line (`id`, `text`, `language`, `qrels`, and per mode the ranked
    /// chunks with corpus id, score, language and text): what tuning the
    /// fusion offline needs.
    #[arg(long)]
    dump: Option<PathBuf>,
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Lexical => "lexical",
        Mode::Dense => "dense",
        Mode::Hybrid => "hybrid",
    }
}

/// The query forms reported (`rag_retrieval::QueryForm`).
const FORMS: [&str; 5] = ["accented", "unaccented", "mixed", "english", "other"];

/// A form's key among the languages in the runs (distinct from them).
fn form_key(form: &str) -> &'static str {
    match form {
        "accented" => "form:accented",
        "unaccented" => "form:unaccented",
        "mixed" => "form:mixed",
        "english" => "form:english",
        _ => "form:other",
    }
}

fn read_qrels(path: &Path) -> anyhow::Result<HashMap<String, HashMap<String, i32>>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out: HashMap<String, HashMap<String, i32>> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 3 || (i == 0 && cols[2].trim().parse::<i32>().is_err()) {
            continue; // header
        }
        let score: i32 = cols[2].trim().parse().with_context(|| format!("{}:{}: score", path.display(), i + 1))?;
        out.entry(cols[0].to_string()).or_default().insert(cols[1].to_string(), score);
    }
    Ok(out)
}

pub(super) async fn eval_retrieval(s: &Settings, args: RetrievalArgs) -> anyhow::Result<ExitCode> {
    let corpus: Vec<CorpusDoc> = read_jsonl(&args.dir.join("corpus.jsonl"))?;
    let queries: Vec<Query> = read_jsonl(&args.dir.join("queries.jsonl"))?;
    let qrels = read_qrels(&args.dir.join("qrels/test.tsv"))?;
    let mut judged: Vec<&Query> = queries.iter().filter(|q| qrels.get(&q.id).is_some_and(|r| r.values().any(|g| *g > 0))).collect();
    if let Some(n) = args.max_queries {
        judged.truncate(n);
    }
    anyhow::ensure!(!corpus.is_empty() && !judged.is_empty(), "the dataset has no documents or no judged queries");
    eprintln!("eval: {} documents, {} judged queries, embedder {}", corpus.len(), judged.len(), s.embedding.embedder_choice());

    let (workspace, pool, ingest_seconds) = match &args.workspace {
        Some(w) => (w.clone(), rag_store::connect(&s.store()).await.context("connecting to Postgres (DATABASE_URL)")?, 0.0),
        None => {
            let items = std::sync::Arc::new(corpus_items(&corpus));
            let run = ingest(s, "eval", corpus.len(), IngestOptions::new(args.concurrency, args.json), move |i| items[i].clone()).await?;
            eprintln!("eval: ingested in {:.1} s into workspace {}", run.total_seconds, run.workspace);
            (run.workspace, run.pool, run.total_seconds)
        }
    };
    // Fresh statistics after a bulk load, or the planner guesses badly.
    rag_store::operations::analyze_search_tables(&pool).await?;
    // Documents back to corpus ids through their file names.
    let doc_to_corpus: HashMap<uuid::Uuid, String> =
        documents_by_corpus_id(&pool, &workspace).await?.into_iter().map(|(c, d)| (d, c)).collect();
    anyhow::ensure!(!doc_to_corpus.is_empty(), "workspace {workspace} holds no documents of this dataset");

    let retriever = s.retriever(pool.clone())?;
    let modes: Vec<Mode> =
        if retriever.embedder.identity().is_some() { vec![Mode::Lexical, Mode::Dense, Mode::Hybrid] } else { vec![Mode::Lexical] };
    let bar = ProgressBar::new((judged.len() * modes.len()) as u64);
    if args.json {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} queries")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    // mode -> language -> (ranking, judgements) per query
    type Runs<'a> = BTreeMap<&'static str, BTreeMap<&'static str, Vec<(Vec<String>, &'a HashMap<String, i32>)>>>;
    let mut runs: Runs = BTreeMap::new();
    let started = std::time::Instant::now();
    let mut dump = match &args.dump {
        Some(path) => Some(std::io::BufWriter::new(std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?)),
        None => None,
    };
    // Each judged query as written, and with --strip-diacritics its
    // unaccented twin (only in the per-form figures).
    let mut cases: Vec<(&Query, String, bool)> = Vec::new();
    for q in &judged {
        cases.push((q, q.text.clone(), true));
        let stripped = rag_lexical::fold(&q.text);
        if args.strip_diacritics && stripped != q.text {
            cases.push((q, stripped, false));
        }
    }
    bar.set_length((cases.len() * modes.len()) as u64);
    // form -> how its queries were classified
    let mut classified: BTreeMap<&'static str, BTreeMap<&'static str, usize>> = BTreeMap::new();
    for (q, text, as_written) in &cases {
        let language = rag_retrieval::detect_language(text).code();
        let form = rag_retrieval::query_form(text).code();
        *classified.entry(form).or_default().entry(language).or_default() += 1;
        let mut dumped = serde_json::json!({"id": q.id, "text": text, "language": language, "form": form, "qrels": qrels[&q.id]});
        for mode in &modes {
            let result = retriever.retrieve(&workspace, text, 100, &[], *mode).await?;
            if let Some(r) = &result.restoration {
                dumped["restored"] = serde_json::to_value(r)?;
            }
            if dump.is_some() {
                let ranked: Vec<serde_json::Value> = result
                    .chunks
                    .iter()
                    .map(|c| {
                        serde_json::json!({
                            "doc": doc_to_corpus.get(&c.hit.document_id), "chunk": c.hit.chunk_id, "score": c.score,
                            "language": c.language.code(), "text": c.hit.content,
                        })
                    })
                    .collect();
                dumped[mode_name(*mode)] = ranked.into();
            }
            // Chunks -> corpus documents, first (best) occurrence wins; a
            // document with the query's own id is not counted (BEIR's rule:
            // ArguAna's queries are arguments of its corpus).
            let mut ranking: Vec<String> = Vec::new();
            for c in &result.chunks {
                if let Some(id) = doc_to_corpus.get(&c.hit.document_id) {
                    if *id != q.id && !ranking.iter().any(|r| r == id) {
                        ranking.push(id.clone());
                    }
                }
            }
            let name = mode_name(*mode);
            let judged_q = &qrels[&q.id];
            let per_mode = runs.entry(name).or_default();
            per_mode.entry(form_key(form)).or_default().push((ranking.clone(), judged_q));
            if *as_written {
                per_mode.entry("all").or_default().push((ranking.clone(), judged_q));
                per_mode.entry(language).or_default().push((ranking, judged_q));
            }
            bar.inc(1);
        }
        if let Some(out) = dump.as_mut() {
            use std::io::Write;
            writeln!(out, "{dumped}")?;
        }
    }
    if let Some(mut out) = dump {
        use std::io::Write;
        out.flush()?;
    }
    bar.finish_and_clear();
    let query_seconds = started.elapsed().as_secs_f64();
    let summary = |mode: &str, lang: &str| -> Option<Summary> {
        runs.get(mode).and_then(|m| m.get(lang)).map(|v| Summary::of(v.iter().map(|(r, q)| (r.as_slice(), *q))))
    };
    let mut json = serde_json::Map::new();
    for mode in ["lexical", "dense", "hybrid"] {
        if let Some(sm) = summary(mode, "all") {
            json.insert(mode.into(), serde_json::to_value(sm)?);
        }
    }
    let mut by_language = serde_json::Map::new();
    for lang in ["vi", "en", "other"] {
        let mut per = serde_json::Map::new();
        for mode in ["lexical", "dense", "hybrid"] {
            if let Some(sm) = summary(mode, lang) {
                per.insert(mode.into(), serde_json::to_value(sm)?);
            }
        }
        if !per.is_empty() {
            by_language.insert(lang.into(), per.into());
        }
    }
    json.insert("by_language".into(), by_language.clone().into());
    let mut by_form = serde_json::Map::new();
    for form in FORMS {
        let mut per = serde_json::Map::new();
        for mode in ["lexical", "dense", "hybrid"] {
            if let Some(sm) = summary(mode, form_key(form)) {
                per.insert(mode.into(), serde_json::to_value(sm)?);
            }
        }
        if !per.is_empty() {
            per.insert("classified".into(), serde_json::to_value(classified.get(form))?);
            by_form.insert(form.into(), per.into());
        }
    }
    json.insert("by_form".into(), by_form.into());
    json.insert(
        "run".into(),
        serde_json::json!({
            "documents": corpus.len(), "queries": judged.len(), "embedder": s.embedding.embedder_choice().to_string(),
            "embedding_model": retriever.embedder.identity().map(|(m, _)| m.to_string()),
            "chunking_profile": s.parsing.chunking_profile, "ingest_seconds": ingest_seconds,
            "query_seconds": query_seconds, "workspace": workspace,
        }),
    );
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        println!(
            "retrieval on {} ({} documents, {} queries; {} chunking; embedder {})",
            args.dir.display(),
            corpus.len(),
            judged.len(),
            s.parsing.chunking_profile,
            retriever.embedder.identity().map(|(m, d)| format!("{m} ({d})")).unwrap_or_else(|| "none".into())
        );
        println!(
            "{:<8} {:<8} {:>8} {:>10} {:>11} {:>7} {:>8}",
            "language", "mode", "nDCG@10", "Recall@10", "Recall@100", "MRR@10", "queries"
        );
        for lang in ["all", "vi", "en", "other"] {
            for mode in ["lexical", "dense", "hybrid"] {
                if let Some(sm) = summary(mode, lang) {
                    println!(
                        "{lang:<8} {mode:<8} {:>8.4} {:>10.4} {:>11.4} {:>7.4} {:>8}",
                        sm.ndcg_10, sm.recall_10, sm.recall_100, sm.mrr_10, sm.queries
                    );
                }
            }
        }
        println!("\nby query form{}:", if args.strip_diacritics { " (each query as written and without diacritics)" } else { "" });
        println!("{:<10} {:<8} {:>8} {:>10} {:>7} {:>8}  classified", "form", "mode", "nDCG@10", "Recall@10", "MRR@10", "queries");
        for form in FORMS {
            for mode in ["lexical", "dense", "hybrid"] {
                if let Some(sm) = summary(mode, form_key(form)) {
                    let as_what = classified.get(form).map(|c| format!("{c:?}")).unwrap_or_default();
                    println!(
                        "{form:<10} {mode:<8} {:>8.4} {:>10.4} {:>7.4} {:>8}  {as_what}",
                        sm.ndcg_10, sm.recall_10, sm.mrr_10, sm.queries
                    );
                }
            }
        }
        println!(
            "workspace {workspace}: ingest {:.1} s, queries {:.1} s ({:.1} ms per retrieval)",
            ingest_seconds,
            query_seconds,
            1000.0 * query_seconds / (cases.len() * modes.len()) as f64
        );
    }
    Ok(ExitCode::SUCCESS)
}

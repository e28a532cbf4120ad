//! `rag-dev eval answers DIR`: a SQuAD-style set (passages, questions,
//! the answer text and the passage that holds it, or nulls for a question
//! the passages do not answer) through the real pipeline: the passages are
//! ingested into a fresh workspace, every question is produced as
//! QuestionAsked and answered by the answerer stage (extractive, or the
//! configured LLM), and the projected answers are scored as a user would
//! judge them: the answer inside a cited span, the gold passage cited,
//! citations that do not slice the raw text, sections shown without
//! support, abstention on unanswerable questions (and citations given to
//! them), seconds to the first words on the page and to the whole answer;
//! overall and per question language.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use rag_asking::{AnswerWatch, Ask, Deltas, Watched};
use rag_bus::EventProducer;
use rag_events::Codec;
use rag_store::messages::{AnswerMetadata, MessageStatus};

use super::answer_scores::{score, Asked, Scored};
use super::answers_report;
use super::dataset::{corpus_items, documents_by_corpus_id, read_jsonl, CorpusDoc, GoldAnswer, OneOrMany, Query};
use crate::ingest::{ingest, IngestOptions};
use rag_app::config::Settings;

#[derive(Args, Debug)]
pub struct AnswersArgs {
    /// Dataset directory: corpus.jsonl, queries.jsonl, answers.jsonl (`query-id`, `corpus-id`, `answer`; lists of both for a question that asks several things).
    dir: PathBuf,
    /// Ask only the first N questions.
    #[arg(long)]
    max_questions: Option<usize>,
    /// A stratified sample: at most N questions of each form a query id
    /// names (`eval/forms/build.py`: `vi-q0001`, `envi-u0003`), each form's
    /// kinds (answerable, unanswerable on a topic of the corpus, from
    /// outside it) in the shares the set has them, drawn by `--seed`; the
    /// figures are then printed per form too.
    #[arg(long)]
    per_form: Option<usize>,
    /// The draw of `--per-form`.
    #[arg(long, default_value_t = 46)]
    seed: u64,
    /// Seconds to wait for each answer.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// Uploads in flight while ingesting.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Ask every question with its diacritics stripped (đ -> d), as a user
    /// without an input method types it; figures per language stay by the
    /// question's language as written, and `vietnamese_replies` counts the
    /// Vietnamese questions answered (or abstained) with Vietnamese marks.
    #[arg(long)]
    strip_diacritics: bool,
    /// Print JSON: {"all": {...}, "by_language": {...}, "by_form": {...}, "by_question_form": {...}, "unanswerable": {...}, "vietnamese_replies": {...}, "questions": [...], "run": {...}}.
    #[arg(long)]
    json: bool,
}

/// Waits for the answer `watch` watches: the first streamed words (a delta
/// with text) and the projected message. None when it did not come in time.
async fn await_answer(
    watch: &mut AnswerWatch,
    pipeline: &mut crate::ingest::Pipeline,
    asked_at: Instant,
) -> anyhow::Result<Option<(rag_store::messages::MessageRow, Option<(Duration, u64)>)>> {
    let mut first_words: Option<(Duration, u64)> = None;
    loop {
        if let Some(failed) = pipeline.failed_stage() {
            anyhow::bail!("a stage stopped during the run: {failed}");
        }
        // A stage that stops is noticed within a second.
        let Ok(watched) = tokio::time::timeout(Duration::from_secs(1), watch.next()).await else { continue };
        match watched? {
            Watched::Answered(m) => return Ok(Some((*m, first_words))),
            Watched::TimedOut => return Ok(None),
            Watched::Delta(d) => {
                if first_words.is_none() && d.sections.iter().any(|s| !s.text.trim().is_empty()) {
                    let epoch_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
                    first_words = Some((asked_at.elapsed(), epoch_ms));
                }
            }
        }
    }
}

pub async fn eval_answers(s: &Settings, args: AnswersArgs) -> anyhow::Result<ExitCode> {
    let corpus: Vec<CorpusDoc> = read_jsonl(&args.dir.join("corpus.jsonl"))?;
    let queries: Vec<Query> = read_jsonl(&args.dir.join("queries.jsonl"))?;
    let gold: Vec<GoldAnswer> = read_jsonl(&args.dir.join("answers.jsonl"))?;
    let text_of: HashMap<&str, &str> = queries.iter().map(|q| (q.id.as_str(), q.text.as_str())).collect();
    let mut asked: Vec<(&GoldAnswer, &str)> = gold.iter().filter_map(|g| text_of.get(g.query_id.as_str()).map(|t| (g, *t))).collect();
    if let Some(n) = args.per_form {
        let ids: Vec<&str> = asked.iter().map(|(g, _)| g.query_id.as_str()).collect();
        let keep = super::forms::stratified(&ids, n, args.seed);
        asked = asked.into_iter().zip(keep).filter(|(_, k)| *k).map(|(a, _)| a).collect();
    }
    if let Some(n) = args.max_questions {
        asked.truncate(n);
    }
    anyhow::ensure!(!corpus.is_empty() && !asked.is_empty(), "the dataset has no passages or no questions");
    let answers_by =
        if s.answers.answer_llm_base_url.as_deref().unwrap_or("").is_empty() { "extractive" } else { "the LLM (extractive as fallback)" };
    let unanswerable_count = asked.iter().filter(|(g, _)| g.answer.is_none()).count();
    eprintln!(
        "eval answers: {} passages, {} questions ({unanswerable_count} not answered by the passages), answers by {answers_by}",
        corpus.len(),
        asked.len()
    );

    let items = std::sync::Arc::new(corpus_items(&corpus));
    let run = ingest(
        s,
        "eval",
        corpus.len(),
        IngestOptions { keep_running: true, ..IngestOptions::new(args.concurrency, args.json) },
        move |i| items[i].clone(),
    )
    .await?;
    let mut pipeline = run.pipeline.context("the pipeline stopped after the ingest")?;
    eprintln!("eval answers: ingested in {:.1} s into workspace {}", run.total_seconds, run.workspace);
    let by_corpus = documents_by_corpus_id(&run.pool, &run.workspace).await?;
    let mut raw_texts: HashMap<String, Vec<char>> = HashMap::new();
    for document in by_corpus.values() {
        if let Some(full) = rag_store::raw::full_text(&run.pool, &run.workspace, *document, None).await? {
            raw_texts.insert(document.to_string(), full);
        }
    }
    let mut deltas = Deltas::listen(&run.pool).await.context("listening for answer deltas")?;

    let producer = EventProducer::new(&pipeline.settings.bus(), Codec::embedded()?, "rag-engine/eval")?;
    let mut scored: Vec<Scored> = Vec::new();
    // The form each question was asked in (`rag_retrieval::query_form`),
    // beside `scored`.
    let mut forms: Vec<&'static str> = Vec::new();
    let mut replies = answers_report::ReplyLanguages::default();
    let started = Instant::now();
    for (i, (g, written)) in asked.iter().enumerate() {
        let stripped = args.strip_diacritics.then(|| rag_lexical::fold(written));
        let question = stripped.as_deref().unwrap_or(written);
        let recorded = Ask::new(&run.workspace, uuid::Uuid::now_v7(), question.to_string(), "eval", "rag-engine/eval").asked();
        let asked_at = Instant::now();
        producer.send(&recorded.event).await.context("producing QuestionAsked")?;
        let language = rag_retrieval::detect_language(written).code();
        let gold_documents: Vec<String> = g
            .corpus_id
            .as_ref()
            .map(OneOrMany::all)
            .unwrap_or_default()
            .iter()
            .filter_map(|c| by_corpus.get(*c))
            .map(|d| d.to_string())
            .collect();
        let answers = g.answer.as_ref().map(OneOrMany::all).unwrap_or_default();
        let asked_question = Asked { id: &g.query_id, language, gold_documents: &gold_documents, answers: &answers };
        let timeout = Duration::from_secs(args.timeout);
        let mut watch =
            AnswerWatch::new(run.pool.clone(), &run.workspace, recorded.assistant_message, deltas, timeout, Duration::from_millis(100));
        let awaited = await_answer(&mut watch, &mut pipeline, asked_at).await?;
        deltas = watch.into_deltas();
        let Some((message, first_words)) = awaited else {
            // One slow answer (a loaded machine, a model stuck on one
            // prompt) is that question's failure, not the run's: the
            // figures of every other question are kept.
            eprintln!(
                "eval answers: no answer to {} within {} s: counted as failed (timed out); the run goes on",
                g.query_id, args.timeout
            );
            let failed = score(&asked_question, &AnswerMetadata::default(), MessageStatus::Failed, &raw_texts, timeout, timeout, None);
            let s = Scored { timed_out: true, ..failed };
            if !args.json {
                answers_report::progress(i + 1, asked.len(), &g.query_id, &s);
            }
            scored.push(s);
            forms.push(rag_retrieval::query_form(question).code());
            continue;
        };
        let latency = asked_at.elapsed();
        let answer = message.answer();
        let s = score(
            &asked_question,
            &answer,
            message.status,
            &raw_texts,
            first_words.map_or(latency, |f| f.0),
            latency,
            first_words.map(|f| f.1),
        );
        replies.note(&g.query_id, language, &message, &answer, &s);
        if !args.json {
            answers_report::progress(i + 1, asked.len(), &g.query_id, &s);
        }
        scored.push(s);
        forms.push(rag_retrieval::query_form(question).code());
    }
    let question_seconds = started.elapsed().as_secs_f64();
    pipeline.stop().await;

    let run_facts = serde_json::json!({"passages": corpus.len(), "questions": asked.len(), "answers_by": answers_by,
        "llm_model": s.answers.answer_llm_model.clone().unwrap_or_default(), "embedder": s.embedding.embedder_choice().to_string(),
        "evidence_chars": s.answers.evidence_chars(),
        "ingest_seconds": run.total_seconds, "question_seconds": question_seconds, "workspace": run.workspace});
    let report = answers_report::Report::of(&scored, &forms, replies);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.json(args.strip_diacritics, run_facts))?);
    } else {
        println!(
            "answers on {} ({} passages, {} questions; answers by {answers_by}; embedder {})",
            args.dir.display(),
            corpus.len(),
            asked.len(),
            s.embedding.embedder_choice()
        );
        report.print(args.strip_diacritics);
        println!("workspace {}: ingest {:.1} s, questions {:.1} s", run.workspace, run.total_seconds, question_seconds);
    }
    let bad_slices: usize = scored.iter().map(|s| s.bad_slices).sum();
    Ok(if bad_slices == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

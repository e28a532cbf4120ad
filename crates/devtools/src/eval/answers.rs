// Kept whole at ~420 lines: one evaluation run (ingest, ask, score, print) in order; the scoring is pure, in answer_scores.rs.
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

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use rag_asking::{AnswerWatch, Ask, Deltas, Watched};
use rag_bus::EventProducer;
use rag_events::Codec;
use rag_store::messages::MessageStatus;
use serde::Deserialize;

use super::answer_scores::{score, totals, unanswerable, Asked, Scored, Totals};
use super::dataset::{corpus_items, documents_by_corpus_id, read_jsonl, CorpusDoc, Query};
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

/// Whether a reply is written with Vietnamese marks (a word that folding
/// changes).
fn has_vietnamese_marks(text: &str) -> bool {
    rag_lexical::words(text).iter().any(|w| rag_lexical::fold(w) != *w)
}

#[derive(Deserialize)]
struct GoldAnswer {
    #[serde(rename = "query-id")]
    query_id: String,
    /// None: the passages do not answer the question. A question that asks
    /// several things gives a list: a passage and an answer per part.
    #[serde(rename = "corpus-id")]
    corpus_id: Option<OneOrMany>,
    answer: Option<OneOrMany>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn all(&self) -> Vec<&str> {
        match self {
            OneOrMany::One(s) => vec![s.as_str()],
            OneOrMany::Many(v) => v.iter().map(String::as_str).collect(),
        }
    }
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
    // Vietnamese questions, and of those the replies with marks.
    let (mut vietnamese_questions, mut replies_with_marks) = (0usize, 0usize);
    let mut replies_without_marks: Vec<String> = Vec::new();
    // English questions given an answer in a language that can be told,
    // and of those the answers shown in English (over Vietnamese documents
    // a small model may answer in the documents' language; a section the
    // faithfulness check replaced by its cited text counts as shown).
    let (mut english_answered, mut answers_in_english) = (0usize, 0usize);
    let mut answers_not_in_english: Vec<String> = Vec::new();
    let started = Instant::now();
    for (i, (g, written)) in asked.iter().enumerate() {
        let stripped = args.strip_diacritics.then(|| rag_lexical::fold(written));
        let question = stripped.as_deref().unwrap_or(written);
        let recorded = Ask::new(&run.workspace, uuid::Uuid::now_v7(), question.to_string(), "eval", "rag-engine/eval").asked();
        let asked_at = Instant::now();
        producer.send(&recorded.event).await.context("producing QuestionAsked")?;
        let timeout = Duration::from_secs(args.timeout);
        let mut watch =
            AnswerWatch::new(run.pool.clone(), &run.workspace, recorded.assistant_message, deltas, timeout, Duration::from_millis(100));
        let (message, first_words) = await_answer(&mut watch, &mut pipeline, asked_at)
            .await?
            .with_context(|| format!("no answer to {} within {} s", g.query_id, args.timeout))?;
        deltas = watch.into_deltas();
        let latency = asked_at.elapsed();
        let language = rag_retrieval::detect_language(written).code();
        if language == "vi" && message.status != MessageStatus::Failed {
            vietnamese_questions += 1;
            if has_vietnamese_marks(&message.content) {
                replies_with_marks += 1;
            } else {
                replies_without_marks.push(format!("{}: {}", g.query_id, message.content));
            }
        }
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
        if language == "en" && message.status != MessageStatus::Failed && !s.abstained && s.sections > 0 {
            let shown = answer.sections.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join(" ");
            // Names and figures alone ("Nguyễn Văn An.") say no language:
            // such an answer is counted neither way.
            match rag_retrieval::detect_language(&without_names(&shown)) {
                rag_retrieval::Language::Other => {}
                rag_retrieval::Language::En => {
                    english_answered += 1;
                    answers_in_english += 1;
                }
                rag_retrieval::Language::Vi => {
                    english_answered += 1;
                    answers_not_in_english.push(format!("{}: {shown}", g.query_id));
                }
            }
        }
        if !args.json {
            let verdict = if s.answerable {
                format!(
                    "gold cited {}  answer in a citation {}",
                    if s.gold_cited { "yes" } else { "no " },
                    if s.answer_in_citation { "yes" } else { "no " }
                )
            } else {
                format!("unanswerable: {}", if s.abstained && s.citations == 0 { "abstained" } else { "ANSWERED" })
            };
            eprintln!(
                "[{}/{}] {} {:<10} first words {:>6} ms  answer {:>6} ms  {verdict}{}",
                i + 1,
                asked.len(),
                g.query_id,
                s.mode,
                s.first_token_ms,
                s.latency_ms,
                if s.bad_slices > 0 { format!("  {} bad slices", s.bad_slices) } else { String::new() }
            );
        }
        scored.push(s);
        forms.push(rag_retrieval::query_form(question).code());
    }
    let question_seconds = started.elapsed().as_secs_f64();
    pipeline.stop().await;

    let all = totals(scored.iter());
    let none = unanswerable(scored.iter());
    let mut by_language: BTreeMap<String, Totals> = BTreeMap::new();
    for lang in ["vi", "en", "other"] {
        let t = totals(scored.iter().filter(|s| s.language == lang));
        if t.questions > 0 {
            by_language.insert(lang.to_string(), t);
        }
    }
    let mut by_form: BTreeMap<&'static str, Totals> = BTreeMap::new();
    for form in ["accented", "unaccented", "mixed", "english", "other"] {
        let t = totals(scored.iter().zip(&forms).filter(|(_, f)| **f == form).map(|(s, _)| s));
        if t.questions > 0 {
            by_form.insert(form, t);
        }
    }
    let question_forms = super::forms::by_form(&scored);
    let bad_slices: usize = scored.iter().map(|s| s.bad_slices).sum();
    let vietnamese_replies = serde_json::json!({
        "questions": vietnamese_questions, "with_marks": replies_with_marks, "without_marks": replies_without_marks,
        "questions_stripped_of_diacritics": args.strip_diacritics,
    });
    let english_answers = serde_json::json!({
        "answered": english_answered, "in_english": answers_in_english, "not_in_english": answers_not_in_english,
    });
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "all": all, "by_language": by_language, "by_form": by_form, "by_question_form": question_forms, "unanswerable": none, "vietnamese_replies": vietnamese_replies, "english_answers": english_answers, "questions": scored,
                "run": {"passages": corpus.len(), "questions": asked.len(), "answers_by": answers_by,
                        "llm_model": s.answers.answer_llm_model.clone().unwrap_or_default(), "embedder": s.embedding.embedder_choice().to_string(),
                        "evidence_chars": s.answers.evidence_chars(),
                        "ingest_seconds": run.total_seconds, "question_seconds": question_seconds, "workspace": run.workspace},
            }))?
        );
    } else {
        println!(
            "answers on {} ({} passages, {} questions; answers by {answers_by}; embedder {})",
            args.dir.display(),
            corpus.len(),
            asked.len(),
            s.embedding.embedder_choice()
        );
        println!(
            "{:<8} {:>9} {:>6} {:>9} {:>11} {:>12} {:>9} {:>10} {:>11} {:>14} {:>14} {:>10}",
            "language",
            "answerable",
            "failed",
            "abstained",
            "gold cited",
            "answer cited",
            "bad slice",
            "unlocated",
            "unsupported",
            "first p50/p95",
            "whole p50/p95",
            "LLM tokens"
        );
        for (lang, t) in std::iter::once(("all".to_string(), &all)).chain(by_language.iter().map(|(l, t)| (l.clone(), t))) {
            println!(
                "{lang:<8} {:>9} {:>6} {:>9} {:>10.1}% {:>11.1}% {:>9} {:>10} {:>11} {:>14} {:>14} {:>10}",
                t.questions,
                t.failed,
                t.abstained,
                100.0 * t.gold_cited,
                100.0 * t.answer_in_citation,
                t.bad_slices,
                t.unlocated_quotes,
                t.unsupported_sections,
                format!("{:.1}/{:.1} s", t.first_token_ms.p50 as f64 / 1000.0, t.first_token_ms.p95 as f64 / 1000.0),
                format!("{:.1}/{:.1} s", t.latency_ms.p50 as f64 / 1000.0, t.latency_ms.p95 as f64 / 1000.0),
                t.llm_tokens
            );
        }
        if all.compound_questions > 0 {
            println!(
                "questions that ask several things: {}, every part's answer inside a citation {:.1}%, at least one part's {:.1}%",
                all.compound_questions,
                100.0 * all.all_parts_in_citation,
                100.0 * all.some_part_in_citation
            );
        }
        if none.questions > 0 {
            println!(
                "unanswerable: {} questions, {:.1}% abstained, {} citations given to them",
                none.questions,
                100.0 * none.abstained,
                none.citations
            );
        }
        if all.llama_ms.p50 > 0 {
            println!(
                "answerable, LLM: retrieval p50 {} ms; prompt p50 {} tokens; prefill {:.0} tokens/s, decode {:.1} tokens/s; \
                 llama.cpp alone p50 {:.1} s, the whole answer {:.2}x that (p50); the page's first words {} ms (p50) / {} ms (p95) after the model's",
                all.retrieval_ms.p50,
                all.prompt_tokens.p50,
                all.prefill_tokens_per_s,
                all.decode_tokens_per_s,
                all.llama_ms.p50 as f64 / 1000.0,
                all.latency_over_llama,
                all.stream_lag_ms.p50,
                all.stream_lag_ms.p95
            );
        }
        for (form, t) in &by_form {
            println!(
                "form {form:<10} {:>3} answerable: answer in a citation {:.1}%, gold cited {:.1}%, abstained {}",
                t.questions,
                100.0 * t.answer_in_citation,
                100.0 * t.gold_cited,
                t.abstained
            );
        }
        super::forms::print(&question_forms);
        let unfaithful: usize = scored.iter().map(|s| s.unfaithful_sections).sum();
        println!("sections shown as their cited text for a number or name the citations lack (unfaithful): {unfaithful}");
        let questions_written: usize = scored.iter().map(|s| s.question_sentences).sum();
        println!("questions the model wrote into its answers, taken out: {questions_written}");
        if vietnamese_questions > 0 {
            println!(
                "Vietnamese questions{}: {replies_with_marks} of {vietnamese_questions} replies written with Vietnamese marks",
                if args.strip_diacritics { " (asked without diacritics)" } else { "" }
            );
            for r in &replies_without_marks {
                println!("  without marks: {r}");
            }
        }
        if english_answered > 0 {
            println!("English questions: {answers_in_english} of {english_answered} answers shown in English");
            for r in &answers_not_in_english {
                println!("  not in English: {r}");
            }
        }
        println!("workspace {}: ingest {:.1} s, questions {:.1} s", run.workspace, run.total_seconds, question_seconds);
    }
    Ok(if bad_slices == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `text` without its capitalised words: an English answer keeps the
/// documents' names as they are written ("The storm flooded the roads in
/// Quảng Bình."), and they say nothing of the language it is written in.
fn without_names(text: &str) -> String {
    text.split_whitespace().filter(|w| !w.chars().next().is_some_and(char::is_uppercase)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::without_names;
    use rag_retrieval::{detect_language, Language};

    #[test]
    fn an_english_answer_with_vietnamese_names_is_english() {
        assert_eq!(detect_language(&without_names("The storm flooded the roads in Quảng Bình.")), Language::En);
        assert_eq!(detect_language(&without_names("Sản phẩm được bảo hành 24 tháng kể từ ngày mua.")), Language::Vi);
    }
}

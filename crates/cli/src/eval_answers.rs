//! `rag-engine eval answers DIR`: a SQuAD-style set (passages, questions,
//! the answer text and the passage that holds it) through the real
//! pipeline: the passages are ingested into a fresh workspace, every
//! question is produced as QuestionAsked and answered by the answerer stage
//! (extractive, or the configured LLM), and the projected answers are
//! scored: gold passage cited, answer text inside a cited span, citations
//! that do not slice the raw text, source ids dropped, quotes not located
//! or moved to the chunk that holds them,
//! sections without citations, latency and LLM tokens, overall and per
//! question language.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use rag_bus::EventProducer;
use rag_events::{Codec, Envelope, QuestionAsked};
use rag_store::messages::MessageStatus;
use serde::{Deserialize, Serialize};

use crate::config::Settings;
use crate::eval::{corpus_items, documents_by_corpus_id, read_jsonl, CorpusDoc, Query};
use crate::ingest::{ingest, IngestOptions};

#[derive(Args, Debug)]
pub struct AnswersArgs {
    /// Dataset directory: corpus.jsonl, queries.jsonl, answers.jsonl (`query-id`, `corpus-id`, `answer`).
    dir: PathBuf,
    /// Ask only the first N questions.
    #[arg(long)]
    max_questions: Option<usize>,
    /// Seconds to wait for each answer.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// Uploads in flight while ingesting.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Print JSON: {"all": {...}, "by_language": {...}, "questions": [...], "run": {...}}.
    #[arg(long)]
    json: bool,
}

#[derive(Deserialize)]
struct GoldAnswer {
    #[serde(rename = "query-id")]
    query_id: String,
    #[serde(rename = "corpus-id")]
    corpus_id: String,
    answer: String,
}

/// How one answer fared.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Scored {
    pub question_id: String,
    pub language: String,
    pub status: MessageStatus,
    pub mode: String,
    pub sections: usize,
    pub sections_without_citations: usize,
    pub citations: usize,
    /// A citation points into the passage that holds the answer.
    pub gold_cited: bool,
    /// The answer text (case and whitespace aside) lies inside a cited span.
    pub answer_in_citation: bool,
    /// Citations whose text is not `raw_text[char_start..char_end]`.
    pub bad_slices: usize,
    pub dropped_source_ids: usize,
    pub unlocated_quotes: usize,
    /// Quotes moved from a wrongly named source to the chunk that holds them.
    pub reattributed_quotes: usize,
    pub latency_ms: u64,
    pub llm_tokens: u64,
}

/// Totals over a group of answers.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Totals {
    pub questions: usize,
    pub answered: usize,
    pub failed: usize,
    pub gold_cited: f64,
    pub answer_in_citation: f64,
    pub bad_slices: usize,
    pub dropped_source_ids: usize,
    pub unlocated_quotes: usize,
    pub reattributed_quotes: usize,
    pub sections_without_citations: usize,
    pub latency_p50_ms: u64,
    pub latency_p95_ms: u64,
    pub llm_tokens: u64,
}

fn fold(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// What is known of a question before its answer.
pub struct Asked<'a> {
    pub id: &'a str,
    pub language: &'a str,
    /// The document id of the passage that holds the answer.
    pub gold_document: Option<&'a str>,
    /// The answer text as it appears in that passage.
    pub answer: &'a str,
}

/// Scores one projected assistant message. `raw_texts` gives a document's
/// full raw text (as characters) by document id.
pub fn score(
    asked: &Asked<'_>,
    metadata: &serde_json::Value,
    status: MessageStatus,
    raw_texts: &HashMap<String, Vec<char>>,
    latency: Duration,
) -> Scored {
    let Asked { id: question_id, language, gold_document, answer } = *asked;
    let empty = Vec::new();
    let sections = metadata["sections"].as_array().unwrap_or(&empty);
    let citations: Vec<&serde_json::Value> = sections.iter().flat_map(|s| s["citations"].as_array().unwrap_or(&empty)).collect();
    let wanted = fold(answer);
    let bad_slices = citations
        .iter()
        .filter(|c| {
            let doc = c["document_id"].as_str().unwrap_or_default();
            let (start, end) = (c["char_start"].as_u64().unwrap_or(0) as usize, c["char_end"].as_u64().unwrap_or(0) as usize);
            !raw_texts.get(doc).is_some_and(|full| rag_answer::cites_exactly(full, start, end, c["text"].as_str().unwrap_or_default()))
        })
        .count();
    let report = &metadata["retrieval"]["citation_report"];
    Scored {
        question_id: question_id.to_string(),
        language: language.to_string(),
        status,
        mode: metadata["mode"].as_str().unwrap_or_default().to_string(),
        sections: sections.len(),
        sections_without_citations: sections.iter().filter(|s| s["citations"].as_array().is_none_or(|c| c.is_empty())).count(),
        citations: citations.len(),
        gold_cited: gold_document.is_some_and(|g| citations.iter().any(|c| c["document_id"] == g)),
        answer_in_citation: !wanted.is_empty() && citations.iter().any(|c| fold(c["text"].as_str().unwrap_or_default()).contains(&wanted)),
        bad_slices,
        dropped_source_ids: report["dropped_source_ids"].as_array().map_or(0, Vec::len),
        unlocated_quotes: report["unlocated_quotes"].as_u64().unwrap_or(0) as usize,
        reattributed_quotes: report["reattributed_quotes"].as_u64().unwrap_or(0) as usize,
        latency_ms: latency.as_millis() as u64,
        llm_tokens: metadata["llm_usage"]["total_tokens"].as_u64().unwrap_or(0),
    }
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

pub fn totals<'a>(scored: impl Iterator<Item = &'a Scored>) -> Totals {
    let all: Vec<&Scored> = scored.collect();
    let n = all.len().max(1) as f64;
    let mut latencies: Vec<u64> = all.iter().map(|s| s.latency_ms).collect();
    latencies.sort_unstable();
    Totals {
        questions: all.len(),
        answered: all.iter().filter(|s| s.status == MessageStatus::Done).count(),
        failed: all.iter().filter(|s| s.status == MessageStatus::Failed).count(),
        gold_cited: all.iter().filter(|s| s.gold_cited).count() as f64 / n,
        answer_in_citation: all.iter().filter(|s| s.answer_in_citation).count() as f64 / n,
        bad_slices: all.iter().map(|s| s.bad_slices).sum(),
        dropped_source_ids: all.iter().map(|s| s.dropped_source_ids).sum(),
        unlocated_quotes: all.iter().map(|s| s.unlocated_quotes).sum(),
        reattributed_quotes: all.iter().map(|s| s.reattributed_quotes).sum(),
        sections_without_citations: all.iter().map(|s| s.sections_without_citations).sum(),
        latency_p50_ms: percentile(&latencies, 0.5),
        latency_p95_ms: percentile(&latencies, 0.95),
        llm_tokens: all.iter().map(|s| s.llm_tokens).sum(),
    }
}

pub async fn eval_answers(s: &Settings, args: AnswersArgs) -> anyhow::Result<ExitCode> {
    let corpus: Vec<CorpusDoc> = read_jsonl(&args.dir.join("corpus.jsonl"))?;
    let queries: Vec<Query> = read_jsonl(&args.dir.join("queries.jsonl"))?;
    let gold: Vec<GoldAnswer> = read_jsonl(&args.dir.join("answers.jsonl"))?;
    let text_of: HashMap<&str, &str> = queries.iter().map(|q| (q.id.as_str(), q.text.as_str())).collect();
    let mut asked: Vec<(&GoldAnswer, &str)> = gold.iter().filter_map(|g| text_of.get(g.query_id.as_str()).map(|t| (g, *t))).collect();
    if let Some(n) = args.max_questions {
        asked.truncate(n);
    }
    anyhow::ensure!(!corpus.is_empty() && !asked.is_empty(), "the dataset has no passages or no answered questions");
    let answers_by = if s.answer_llm_base_url.is_empty() { "extractive" } else { "the LLM (extractive as fallback)" };
    eprintln!("eval answers: {} passages, {} questions, answers by {answers_by}", corpus.len(), asked.len());

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
        if let Some(full) = rag_store::raw::full_text(&run.pool, &run.workspace, *document).await? {
            raw_texts.insert(document.to_string(), full);
        }
    }

    let producer = EventProducer::new(&pipeline.settings.bus(), Codec::embedded()?, "rag-engine/eval")?;
    let mut scored: Vec<Scored> = Vec::new();
    let started = Instant::now();
    for (i, (g, question)) in asked.iter().enumerate() {
        let assistant = uuid::Uuid::now_v7();
        let event = QuestionAsked {
            envelope: Envelope::originating(&run.workspace, "rag-engine/eval"),
            conversation_id: uuid::Uuid::now_v7().to_string(),
            user_message_id: uuid::Uuid::now_v7().to_string(),
            assistant_message_id: assistant.to_string(),
            question: question.to_string(),
            asked_by: "eval".into(),
            top_k: None,
            document_ids: Vec::new(),
        };
        let asked_at = Instant::now();
        producer.send(&event).await.context("producing QuestionAsked")?;
        let message = loop {
            if let Some(failed) = pipeline.failed_stage() {
                anyhow::bail!("a stage stopped during the run: {failed}");
            }
            if let Some(m) = rag_store::messages::get(&run.pool, &run.workspace, assistant).await? {
                if m.status != MessageStatus::Pending {
                    break m;
                }
            }
            anyhow::ensure!(
                asked_at.elapsed() < Duration::from_secs(args.timeout),
                "no answer to {} within {} s",
                g.query_id,
                args.timeout
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let language = rag_retrieval::detect_language(question).code();
        let gold_document = by_corpus.get(&g.corpus_id).map(|d| d.to_string());
        let asked_question = Asked { id: &g.query_id, language, gold_document: gold_document.as_deref(), answer: &g.answer };
        let s = score(&asked_question, &message.metadata, message.status, &raw_texts, asked_at.elapsed());
        if !args.json {
            eprintln!(
                "[{}/{}] {} {:<5} {:>6} ms  gold cited {}  answer in a citation {}{}",
                i + 1,
                asked.len(),
                g.query_id,
                s.mode,
                s.latency_ms,
                if s.gold_cited { "yes" } else { "no " },
                if s.answer_in_citation { "yes" } else { "no " },
                if s.bad_slices > 0 { format!("  {} bad slices", s.bad_slices) } else { String::new() }
            );
        }
        scored.push(s);
    }
    let question_seconds = started.elapsed().as_secs_f64();
    pipeline.stop().await;

    let all = totals(scored.iter());
    let mut by_language: BTreeMap<String, Totals> = BTreeMap::new();
    for lang in ["vi", "en", "other"] {
        let t = totals(scored.iter().filter(|s| s.language == lang));
        if t.questions > 0 {
            by_language.insert(lang.to_string(), t);
        }
    }
    let cited_documents: usize = scored.iter().filter(|s| s.gold_cited).count();
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "all": all, "by_language": by_language, "questions": scored,
                "run": {"passages": corpus.len(), "questions": asked.len(), "answers_by": answers_by,
                        "llm_model": s.answer_llm_model, "embedder": s.embedder.to_string(),
                        "ingest_seconds": run.total_seconds, "question_seconds": question_seconds, "workspace": run.workspace},
            }))?
        );
    } else {
        println!(
            "answers on {} ({} passages, {} questions; answers by {answers_by}; embedder {})",
            args.dir.display(),
            corpus.len(),
            asked.len(),
            s.embedder
        );
        println!(
            "{:<8} {:>9} {:>6} {:>11} {:>12} {:>10} {:>8} {:>10} {:>8} {:>12} {:>8} {:>8} {:>10}",
            "language",
            "questions",
            "failed",
            "gold cited",
            "answer cited",
            "bad slice",
            "dropped",
            "unlocated",
            "moved",
            "uncited sec",
            "p50 ms",
            "p95 ms",
            "LLM tokens"
        );
        for (lang, t) in std::iter::once(("all".to_string(), &all)).chain(by_language.iter().map(|(l, t)| (l.clone(), t))) {
            println!(
                "{lang:<8} {:>9} {:>6} {:>10.1}% {:>11.1}% {:>10} {:>8} {:>10} {:>8} {:>12} {:>8} {:>8} {:>10}",
                t.questions,
                t.failed,
                100.0 * t.gold_cited,
                100.0 * t.answer_in_citation,
                t.bad_slices,
                t.dropped_source_ids,
                t.unlocated_quotes,
                t.reattributed_quotes,
                t.sections_without_citations,
                t.latency_p50_ms,
                t.latency_p95_ms,
                t.llm_tokens
            );
        }
        println!(
            "workspace {}: ingest {:.1} s, questions {:.1} s ({cited_documents} of {} cited their gold passage)",
            run.workspace,
            run.total_seconds,
            question_seconds,
            asked.len()
        );
    }
    Ok(if all.bad_slices == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answer_is_scored_against_its_gold_passage_and_the_raw_text() {
        let raw: HashMap<String, Vec<char>> = [("d1".to_string(), "Doanh thu tăng 18% nhờ xuất khẩu.".chars().collect())].into();
        let metadata = json!({
            "mode": "llm",
            "sections": [
                {"text": "Doanh thu tăng 18%.", "citations": [{"document_id": "d1", "char_start": 0, "char_end": 18, "text": "Doanh thu tăng 18%"}]},
                {"text": "Không rõ.", "citations": []},
                {"text": "Sai.", "citations": [{"document_id": "d1", "char_start": 0, "char_end": 5, "text": "khác"}]}
            ],
            "retrieval": {"citation_report": {"dropped_source_ids": ["S9"], "unlocated_quotes": 2, "located_quotes": 1}},
            "llm_usage": {"total_tokens": 640}
        });
        let asked = |id, gold_document, answer| Asked { id, language: "vi", gold_document, answer };
        let s = score(&asked("q1", Some("d1"), "tăng  18%"), &metadata, MessageStatus::Done, &raw, Duration::from_millis(1500));
        assert!(s.gold_cited && s.answer_in_citation);
        assert_eq!((s.sections, s.sections_without_citations, s.citations, s.bad_slices), (3, 1, 2, 1));
        assert_eq!((s.dropped_source_ids, s.unlocated_quotes, s.llm_tokens, s.latency_ms), (1, 2, 640, 1500));
        let other = score(&asked("q2", Some("d2"), "profit"), &metadata, MessageStatus::Done, &raw, Duration::from_millis(500));
        assert!(!other.gold_cited && !other.answer_in_citation);

        let t = totals([s, other].iter());
        assert_eq!((t.questions, t.answered, t.bad_slices), (2, 2, 2));
        assert_eq!((t.gold_cited, t.latency_p50_ms, t.latency_p95_ms, t.llm_tokens), (0.5, 500, 1500, 1280));
    }
}

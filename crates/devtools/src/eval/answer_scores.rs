// ~380 lines of code, the rest tests: how an answer is scored and totalled, read together.
//! How `eval answers` judges an answer, as a user would (pure: the answer's
//! metadata and the documents' raw text in, figures out): the answer inside
//! a cited span, the gold passage cited, citations that do not slice the
//! raw text, abstention, and the totals and percentiles over questions.

use std::collections::HashMap;
use std::time::Duration;

use rag_store::messages::{AnswerMetadata, MessageStatus};
use serde::Serialize;

/// How one answer fared.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Scored {
    pub question_id: String,
    pub language: String,
    /// The passages answer the question (false: the answer should abstain).
    pub answerable: bool,
    pub status: MessageStatus,
    /// No answer came within `--timeout`: counted as failed, neither
    /// answered nor abstained.
    pub timed_out: bool,
    pub mode: String,
    /// The answer says the documents do not answer.
    pub abstained: bool,
    pub sections: usize,
    pub sections_without_citations: usize,
    pub citations: usize,
    /// A citation points into the passage that holds the answer (each
    /// part's, for a question that asks several things).
    pub gold_cited: bool,
    /// The answer text (case and whitespace aside) lies inside a cited span
    /// (every part's: `all_parts_in_citation`).
    pub answer_in_citation: bool,
    /// The parts of the question with a gold answer (more than one: a
    /// question that asks several things) and those whose answer lies
    /// inside a cited span.
    pub parts: usize,
    pub parts_in_citation: usize,
    /// Citations whose text is not `raw_text[char_start..char_end]`.
    pub bad_slices: usize,
    /// Ids the model cited that its prompt did not show (dropped).
    pub dropped_source_ids: usize,
    /// Quotes found in no chunk (the quote-based contract of answers stored
    /// before evidence ids; always 0 since).
    pub unlocated_quotes: usize,
    /// Sections the model gave without a valid citation (not shown).
    pub unsupported_sections: usize,
    /// Sections whose text held a number or name their citations do not,
    /// shown as the cited text instead (`rag_answer::faithful`).
    pub unfaithful_sections: usize,
    /// Sections given the evidence sentence that states their own words,
    /// their ids having named another or none (`rag_answer::support`).
    pub supported_sections: usize,
    /// Questions the model wrote into its answer, taken out before it was
    /// shown (`rag_answer::faithful::drop_questions`).
    pub question_sentences: usize,
    /// From asking to the first words of the answer reaching the page (the
    /// first streamed delta with text; the answer itself when nothing
    /// streamed).
    pub first_token_ms: u64,
    pub latency_ms: u64,
    pub llm_tokens: u64,
    /// The parts of the latency, when an LLM answered (0 otherwise):
    /// condensing, retrieval and reading segments; llama.cpp's own time for
    /// the answer's prompt and the check's (prefill + decode, their
    /// `timings`); the answer prompt's tokens; its prefill and decode speed.
    pub retrieval_ms: u64,
    pub llama_ms: u64,
    pub prompt_tokens: u64,
    /// llama.cpp's own prefill of the answer's prompt (its `prompt_ms`):
    /// what the first words cannot come before.
    pub prefill_ms: u64,
    pub prefill_tokens_per_s: f64,
    pub decode_tokens_per_s: f64,
    /// From the model's first words (the first token of a section's text,
    /// as the answerer read it) to the page's first words (the delta heard
    /// on the channel the API's streams listen to): what the system adds.
    pub stream_lag_ms: Option<u64>,
    /// The check's certainty that the cited sentences answer (0 to 1), when
    /// the provider gave token probabilities; `eval calibration` weighs it
    /// with the signals below over a run made with
    /// `ANSWER_ABSTAIN_THRESHOLD=0`.
    pub verify_score: Option<f64>,
    /// The check held the first answer back and the model looked again
    /// (`ANSWER_SECOND_LOOK`); the check's certainty about that first one.
    pub second_look: bool,
    pub first_look_score: Option<f64>,
    /// The answer's other signals (`rag_answer::signals`) and retrieval's
    /// confidence, as the calibration (`eval calibration`) reads them: the
    /// model's P(answerable), its mean token log-probability, the share of
    /// the question's content words in the cited sentences, the best
    /// retrieved chunk's cosine and BM25, and the share of the query's words
    /// in the best lexical hit.
    pub answerable_score: Option<f64>,
    pub answer_logprob: Option<f64>,
    pub cited_coverage: Option<f64>,
    pub cited_phrase_coverage: Option<f64>,
    pub best_cosine: Option<f64>,
    pub best_bm25: Option<f64>,
    pub lexical_coverage: Option<f64>,
    /// The question as the answerer searched with it (a signal added later
    /// can be computed from it and `cited` by `eval calibration`).
    pub question: Option<String>,
    /// What the answer said (its sections, or the check's rejected ones)
    /// and the text of each citation: to read why a question missed.
    pub answer_text: String,
    pub cited: Vec<String>,
    /// A question of several parts, part by part (empty for one part):
    /// each part's own decision signals, whether it abstained, and whether
    /// its gold answer lies inside a cited span of the answer. The decision
    /// judges each part on its own (`eval operating-points` does too).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub part_scores: Vec<PartScore>,
}

/// One part of a question that asks several things ([`Scored::part_scores`]).
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct PartScore {
    pub abstained: bool,
    pub verify_score: Option<f64>,
    pub answerable_score: Option<f64>,
    /// This part's gold answer lies inside a cited span (None: the part
    /// has no gold answer, or the question none at all).
    pub in_citation: Option<bool>,
}

#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Percentiles {
    pub p50: u64,
    pub p95: u64,
}

/// Totals over a group of answerable questions.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Totals {
    pub questions: usize,
    pub answered: usize,
    /// Failed answers, those that never came (`timed_out`) among them.
    pub failed: usize,
    pub timed_out: usize,
    pub abstained: usize,
    pub gold_cited: f64,
    pub answer_in_citation: f64,
    /// Questions that ask several things (a gold answer per part), the
    /// share of them with every part's answer inside a citation, and with
    /// at least one.
    pub compound_questions: usize,
    pub all_parts_in_citation: f64,
    pub some_part_in_citation: f64,
    pub bad_slices: usize,
    pub dropped_source_ids: usize,
    pub unlocated_quotes: usize,
    pub unsupported_sections: usize,
    /// Sections whose text held a number or name their citations do not,
    /// shown as the cited text instead (`rag_answer::faithful`).
    pub unfaithful_sections: usize,
    /// Questions the model wrote into its answers, taken out.
    pub question_sentences: usize,
    pub sections_without_citations: usize,
    pub first_token_ms: Percentiles,
    pub latency_ms: Percentiles,
    pub llm_tokens: u64,
    pub retrieval_ms: Percentiles,
    /// llama.cpp's own time for the same prompts, and the answer's latency
    /// over it (p50 of the per-question ratio).
    pub llama_ms: Percentiles,
    pub latency_over_llama: f64,
    pub prompt_tokens: Percentiles,
    pub prefill_tokens_per_s: f64,
    pub decode_tokens_per_s: f64,
    pub stream_lag_ms: Percentiles,
}

/// How the unanswerable questions fared.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Unanswerable {
    pub questions: usize,
    /// Fraction of them whose answer abstained.
    pub abstained: f64,
    /// Of them, those whose answer never came (`timed_out`): not abstained,
    /// but no answer shown either.
    pub timed_out: usize,
    /// Citations given to them, in all (each one cites something that does
    /// not answer).
    pub citations: usize,
}

fn fold(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// What is known of a question before its answer.
pub struct Asked<'a> {
    pub id: &'a str,
    pub language: &'a str,
    /// The document ids of the passages that hold the answer (one per part
    /// of a question that asks several things).
    pub gold_documents: &'a [String],
    /// The answer text as it appears in that passage, one per part; none
    /// when the passages do not answer.
    pub answers: &'a [&'a str],
}

/// Scores one projected assistant message. `raw_texts` gives a document's
/// full raw text (as characters) by document id.
pub fn score(
    asked: &Asked<'_>,
    answer: &AnswerMetadata,
    status: MessageStatus,
    raw_texts: &HashMap<String, Vec<char>>,
    first_token: Duration,
    latency: Duration,
    first_words_at_ms: Option<u64>,
) -> Scored {
    let Asked { id: question_id, language, gold_documents, answers } = *asked;
    let sections = &answer.sections;
    let citations: Vec<&rag_events::Citation> = sections.iter().flat_map(|s| &s.citations).collect();
    let cited_text = |c: &rag_events::Citation| c.text.clone().unwrap_or_default();
    let in_citation = |answer: &str| {
        let wanted = fold(answer);
        !wanted.is_empty() && citations.iter().any(|c| fold(&cited_text(c)).contains(&wanted))
    };
    let parts_in_citation = answers.iter().filter(|a| in_citation(a)).count();
    let bad_slices = citations
        .iter()
        .filter(|c| {
            let (start, end) = (c.char_start.max(0) as usize, c.char_end.max(0) as usize);
            !raw_texts.get(&c.document_id).is_some_and(|full| rag_answer::cites_exactly(full, start, end, &cited_text(c)))
        })
        .count();
    let report: rag_answer::CitationReport = answer.retrieval.citation_report_as();
    let timings = answer.retrieval.detail("llm_timings");
    Scored {
        question_id: question_id.to_string(),
        language: language.to_string(),
        answerable: !answers.is_empty(),
        status,
        timed_out: false,
        mode: answer.mode.clone(),
        abstained: answer.abstained,
        sections: sections.len(),
        sections_without_citations: sections.iter().filter(|s| s.citations.is_empty()).count(),
        citations: citations.len(),
        gold_cited: !gold_documents.is_empty() && gold_documents.iter().all(|g| citations.iter().any(|c| &c.document_id == g)),
        answer_in_citation: !answers.is_empty() && parts_in_citation == answers.len(),
        parts: answers.len(),
        parts_in_citation,
        bad_slices,
        dropped_source_ids: report.dropped_source_ids.len(),
        unlocated_quotes: report.unlocated_quotes,
        unsupported_sections: report.unsupported_sections.len(),
        unfaithful_sections: report.unfaithful_sections.len(),
        supported_sections: report.supported_sections,
        question_sentences: report.question_sentences,
        first_token_ms: first_token.min(latency).as_millis() as u64,
        latency_ms: latency.as_millis() as u64,
        llm_tokens: answer.llm_usage.as_ref().map_or(0, |u| u.total_tokens.max(0) as u64),
        retrieval_ms: answer.retrieval.detail("retrieval_ms").as_u64().unwrap_or(0),
        llama_ms: {
            let llm = rag_answer::llm::server_ms(timings).unwrap_or(0);
            // Unknown (0) when the server gave no timings for the answer.
            if llm == 0 {
                0
            } else {
                llm + report.verify_llm_ms.unwrap_or(0) + report.first_look_llm_ms.unwrap_or(0)
            }
        },
        prompt_tokens: timings["prompt_n"].as_u64().unwrap_or(0),
        prefill_ms: timings["prompt_ms"].as_f64().unwrap_or(0.0) as u64,
        prefill_tokens_per_s: timings["prompt_per_second"].as_f64().unwrap_or(0.0),
        decode_tokens_per_s: timings["predicted_per_second"].as_f64().unwrap_or(0.0),
        stream_lag_ms: first_words_at_ms
            .zip(answer.retrieval.detail("llm_first_words_at_ms").as_u64())
            .map(|(page, model)| page.saturating_sub(model)),
        verify_score: report.verify_score,
        second_look: report.second_looks > 0,
        first_look_score: report.first_look_score,
        answerable_score: report.answerable_score,
        answer_logprob: report.answer_logprob,
        cited_coverage: report.cited_coverage,
        cited_phrase_coverage: report.cited_phrase_coverage,
        question: answer.retrieval.query.clone(),
        best_cosine: best_of(answer.retrieval.detail("chunks"), "cosine"),
        best_bm25: best_of(answer.retrieval.detail("chunks"), "bm25"),
        lexical_coverage: answer.retrieval.detail("fusion")["lexical_coverage"].as_f64(),
        answer_text: {
            let shown = sections.iter().map(|s| s.text.as_str());
            shown.chain(report.rejected_sections.iter().map(String::as_str)).collect::<Vec<_>>().join(" | ")
        },
        cited: citations.iter().filter_map(|c| c.text.clone()).collect(),
        part_scores: answer
            .retrieval
            .detail("parts")
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, p)| PartScore {
                abstained: p["abstained"].as_bool().unwrap_or(true),
                verify_score: p["citation_report"]["verify_score"].as_f64(),
                answerable_score: p["citation_report"]["answerable_score"].as_f64(),
                in_citation: answers.get(i).map(|a| in_citation(a)),
            })
            .collect(),
    }
}

/// The largest `key` among the retrieved chunks (None when none has it).
fn best_of(chunks: &serde_json::Value, key: &str) -> Option<f64> {
    chunks.as_array()?.iter().filter_map(|c| c[key].as_f64()).reduce(f64::max)
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = values.filter(|x| *x > 0.0).collect();
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn percentiles(mut values: Vec<u64>) -> Percentiles {
    values.sort_unstable();
    Percentiles { p50: percentile(&values, 0.5), p95: percentile(&values, 0.95) }
}

/// Totals over the answerable questions among `scored`.
pub fn totals<'a>(scored: impl Iterator<Item = &'a Scored>) -> Totals {
    let all: Vec<&Scored> = scored.filter(|s| s.answerable).collect();
    let n = all.len().max(1) as f64;
    Totals {
        questions: all.len(),
        answered: all.iter().filter(|s| s.status == MessageStatus::Done).count(),
        failed: all.iter().filter(|s| s.status == MessageStatus::Failed).count(),
        timed_out: all.iter().filter(|s| s.timed_out).count(),
        abstained: all.iter().filter(|s| s.abstained).count(),
        gold_cited: all.iter().filter(|s| s.gold_cited).count() as f64 / n,
        answer_in_citation: all.iter().filter(|s| s.answer_in_citation).count() as f64 / n,
        compound_questions: all.iter().filter(|s| s.parts > 1).count(),
        all_parts_in_citation: {
            let compound: Vec<&&Scored> = all.iter().filter(|s| s.parts > 1).collect();
            compound.iter().filter(|s| s.answer_in_citation).count() as f64 / compound.len().max(1) as f64
        },
        some_part_in_citation: {
            let compound: Vec<&&Scored> = all.iter().filter(|s| s.parts > 1).collect();
            compound.iter().filter(|s| s.parts_in_citation > 0).count() as f64 / compound.len().max(1) as f64
        },
        bad_slices: all.iter().map(|s| s.bad_slices).sum(),
        dropped_source_ids: all.iter().map(|s| s.dropped_source_ids).sum(),
        unlocated_quotes: all.iter().map(|s| s.unlocated_quotes).sum(),
        unsupported_sections: all.iter().map(|s| s.unsupported_sections).sum(),
        unfaithful_sections: all.iter().map(|s| s.unfaithful_sections).sum(),
        question_sentences: all.iter().map(|s| s.question_sentences).sum(),
        sections_without_citations: all.iter().map(|s| s.sections_without_citations).sum(),
        first_token_ms: percentiles(all.iter().map(|s| s.first_token_ms).collect()),
        latency_ms: percentiles(all.iter().map(|s| s.latency_ms).collect()),
        llm_tokens: all.iter().map(|s| s.llm_tokens).sum(),
        retrieval_ms: percentiles(all.iter().map(|s| s.retrieval_ms).collect()),
        llama_ms: percentiles(all.iter().filter(|s| s.llama_ms > 0).map(|s| s.llama_ms).collect()),
        latency_over_llama: {
            let mut r: Vec<f64> = all.iter().filter(|s| s.llama_ms > 0).map(|s| s.latency_ms as f64 / s.llama_ms as f64).collect();
            r.sort_by(f64::total_cmp);
            r.get(r.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
        },
        prompt_tokens: percentiles(all.iter().filter(|s| s.prompt_tokens > 0).map(|s| s.prompt_tokens).collect()),
        prefill_tokens_per_s: mean(all.iter().map(|s| s.prefill_tokens_per_s)),
        decode_tokens_per_s: mean(all.iter().map(|s| s.decode_tokens_per_s)),
        stream_lag_ms: percentiles(all.iter().filter_map(|s| s.stream_lag_ms).collect()),
    }
}

/// How the unanswerable questions among `scored` fared.
pub fn unanswerable<'a>(scored: impl Iterator<Item = &'a Scored>) -> Unanswerable {
    let none: Vec<&Scored> = scored.filter(|s| !s.answerable).collect();
    Unanswerable {
        questions: none.len(),
        abstained: none.iter().filter(|s| s.abstained).count() as f64 / none.len().max(1) as f64,
        timed_out: none.iter().filter(|s| s.timed_out).count(),
        citations: none.iter().map(|s| s.citations).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The stored metadata of an answer written in short: each section and
    /// citation has only the fields a test reads, the rest are filled in.
    fn answer(mut v: serde_json::Value) -> AnswerMetadata {
        for s in v["sections"].as_array_mut().into_iter().flatten() {
            s["source_ids"] = json!([]);
            for c in s["citations"].as_array_mut().into_iter().flatten() {
                for (k, d) in [
                    ("source_id", json!("S1")),
                    ("chunk_id", json!("c")),
                    ("segment_index", json!(0)),
                    ("page_idx", json!(0)),
                    ("snippet_preview", json!("")),
                ] {
                    c.as_object_mut().expect("a citation").entry(k).or_insert(d);
                }
            }
        }
        if let Some(u) = v["llm_usage"].as_object_mut() {
            for k in ["prompt_tokens", "completion_tokens"] {
                u.entry(k).or_insert(json!(0));
            }
            u.entry("model").or_insert(json!("m"));
        }
        AnswerMetadata::of_stored(&v).expect("an answer's metadata")
    }

    #[test]
    fn an_answer_is_scored_against_its_gold_passage_and_the_raw_text() {
        let raw: HashMap<String, Vec<char>> = [("d1".to_string(), "Doanh thu tăng 18% nhờ xuất khẩu.".chars().collect())].into();
        let metadata = answer(json!({
            "mode": "llm",
            "sections": [
                {"text": "Doanh thu tăng 18%.", "citations": [{"document_id": "d1", "char_start": 0, "char_end": 18, "text": "Doanh thu tăng 18%"}]},
                {"text": "Không rõ.", "citations": []},
                {"text": "Sai.", "citations": [{"document_id": "d1", "char_start": 0, "char_end": 5, "text": "khác"}]}
            ],
            "retrieval": {"citation_report": {"dropped_source_ids": ["S9"], "unsupported_sections": ["x", "y"]},
                          "retrieval_ms": 30, "llm_first_words_at_ms": 10_000,
                          "llm_timings": {"prompt_n": 700, "prompt_ms": 700.0, "predicted_ms": 300.0, "prompt_per_second": 1000.0, "predicted_per_second": 20.0}},
            "llm_usage": {"total_tokens": 640}
        }));
        let asked = |id: &'static str, gold_document: Option<&str>, answer: Option<&'static str>| {
            let gold_documents: Vec<String> = gold_document.map(str::to_string).into_iter().collect();
            let answers: Vec<&'static str> = answer.into_iter().collect();
            (id, gold_documents, answers)
        };
        let score = |(id, gold_documents, answers): (&'static str, Vec<String>, Vec<&'static str>),
                     metadata: &AnswerMetadata,
                     status,
                     raw: &HashMap<String, Vec<char>>,
                     first,
                     latency,
                     at| {
            score(
                &Asked { id, language: "vi", gold_documents: &gold_documents, answers: &answers },
                metadata,
                status,
                raw,
                first,
                latency,
                at,
            )
        };
        let ms = Duration::from_millis;
        let s = score(asked("q1", Some("d1"), Some("tăng  18%")), &metadata, MessageStatus::Done, &raw, ms(400), ms(1500), Some(10_250));
        assert!(s.gold_cited && s.answer_in_citation && s.answerable && !s.abstained);
        assert_eq!((s.sections, s.sections_without_citations, s.citations, s.bad_slices), (3, 1, 2, 1));
        assert_eq!((s.dropped_source_ids, s.unsupported_sections, s.llm_tokens), (1, 2, 640));
        assert_eq!((s.first_token_ms, s.latency_ms), (400, 1500));
        assert_eq!((s.retrieval_ms, s.llama_ms, s.prompt_tokens, s.stream_lag_ms), (30, 1000, 700, Some(250)));
        let other = score(asked("q2", Some("d2"), Some("profit")), &metadata, MessageStatus::Done, &raw, ms(500), ms(500), None);
        assert!(!other.gold_cited && !other.answer_in_citation);

        // Unanswerable: one abstained without citations, one answered.
        let abstained = answer(
            json!({"mode": "llm", "abstained": true, "sections": [{"text": "Tài liệu của bạn không đề cập đến nội dung này.", "citations": []}]}),
        );
        let u1 = score(asked("u1", None, None), &abstained, MessageStatus::Done, &raw, ms(900), ms(900), None);
        let u2 = score(asked("u2", None, None), &metadata, MessageStatus::Done, &raw, ms(900), ms(900), None);
        assert!(!u1.answerable && u1.abstained && !u2.abstained);

        let all = [s, other, u1, u2];
        let t = totals(all.iter());
        assert_eq!((t.questions, t.answered, t.bad_slices, t.abstained), (2, 2, 2, 0));
        assert_eq!((t.gold_cited, t.llm_tokens), (0.5, 1280));
        assert_eq!((t.first_token_ms, t.latency_ms), (Percentiles { p50: 400, p95: 500 }, Percentiles { p50: 500, p95: 1500 }));
        assert_eq!(unanswerable(all.iter()), Unanswerable { questions: 2, abstained: 0.5, timed_out: 0, citations: 2 });
        // The latency over llama.cpp's own time: 1500/1000 and 500/1000.
        assert_eq!((t.llama_ms.p50, t.latency_over_llama, t.stream_lag_ms.p50), (1000, 0.5, 250));
    }

    #[test]
    fn an_answer_that_never_came_is_failed_not_answered_nor_abstained() {
        // As `eval answers` scores a question past its `--timeout`.
        let raw: HashMap<String, Vec<char>> = HashMap::new();
        fn never(id: &str, answers: &[&str], gold_documents: &[String], raw: &HashMap<String, Vec<char>>) -> Scored {
            let wait = Duration::from_secs(300);
            let asked = Asked { id, language: "vi", gold_documents, answers };
            Scored { timed_out: true, ..score(&asked, &AnswerMetadata::default(), MessageStatus::Failed, raw, wait, wait, None) }
        }
        let gold = ["d1".to_string()];
        let all = [never("q1", &["24 tháng"], &gold, &raw), never("u1", &[], &[], &raw)];
        let t = totals(all.iter());
        assert_eq!((t.questions, t.answered, t.failed, t.timed_out, t.abstained), (1, 0, 1, 1, 0));
        assert_eq!((t.answer_in_citation, t.latency_ms.p50), (0.0, 300_000));
        assert_eq!(unanswerable(all.iter()), Unanswerable { questions: 1, abstained: 0.0, timed_out: 1, citations: 0 });
    }

    #[test]
    fn a_question_that_asks_two_things_needs_both_answers_cited() {
        let raw: HashMap<String, Vec<char>> = HashMap::new();
        let metadata = answer(json!({"mode": "llm", "sections": [
            {"text": "Doanh thu tăng 18%.", "citations": [{"document_id": "d1", "char_start": 0, "char_end": 18, "text": "Doanh thu tăng 18%"}]},
            {"text": "Tài liệu của bạn không đề cập đến nội dung này.", "citations": []}
        ]}));
        let gold = ["d1".to_string(), "d2".to_string()];
        let ms = Duration::from_millis;
        let one = score(
            &Asked { id: "c1", language: "vi", gold_documents: &gold, answers: &["18%", "9%"] },
            &metadata,
            MessageStatus::Done,
            &raw,
            ms(1),
            ms(1),
            None,
        );
        assert_eq!((one.parts, one.parts_in_citation, one.answer_in_citation, one.gold_cited), (2, 1, false, false));
        let both = score(
            &Asked { id: "c2", language: "vi", gold_documents: &gold[..1], answers: &["18%", "Doanh thu"] },
            &metadata,
            MessageStatus::Done,
            &raw,
            ms(1),
            ms(1),
            None,
        );
        assert_eq!((both.parts, both.parts_in_citation, both.answer_in_citation, both.gold_cited), (2, 2, true, true));
        let t = totals([one, both].iter());
        assert_eq!((t.compound_questions, t.all_parts_in_citation, t.some_part_in_citation), (2, 0.5, 1.0));
    }
}

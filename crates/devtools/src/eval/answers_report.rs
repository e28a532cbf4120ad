//! What `rag-dev eval answers` says about a run: a line per question while
//! it runs, then the figures overall, per language, per way of typing and
//! per form of the forms set, for people or as JSON. Pure: the run's
//! scored questions in, text out.

use std::collections::BTreeMap;

use rag_store::messages::{AnswerMetadata, MessageRow, MessageStatus};

use super::answer_scores::{totals, unanswerable, Scored, Totals, Unanswerable};
use super::forms::FormFigures;

/// The line printed (stderr) as question `at` of `of` is scored.
pub(super) fn progress(at: usize, of: usize, id: &str, s: &Scored) {
    let verdict = if s.timed_out {
        "TIMED OUT: counted as failed".to_string()
    } else if s.answerable {
        format!(
            "gold cited {}  answer in a citation {}",
            if s.gold_cited { "yes" } else { "no " },
            if s.answer_in_citation { "yes" } else { "no " }
        )
    } else {
        format!("unanswerable: {}", if s.abstained && s.citations == 0 { "abstained" } else { "ANSWERED" })
    };
    eprintln!(
        "[{at}/{of}] {id} {:<10} first words {:>6} ms  answer {:>6} ms  {verdict}{}",
        s.mode,
        s.first_token_ms,
        s.latency_ms,
        if s.bad_slices > 0 { format!("  {} bad slices", s.bad_slices) } else { String::new() }
    );
}

/// Whether a reply is written with Vietnamese marks (a word that folding
/// changes).
fn has_vietnamese_marks(text: &str) -> bool {
    rag_lexical::words(text).iter().any(|w| rag_lexical::fold(w) != *w)
}

/// `text` without its capitalised words: an English answer keeps the
/// documents' names as they are written ("The storm flooded the roads in
/// Quảng Bình."), and they say nothing of the language it is written in.
fn without_names(text: &str) -> String {
    text.split_whitespace().filter(|w| !w.chars().next().is_some_and(char::is_uppercase)).collect::<Vec<_>>().join(" ")
}

/// The language replies were written in: Vietnamese questions and the
/// replies with marks; English questions given an answer in a language
/// that can be told, and the answers shown in English (over Vietnamese
/// documents a small model may answer in the documents' language; a
/// section the faithfulness check replaced by its cited text counts as
/// shown).
#[derive(Debug, Default)]
pub(super) struct ReplyLanguages {
    vietnamese_questions: usize,
    replies_with_marks: usize,
    replies_without_marks: Vec<String>,
    english_answered: usize,
    answers_in_english: usize,
    answers_not_in_english: Vec<String>,
}

impl ReplyLanguages {
    /// Counts the reply to question `id`, asked in `language`.
    pub(super) fn note(&mut self, id: &str, language: &str, message: &MessageRow, answer: &AnswerMetadata, s: &Scored) {
        if message.status == MessageStatus::Failed {
            return;
        }
        if language == "vi" {
            self.vietnamese_questions += 1;
            if has_vietnamese_marks(&message.content) {
                self.replies_with_marks += 1;
            } else {
                self.replies_without_marks.push(format!("{id}: {}", message.content));
            }
        }
        if language == "en" && !s.abstained && s.sections > 0 {
            let shown = answer.sections.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join(" ");
            // Names and figures alone ("Nguyễn Văn An.") say no language:
            // such an answer is counted neither way.
            match rag_retrieval::detect_language(&without_names(&shown)) {
                rag_retrieval::Language::Other => {}
                rag_retrieval::Language::En => {
                    self.english_answered += 1;
                    self.answers_in_english += 1;
                }
                rag_retrieval::Language::Vi => {
                    self.english_answered += 1;
                    self.answers_not_in_english.push(format!("{id}: {shown}"));
                }
            }
        }
    }
}

/// A run's figures.
pub(super) struct Report<'a> {
    scored: &'a [Scored],
    all: Totals,
    none: Unanswerable,
    by_language: BTreeMap<String, Totals>,
    /// By the way the question was typed (`rag_retrieval::query_form`).
    by_form: BTreeMap<&'static str, Totals>,
    /// By the form the forms set's query ids name.
    question_forms: BTreeMap<String, FormFigures>,
    replies: ReplyLanguages,
}

impl<'a> Report<'a> {
    /// `forms`: the way each question was typed, beside `scored`.
    pub(super) fn of(scored: &'a [Scored], forms: &[&'static str], replies: ReplyLanguages) -> Self {
        let mut by_language: BTreeMap<String, Totals> = BTreeMap::new();
        for lang in ["vi", "en", "other"] {
            let t = totals(scored.iter().filter(|s| s.language == lang));
            if t.questions > 0 {
                by_language.insert(lang.to_string(), t);
            }
        }
        let mut by_form: BTreeMap<&'static str, Totals> = BTreeMap::new();
        for form in ["accented", "unaccented", "mixed", "english", "other"] {
            let t = totals(scored.iter().zip(forms).filter(|(_, f)| **f == form).map(|(s, _)| s));
            if t.questions > 0 {
                by_form.insert(form, t);
            }
        }
        Report {
            scored,
            all: totals(scored.iter()),
            none: unanswerable(scored.iter()),
            by_language,
            by_form,
            question_forms: super::forms::by_form(scored),
            replies,
        }
    }

    /// `--json`: the figures, every question and `run` (what ran).
    pub(super) fn json(&self, stripped: bool, run: serde_json::Value) -> serde_json::Value {
        let r = &self.replies;
        serde_json::json!({
            "all": self.all, "by_language": self.by_language, "by_form": self.by_form, "by_question_form": self.question_forms,
            "unanswerable": self.none,
            "vietnamese_replies": {
                "questions": r.vietnamese_questions, "with_marks": r.replies_with_marks, "without_marks": r.replies_without_marks,
                "questions_stripped_of_diacritics": stripped,
            },
            "english_answers": {"answered": r.english_answered, "in_english": r.answers_in_english, "not_in_english": r.answers_not_in_english},
            "questions": self.scored,
            "run": run,
        })
    }

    /// For people, on stdout.
    pub(super) fn print(&self, stripped: bool) {
        let all = &self.all;
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
        for (lang, t) in std::iter::once(("all".to_string(), all)).chain(self.by_language.iter().map(|(l, t)| (l.clone(), t))) {
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
        let none = &self.none;
        if none.questions > 0 {
            println!(
                "unanswerable: {} questions, {:.1}% abstained, {} citations given to them{}",
                none.questions,
                100.0 * none.abstained,
                none.citations,
                if none.timed_out > 0 { format!(", {} never answered (timed out)", none.timed_out) } else { String::new() }
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
        for (form, t) in &self.by_form {
            println!(
                "form {form:<10} {:>3} answerable: answer in a citation {:.1}%, gold cited {:.1}%, abstained {}",
                t.questions,
                100.0 * t.answer_in_citation,
                100.0 * t.gold_cited,
                t.abstained
            );
        }
        super::forms::print(&self.question_forms);
        let sum = |f: fn(&Scored) -> usize| -> usize { self.scored.iter().map(f).sum() };
        println!(
            "sections shown as their cited text for a number or name the citations lack (unfaithful): {}",
            sum(|s| s.unfaithful_sections)
        );
        println!(
            "sections given the sentence that states their own words, their ids naming another (supported): {}",
            sum(|s| s.supported_sections)
        );
        println!("questions the model wrote into its answers, taken out: {}", sum(|s| s.question_sentences));
        let r = &self.replies;
        if r.vietnamese_questions > 0 {
            println!(
                "Vietnamese questions{}: {} of {} replies written with Vietnamese marks",
                if stripped { " (asked without diacritics)" } else { "" },
                r.replies_with_marks,
                r.vietnamese_questions
            );
            for reply in &r.replies_without_marks {
                println!("  without marks: {reply}");
            }
        }
        if r.english_answered > 0 {
            println!("English questions: {} of {} answers shown in English", r.answers_in_english, r.english_answered);
            for reply in &r.answers_not_in_english {
                println!("  not in English: {reply}");
            }
        }
    }
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

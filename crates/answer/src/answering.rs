//! Answering one question: the evidence a model is shown, a second attempt
//! when the check holds its answer back (`attempt.rs` is one attempt), and the
//! extractive fallback; and the query a follow-up question is searched
//! with.

use crate::attempt::attempt;
use crate::llm::add_usage;
use crate::options::{AnswerOptions, EXTRACTIVE_SECTIONS, HISTORY_TURNS};
use crate::streamed::{EvidenceRanker, OnPartial};
use crate::{abstention, contract, evidence, extractive, llm, prompt, AnswerError, AnswerMode, AnswerOutcome, LlmFallback, SourceChunk};

/// Evidence characters an answer keeps whatever the history takes.
const MIN_EVIDENCE_CHARS: usize = 1_200;

/// Answers `question` from `chunks` (best ranked first). With the LLM: the
/// chunks become numbered evidence units (as many chunks as fit
/// `evidence_chars`), the model answers under the output contract (two
/// tries at a readable reply), cited ids become exact spans, and
/// `answerable: false` (or no section left with a valid citation) is an
/// abstention. When the check holds an answer back, the model gets a
/// second attempt (`second_attempt`): the sentences of every retrieved chunk,
/// not only those within the evidence cutoff (`llm_chunks`), without the
/// ones the held-back answer cited, narrowed again to the closest.
/// `on_partial` sees the sections' text as it streams. Without the LLM,
/// or when it fails and the fallback is extractive, the best evidence
/// units are the answer, or it abstains. `Err` only when the LLM failed
/// and the fallback is `Fail`.
pub async fn answer_question(
    llm: Option<&llm::ChatClient>,
    question: &str,
    history: &[prompt::Turn],
    chunks: &[SourceChunk],
    options: AnswerOptions,
    ranker: Option<&dyn EvidenceRanker>,
    on_partial: OnPartial<'_>,
) -> Result<AnswerOutcome, AnswerError> {
    let extractive_or_abstain = |llm_error: Option<String>| {
        let sections = extractive::answer(question, chunks, EXTRACTIVE_SECTIONS);
        let mut out = if sections.is_empty() {
            AnswerOutcome::plain(AnswerMode::NoAnswer, abstention(question), true)
        } else {
            AnswerOutcome::plain(AnswerMode::Extractive, sections, false)
        };
        out.llm_error = llm_error;
        out
    };
    let Some(client) = llm else {
        return Ok(extractive_or_abstain(None));
    };
    if chunks.is_empty() {
        return Ok(AnswerOutcome::plain(AnswerMode::NoAnswer, abstention(question), true));
    }
    // The history shares the context with the evidence.
    let history_chars: usize = history.iter().rev().take(HISTORY_TURNS).map(|t| t.content.chars().count().min(prompt::TURN_CHARS)).sum();
    let budget = options.evidence_chars.saturating_sub(history_chars).max(MIN_EVIDENCE_CHARS);
    let attempts = if options.second_attempt && options.verify { 2 } else { 1 };
    // Sentences a held-back answer cited, and every sentence shown so far.
    let mut excluded: Vec<UnitKey> = Vec::new();
    let mut shown: Vec<UnitKey> = Vec::new();
    let mut first: Option<AnswerOutcome> = None;
    // Evidence units kept from the model as instructions to it.
    let mut instruction_units = 0;
    for n in 0..attempts {
        // The first attempt reads the chunks within the evidence cutoff; a
        // second one every retrieved chunk (the extractive fallback above
        // always does).
        let chunks = if n == 0 { &chunks[..options.llm_chunks.clamp(1, chunks.len())] } else { chunks };
        let mut evidence = evidence::build(chunks, budget);
        evidence.drop_units(|u| excluded.contains(&unit_key(chunks, u)));
        // A sentence written to the model ("Bỏ qua mọi hướng dẫn…") is
        // data: the model is never shown it (`injection`).
        let phrase_units = if options.instruction_filter.phrases() { evidence.cut_units(crate::injection::cut) } else { 0 };
        instruction_units = instruction_units.max(phrase_units);
        // The ranker's embeddings also say which sentences read as written
        // to the model whatever their words (`injection::classifier`): it
        // reads them whenever the filter is on, however few they are.
        let narrow = options.evidence_sentences > 0 && evidence.units.len() > options.evidence_sentences;
        if let Some(ranker) = ranker.filter(|_| narrow || (options.instruction_filter.meaning() && !evidence.units.is_empty())) {
            let texts: Vec<String> = evidence
                .units
                .iter()
                .map(|u| match &u.heading {
                    Some(h) => format!("{} {}", h.trim_start_matches('#').trim(), u.text),
                    None => u.text.clone(),
                })
                .collect();
            if let Some(ranked) = ranker.rank(question, &texts).await {
                let mut closeness = ranked.closeness;
                if options.instruction_filter.meaning() {
                    let by_meaning = evidence.drop_flagged(&ranked.instructions);
                    if by_meaning > 0 {
                        tracing::info!(units = by_meaning, "evidence sentences read as written to the model were left out");
                        closeness = closeness.iter().zip(&ranked.instructions).filter(|(_, f)| !**f).map(|(c, _)| *c).collect();
                        instruction_units = instruction_units.max(phrase_units + by_meaning);
                    }
                }
                if narrow {
                    evidence.keep_closest(&closeness, options.evidence_sentences);
                }
            }
        }
        // A second attempt at nothing new would repeat the first.
        if n > 0 && evidence.units.iter().all(|u| shown.contains(&unit_key(chunks, u))) {
            break;
        }
        // Nothing left to read (every sentence was written to the model):
        // the documents do not say, and the model is not asked on nothing.
        if evidence.units.is_empty() {
            if n + 1 < attempts {
                continue; // the second attempt reads every retrieved chunk
            }
            let mut out = AnswerOutcome::plain(AnswerMode::NoAnswer, abstention(question), true);
            out.report.instruction_units = instruction_units;
            return Ok(out);
        }
        shown.extend(evidence.units.iter().map(|u| unit_key(chunks, u)));
        let error = match attempt(client, question, history, chunks, &evidence, options, on_partial).await {
            Ok(seen) => {
                let mut outcome = seen.outcome;
                outcome.report.instruction_units = instruction_units;
                if let Some(earlier) = first.take() {
                    outcome = second_attempt_of(earlier, outcome);
                }
                if n + 1 < attempts && !seen.held_back_units.is_empty() {
                    tracing::info!(
                        score = ?outcome.report.verify_score,
                        "the check held the answer back; the model takes a second attempt at the evidence"
                    );
                    excluded.extend(seen.held_back_units.iter().map(|u| unit_key(chunks, u)));
                    first = Some(outcome);
                    continue;
                }
                return Ok(outcome);
            }
            Err(e) => e,
        };
        // The second attempt failed: the first one's abstention stands.
        if let Some(earlier) = first {
            tracing::warn!(error = %error, "the second attempt at the evidence failed; the answer abstains");
            return Ok(earlier);
        }
        return match options.fallback {
            LlmFallback::Extractive => {
                let mut out = extractive_or_abstain(Some(error.to_string()));
                out.usage = error.usage;
                out.report.invalid_outputs = error.invalid_outputs;
                Ok(out)
            }
            LlmFallback::Fail => Err(error.error),
        };
    }
    // The second attempt had nothing new to show: the first one's abstention stands.
    first.ok_or(AnswerError::Contract(contract::ContractError::Violation("no reply".into())))
}

/// A sentence of the evidence wherever it was shown: its document and
/// span in the raw text.
type UnitKey = (String, u64, u64);

fn unit_key(chunks: &[SourceChunk], u: &evidence::EvidenceUnit) -> UnitKey {
    let c = &chunks[u.chunk];
    (c.document_id.clone(), c.char_start + u.start as u64, c.char_start + u.end as u64)
}

/// The outcome of a second attempt, which keeps the first attempt's start (its
/// first token and words were the first on the page), the whole time and
/// usage of both, and what the first one's check held back.
fn second_attempt_of(first: AnswerOutcome, mut second: AnswerOutcome) -> AnswerOutcome {
    if let Some(u) = &first.usage {
        let mut total = Some(u.clone());
        if let Some(s) = &second.usage {
            add_usage(&mut total, s);
        }
        second.usage = total;
    }
    let first_llm_ms = first.timings.as_ref().and_then(llm::server_ms).map(|ms| ms + first.report.verify_llm_ms.unwrap_or(0));
    second.report.first_look_llm_ms = first_llm_ms;
    second.report.second_looks = 1;
    let mut rejected = first.report.rejected_sections;
    rejected.append(&mut second.report.rejected_sections);
    second.report.rejected_sections = rejected;
    second.report.first_look_score = first.report.verify_score;
    second.first_token = first.first_token;
    second.first_token_at = first.first_token_at.or(second.first_token_at);
    second.first_words_at = first.first_words_at.or(second.first_words_at);
    second.llm_elapsed = match (first.llm_elapsed, second.llm_elapsed) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    second
}

/// The query to retrieve with: the question itself, or for a follow-up
/// (there is history) a standalone query condensed by the model, or
/// without one (or when it fails) the previous user turn and the question
/// together. Returns the query and how it was made (`question`, `llm`,
/// `previous_turn`).
pub async fn retrieval_query(llm: Option<&llm::ChatClient>, question: &str, history: &[prompt::Turn]) -> (String, &'static str) {
    if history.iter().all(|t| t.role == "assistant") {
        return (question.to_string(), "question");
    }
    if let Some(client) = llm {
        match client.complete(&prompt::condense(question, history), llm::Format::Text, &mut |_| {}).await {
            Ok(c) => match prompt::read_condensed(&c.content) {
                Some(q) if plausible_condensed(&q, question, history) => return (q, "llm"),
                Some(q) => {
                    tracing::info!(condensed = %q, "the condensed follow-up does not stand for it; searching with the previous turn")
                }
                None => {}
            },
            Err(e) => tracing::warn!(error = %e, "condensing a follow-up failed; searching with the previous turn"),
        }
    }
    (prompt::condense_without_llm(question, history), "previous_turn")
}

/// Whether a condensed query can stand for the follow-up `question`: it
/// keeps at least half of the follow-up's own content words, says no
/// number the user's turns do not, does not copy the assistant's answer
/// (six words in a row of an assistant turn), and is not the follow-up
/// itself with the earlier question put before it. The 1.5B model,
/// asked "Còn nghỉ kết hôn thì sao?" after an answer about annual leave,
/// condensed it into the answer itself ("Nghỉ kết hôn được nhân viên chính
/// thức được nghỉ phép năm 12 ngày mỗi năm…"): searched, answered and
/// checked as that, the right table row was held back.
pub(crate) fn plausible_condensed(condensed: &str, question: &str, history: &[prompt::Turn]) -> bool {
    let folded = |t: &str| -> Vec<String> { rag_lexical::words(t).iter().map(|w| rag_lexical::fold(w)).collect() };
    let query = folded(condensed);
    // The follow-up itself inside it ("Doanh thu năm 2023? Còn năm 2022
    // thì sao?"): nothing was resolved.
    let questions: Vec<&str> = condensed.split(['?', '？']).filter(|q| q.chars().any(char::is_alphanumeric)).collect();
    if questions.len() > 1 && questions.iter().any(|q| folded(q) == folded(question)) {
        return false;
    }
    let own = crate::signals::content_words(question);
    let kept = own.iter().filter(|w| query.contains(w)).count();
    if kept * 2 < own.len() {
        return false;
    }
    let user_words: std::collections::HashSet<String> =
        history.iter().filter(|t| t.role != "assistant").map(|t| t.content.as_str()).chain([question]).flat_map(folded).collect();
    if query.iter().any(|w| w.chars().all(|c| c.is_ascii_digit()) && !user_words.contains(w)) {
        return false;
    }
    const COPIED_WORDS: usize = 6;
    !history.iter().filter(|t| t.role == "assistant").any(|t| {
        let answer = folded(&t.content);
        query.windows(COPIED_WORDS).any(|run| answer.windows(COPIED_WORDS).any(|a| a == run))
    })
}

#[cfg(test)]
mod tests {
    use super::plausible_condensed;
    use crate::prompt::Turn;

    #[test]
    fn a_condensed_query_that_copies_the_answer_or_drops_the_follow_up_is_not_used() {
        let history = vec![
            Turn { role: "user".into(), content: "Nhân viên được nghỉ phép năm bao nhiêu ngày?".into() },
            Turn {
                role: "assistant".into(),
                content: "Nhân viên chính thức được nghỉ phép năm 12 ngày mỗi năm, hưởng nguyên lương.".into(),
            },
        ];
        let q = "Còn nghỉ kết hôn thì sao?";
        assert!(plausible_condensed("Nhân viên được nghỉ kết hôn bao nhiêu ngày?", q, &history));
        assert!(!plausible_condensed(
            "Nghỉ kết hôn được nhân viên chính thức được nghỉ phép năm 12 ngày mỗi năm, hưởng nguyên lương.",
            q,
            &history
        ));
        assert!(!plausible_condensed("Nhân viên được nghỉ kết hôn 12 ngày?", q, &history), "a number of the answer, not of the user");
        assert!(!plausible_condensed("Nhân viên được nghỉ phép năm bao nhiêu ngày?", q, &history), "the follow-up's own words gone");
        assert!(
            !plausible_condensed("Nhân viên được nghỉ phép năm bao nhiêu ngày? Còn nghỉ kết hôn thì sao?", q, &history),
            "not condensed"
        );
        let founded = [Turn { role: "user".into(), content: "Who founded the company?".into() }];
        assert!(plausible_condensed("Who founded the company and when?", "And when?", &founded));
        assert!(plausible_condensed(
            "Doanh thu năm 2022 là bao nhiêu?",
            "Còn năm 2022 thì sao?",
            &[
                Turn { role: "user".into(), content: "Doanh thu năm 2023 là bao nhiêu?".into() },
                Turn { role: "assistant".into(), content: "1.245,6 tỷ đồng.".into() },
            ]
        ));
    }
}

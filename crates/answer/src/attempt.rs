//! One attempt at an answer: the model answers from the sentences it is
//! shown under the output contract, its sections are grounded as they
//! stream, and the check holds back an answer its citations do not
//! support.

use crate::llm::add_usage;
use crate::options::{AnswerOptions, HISTORY_TURNS};
use crate::streamed::{OnPartial, StreamedSection};
use crate::{
    abstention, contract, evidence, grounding, llm, prompt, AnswerError, AnswerMode, AnswerOutcome, Citation, CitationReport, Section,
    SourceChunk,
};

/// Candidates asked for at each token of the check's reply: enough for
/// both `true` and `false` to be among them.
const VERIFY_CANDIDATES: u8 = 5;
/// The cited sentences the check reads, each asked about alone: an answer
/// cites one to four as a rule.
const VERIFY_SENTENCES: usize = 6;
/// The same for the answer: its `answerable` token's candidates.
const LOGPROB_CANDIDATES: u8 = 5;

/// The sections so far, each closed one with its citations. `grounded`
/// keeps what earlier calls grounded, so a section is grounded once
/// however many deltas follow it.
fn streamed_sections(
    support_for: Option<&str>,
    partial: &[contract::PartialSection],
    evidence: &evidence::Evidence,
    chunks: &[SourceChunk],
    grounded: &mut Vec<(contract::ModelSection, Vec<Citation>)>,
) -> Vec<StreamedSection> {
    partial
        .iter()
        .map(|p| {
            let citations = match &p.written {
                Some(written) => match grounded.iter().find(|(w, _)| w == written) {
                    Some((_, c)) => c.clone(),
                    None => {
                        let one = contract::ModelAnswer { answerable: true, sections: vec![written.clone()] };
                        let c: Vec<Citation> = grounding::ground(&one, support_for, evidence, chunks, &mut CitationReport::default())
                            .into_iter()
                            .flat_map(|s| s.citations)
                            .collect();
                        grounded.push((written.clone(), c.clone()));
                        c
                    }
                },
                None => Vec::new(),
            };
            StreamedSection { text: p.text.clone(), closed: p.closed, citations }
        })
        .collect()
}

/// One attempt at an answer: the model's answer to the units it was
/// shown, checked.
pub(crate) struct Attempt {
    pub(crate) outcome: AnswerOutcome,
    /// The units an answer the check held back cited: a second attempt
    /// is shown others.
    pub(crate) held_back_units: Vec<evidence::EvidenceUnit>,
}

/// Why an attempt gave no answer, with what it had used.
pub(crate) struct AttemptError {
    pub(crate) error: AnswerError,
    pub(crate) usage: Option<llm::LlmUsage>,
    pub(crate) invalid_outputs: usize,
}

impl std::fmt::Display for AttemptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

/// The model answers from `evidence` under the output contract (two tries
/// at a readable reply), and the check holds back an answer its citations
/// do not support. In steps: ask (here), [`ground`], [`check_and_decide`],
/// then the sections are written in the question's language (`rewrite`).
pub(crate) async fn attempt(
    client: &llm::ChatClient,
    question: &str,
    history: &[prompt::Turn],
    chunks: &[SourceChunk],
    evidence: &evidence::Evidence,
    options: AnswerOptions,
    on_partial: OnPartial<'_>,
) -> Result<Attempt, AttemptError> {
    let rendered = evidence.render(chunks);
    let language_note = prompt::answer_language_note(question, &rendered);
    let mut messages = prompt::build(question, &rendered, language_note.as_deref(), history, HISTORY_TURNS);
    let ids: Vec<String> = evidence.units.iter().map(|u| u.id.clone()).collect();
    let schema = contract::schema(&ids);
    // Over evidence in another language than the question the model must
    // write each section in its own words: made to write its citations
    // first it copied the cited sentence, in the evidence's language
    // (docs/answers.md). Otherwise the order the calibration runs were
    // answered with.
    let format = if language_note.is_some() {
        llm::Format::SchemaKeysFirst(&schema, contract::TEXT_BEFORE_CITES)
    } else {
        llm::Format::Schema(&schema)
    };
    let mut usage: Option<llm::LlmUsage> = None;
    let mut report = CitationReport::default();
    // Set by the loop below before it can end without an answer.
    let mut error = AnswerError::Contract(contract::ContractError::Violation("no reply".into()));
    let mut grounded = Vec::new();
    for attempt in 0..2 {
        let mut first_words_at: Option<std::time::SystemTime> = None;
        let mut on_text = |so_far: &str| {
            let (_, sections) = contract::partial_sections(so_far);
            if first_words_at.is_none() && sections.iter().any(|s| !s.text.trim().is_empty()) {
                first_words_at = Some(std::time::SystemTime::now());
            }
            on_partial(&streamed_sections(options.cite_support.then_some(question), &sections, evidence, chunks, &mut grounded));
        };
        let asked_at = std::time::SystemTime::now();
        // The contract's opening written for the model where the provider
        // continues one (the first attempt only: a second one carries the
        // first's reply and what was wrong with it).
        // Text first there whatever the languages: citations first, the
        // first word waits for the ids and `"], "text": "` to be decoded
        // (some 7 tokens, 0.7 s on 2 cores); replayed both ways, the key
        // order changed no `answerable` value (docs/answers.md).
        let opened = if client.prefills() && attempt == 0 {
            crate::opening::answer_with_opening(client, &messages, &ids, true, LOGPROB_CANDIDATES, &mut on_text).await.transpose()
        } else {
            None
        };
        let reply = match opened {
            Some(reply) => reply,
            None => client.complete_streamed_with_logprobs(&messages, format, LOGPROB_CANDIDATES, &mut on_text).await,
        };
        let reply = match reply {
            // Some providers refuse `logprobs` (HTTP 400) rather than ignore
            // it: asked again without, the answer only lacks its signals.
            Err(llm::LlmError::Failed(e)) => {
                tracing::debug!(error = %e, "the answer was refused with token probabilities; asking without");
                client.complete(&messages, format, &mut on_text).await
            }
            other => other,
        };
        match reply {
            Ok(c) => {
                add_usage(&mut usage, &c.usage);
                report.answerable_score = contract::boolean_probability(&c.logprobs, "answerable");
                report.answer_logprob = crate::signals::mean_logprob(&c.logprobs);
                match contract::parse(&c.content) {
                    Ok(parsed) => {
                        report.lenient_parses += usize::from(parsed.lenient);
                        let mut sections = ground(&parsed.answer, question, evidence, chunks, options, &mut report);
                        let mut held_back_units = Vec::new();
                        if !sections.is_empty() && options.verify {
                            let form = crate::decision::QuestionForm::of(
                                question,
                                options.part_of_several,
                                language_note.is_some(),
                                options.without_marks,
                            );
                            if check_and_decide(client, question, &sections, form, options, &mut report, &mut usage).await {
                                report.rejected_sections = sections.iter().map(|s| s.text.clone()).collect();
                                held_back_units = parsed
                                    .answer
                                    .sections
                                    .iter()
                                    .flat_map(|s| &s.cites)
                                    .filter_map(|id| evidence.get(id))
                                    .map(|(_, u)| u.clone())
                                    .collect();
                                sections.clear();
                            }
                        }
                        crate::rewrite::in_question_language(client, question, &mut sections, evidence, chunks, &mut report, &mut usage)
                            .await;
                        let abstained = sections.is_empty();
                        if abstained {
                            sections = abstention(question);
                        }
                        let outcome = AnswerOutcome {
                            mode: AnswerMode::Llm,
                            sections,
                            abstained,
                            usage,
                            report,
                            llm_error: None,
                            first_token: c.first_token,
                            first_token_at: c.first_token.map(|d| asked_at + d),
                            first_words_at,
                            llm_elapsed: Some(c.elapsed),
                            timings: c.timings,
                            streamed: c.streamed,
                            evidence_units: evidence.units.len(),
                            evidence_chunks: evidence.chunks_used,
                            unanswered_parts: Vec::new(),
                        };
                        return Ok(Attempt { outcome, held_back_units });
                    }
                    Err(e) => {
                        tracing::warn!(attempt = attempt + 1, error = %e, "the model's answer does not follow the output contract");
                        report.invalid_outputs += 1;
                        // Deterministic sampling would repeat the same reply:
                        // the second try is told what was wrong.
                        messages.push(prompt::ChatMessage::new("assistant", c.content.chars().take(2000).collect::<String>()));
                        messages.push(prompt::ChatMessage::new("user", prompt::retry(&e.to_string())));
                        error = AnswerError::Contract(e);
                    }
                }
            }
            Err(e) => {
                error = AnswerError::Llm(e);
                break; // transport errors were already retried by the client
            }
        }
    }
    Err(AttemptError { error, usage, invalid_outputs: report.invalid_outputs })
}

/// Step two: the model's sections as shown, each with exact citations
/// (`grounding`), without the questions it wrote into them, said no more
/// than their citations state (`faithful`); the signals of how much of the
/// question they cite go to `report`. No section for an answer that says
/// the evidence does not answer.
fn ground(
    answer: &contract::ModelAnswer,
    question: &str,
    evidence: &evidence::Evidence,
    chunks: &[SourceChunk],
    options: AnswerOptions,
    report: &mut CitationReport,
) -> Vec<Section> {
    if !answer.answerable {
        return Vec::new();
    }
    let mut sections = grounding::ground(answer, options.cite_support.then_some(question), evidence, chunks, report);
    report.question_sentences += crate::faithful::drop_questions(&mut sections);
    crate::faithful::keep_to_citations(&mut sections, question, evidence, chunks, report);
    report.cited_coverage = crate::signals::cited_coverage(question, &sections);
    report.cited_phrase_coverage =
        crate::signals::cited_phrase_coverage(question, sections.iter().flat_map(|s| &s.citations).map(|c| c.text.as_str()));
    sections
}

/// Steps three and four: the check reads what the sections cite, and the
/// one rule (`decision::decide`) weighs it with the answer's other signals
/// against the form's threshold. True when the answer is held back. An
/// answer the check could not make is shown: the check is a guard, not the
/// answer (its error is recorded).
async fn check_and_decide(
    client: &llm::ChatClient,
    question: &str,
    sections: &[Section],
    form: crate::decision::QuestionForm,
    options: AnswerOptions,
    report: &mut CitationReport,
    usage: &mut Option<llm::LlmUsage>,
) -> bool {
    let (verdict, score, u, llm_ms) = match verify(client, question, sections).await {
        Ok(checked) => checked,
        Err(e) => {
            report.verify_error = Some(e.to_string());
            return false;
        }
    };
    if let Some(u) = u {
        add_usage(usage, &u);
    }
    report.verify_llm_ms = llm_ms;
    report.verify_score = score;
    let signals = crate::decision::AnswerSignals {
        check: score,
        answerable: report.answerable_score,
        logprob: report.answer_logprob,
        cited_coverage: report.cited_coverage,
        phrase_coverage: report.cited_phrase_coverage,
        best_cosine: options.retrieval.best_cosine,
        lexical_coverage: options.retrieval.lexical_coverage,
    };
    report.form = Some(form);
    let decision = crate::decision::decide(&options.decision, &signals, verdict, options.thresholds.get(form));
    report.decision_score = decision.score;
    report.verified = decision.verified;
    decision.held_back
}

/// Asks the model whether what `sections` cite answers `question`
/// (`prompt::VERIFY`), one cited sentence at a time (a table's rows
/// together: `checked_together`): the answer passes when one sentence
/// answers on its own. Shown several sentences at once, the
/// 1.5B model joins a name from one with a relation from another ("Thủ
/// tướng Tây Ban Nha" beside "Tổng thống Venezuela" for "Tổng thống Tây
/// Ban Nha là ai"); asked of each alone it separated right answers from
/// unanswerable questions better on the calibration sets' screening split
/// (AUROC 0.754 -> 0.808 Vietnamese, 0.879 -> 0.884 English;
/// `eval/check-variants.py`, docs/answers.md). Returns the verdict (true
/// when one sentence answers, false when every one says no, else None),
/// the highest probability (None without token probabilities), the calls'
/// usage and their time inside the model server.
async fn verify(
    client: &llm::ChatClient,
    question: &str,
    sections: &[Section],
) -> Result<(Option<bool>, Option<f64>, Option<llm::LlmUsage>, Option<u64>), llm::LlmError> {
    let mut cited: Vec<&str> = Vec::new();
    for c in sections.iter().flat_map(|s| &s.citations) {
        if !cited.contains(&c.text.as_str()) && cited.len() < VERIFY_SENTENCES {
            cited.push(&c.text);
        }
    }
    let schema = contract::verdict_schema();
    let (mut verdicts, mut best, mut usage, mut llm_ms) = (Vec::new(), None::<f64>, None, None::<u64>);
    for sentences in checked_together(&cited) {
        let messages = prompt::verify(question, &sentences);
        let c = match client.complete_with_logprobs(&messages, llm::Format::Schema(&schema), VERIFY_CANDIDATES).await {
            // Some providers refuse `logprobs` (HTTP 400) rather than ignore it:
            // asked again without, the check still gives its yes/no.
            Err(llm::LlmError::Failed(e)) => {
                tracing::debug!(error = %e, "the check was refused with token probabilities; asking without");
                client.complete(&messages, llm::Format::Schema(&schema), &mut |_| {}).await?
            }
            other => other?,
        };
        add_usage(&mut usage, &c.usage);
        if let Some(ms) = c.timings.as_ref().and_then(llm::server_ms) {
            llm_ms = Some(llm_ms.unwrap_or(0) + ms);
        }
        verdicts.push(contract::parse_verdict(&c.content));
        if let Some(p) = contract::verdict_probability(&c.logprobs) {
            best = Some(best.map_or(p, |b| b.max(p)));
        }
    }
    Ok((one_verdict(&verdicts), best, usage, llm_ms))
}

/// What the check reads in one call: each cited sentence alone, except
/// table rows, which are read together (in the order cited) because a row
/// means nothing without its header ("| Lợi nhuận gộp | 312,5 | 351,9 |"
/// says which year only beside "| Chỉ tiêu | 2022 | 2023 |").
fn checked_together<'a>(cited: &[&'a str]) -> Vec<Vec<&'a str>> {
    let is_row = |t: &str| {
        let t = t.trim();
        t.len() > 1 && t.starts_with('|') && t.ends_with('|')
    };
    let rows: Vec<&str> = cited.iter().copied().filter(|t| is_row(t)).collect();
    let mut out: Vec<Vec<&str>> = cited.iter().copied().filter(|t| !is_row(t)).map(|t| vec![t]).collect();
    if !rows.is_empty() {
        out.push(rows);
    }
    out
}

/// The answer's verdict from its sentences': true when one answers, false
/// when each says it does not, None when some said neither and none said
/// yes (or nothing was checked).
fn one_verdict(verdicts: &[Option<bool>]) -> Option<bool> {
    if verdicts.contains(&Some(true)) {
        Some(true)
    } else if !verdicts.is_empty() && verdicts.iter().all(|v| *v == Some(false)) {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::{checked_together, one_verdict};

    #[test]
    fn sentences_are_checked_alone_and_table_rows_together() {
        let cited = ["| Lợi nhuận gộp | 312,5 | 351,9 |", "Doanh thu tăng 12,4%.", "| Chỉ tiêu | 2022 | 2023 |", "Lãi 5%."];
        assert_eq!(
            checked_together(&cited),
            vec![vec!["Doanh thu tăng 12,4%."], vec!["Lãi 5%."], vec!["| Lợi nhuận gộp | 312,5 | 351,9 |", "| Chỉ tiêu | 2022 | 2023 |"]]
        );
        assert_eq!(checked_together(&["|"]), vec![vec!["|"]], "a lone bar is not a row");
        assert!(checked_together(&[]).is_empty());
    }

    #[test]
    fn one_sentence_that_answers_passes_the_answer() {
        assert_eq!(one_verdict(&[Some(false), Some(true)]), Some(true));
        assert_eq!(one_verdict(&[None, Some(true)]), Some(true));
        assert_eq!(one_verdict(&[Some(false), Some(false)]), Some(false));
        assert_eq!(one_verdict(&[Some(false), None]), None, "one said neither: not a no");
        assert_eq!(one_verdict(&[]), None);
    }
}

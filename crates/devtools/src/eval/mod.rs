//! `rag-dev eval`: quality measured on public datasets through the real
//! pipeline: retrieval (`retrieval.rs`, nDCG and recall per mode and
//! language), answers (`answers.rs`, what a user feels of an answer) and
//! the answer-or-abstain decision (`calibration.rs`, fitted on runs of
//! `eval answers`), and instructions to the model inside documents
//! (`injection.rs`, the phrase filter beside the embedding classifier).
//! Both read their dataset through `dataset.rs`.

use std::process::ExitCode;

use clap::Subcommand;

use rag_app::config::Settings;

mod answer_scores;
mod answers;
mod answers_report;
mod calibration;
mod calibration_fit;
mod dataset;
mod forms;
mod injection;
mod injection_embed;
mod injection_fit;
mod injection_judge;
mod operating;
mod retrieval;

#[derive(Subcommand, Debug)]
pub enum EvalCommand {
    /// Retrieval quality on a BEIR-format dataset (corpus.jsonl, queries.jsonl, qrels/test.tsv).
    Retrieval(retrieval::RetrievalArgs),
    /// Answer quality on a SQuAD-style set (corpus.jsonl, queries.jsonl, answers.jsonl): every question through the real pipeline.
    Answers(answers::AnswersArgs),
    /// The answer-or-abstain decision fitted and judged (cross-validated) on `eval answers --json` runs of calibration sets.
    Calibration(calibration::CalibrationArgs),
    /// Per form of question, the highest abstain threshold that holds back at most a share of right answers, on `eval answers --json` runs of the forms set's tuning half made with both thresholds at 0.
    OperatingPoints(operating::OperatingArgs),
    /// Instructions to the model inside documents (eval/injection): the phrase filter, the embedding classifier, with --judge the answer LLM's own judgement, and any of them, on the reporting half; with --fit, the classifier is first fitted on the development half.
    Injection(injection::InjectionArgs),
}

pub async fn eval(s: &Settings, cmd: EvalCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        EvalCommand::Retrieval(args) => retrieval::eval_retrieval(s, args).await,
        EvalCommand::Answers(args) => answers::eval_answers(s, args).await,
        EvalCommand::Calibration(args) => calibration::eval_calibration(args),
        EvalCommand::OperatingPoints(args) => operating::eval_operating_points(args, &s.answers.answer_decision_weights.0),
        EvalCommand::Injection(args) => injection::eval_injection(s, args).await,
    }
}

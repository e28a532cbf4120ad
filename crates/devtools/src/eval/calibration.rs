//! `rag-dev eval calibration RUN.json...`: the answer-or-abstain decision
//! fitted and judged on calibration runs. A run is the `--json` output of
//! `eval answers` made with the decision out of the way
//! (`ANSWER_ABSTAIN_THRESHOLD=0`, `ANSWER_SECOND_LOOK=false`), so every
//! answer the model gave is shown with its signals; this command then asks
//! what each decision would have shown. Every figure comes from held-out
//! folds (stratified k-fold cross-validation, the threshold chosen on each
//! fold's training part); the model and threshold to ship are then fitted
//! on everything.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use rag_answer::decision::{features, AnswerSignals, DecisionModel, CHECK_ONLY, FEATURES, N_FEATURES};
use serde::Deserialize;

use super::calibration_fit::{
    across_languages, auroc, cross_validate, fit_cases, languages, outcome_at, Case, FitSpec, Outcome, Signs, ThresholdRule,
};

#[derive(Args, Debug)]
pub struct CalibrationArgs {
    /// `eval answers --json` outputs of calibration sets, made with ANSWER_ABSTAIN_THRESHOLD=0 and ANSWER_SECOND_LOOK=false.
    #[arg(required = true)]
    runs: Vec<PathBuf>,
    /// Folds of the cross-validation.
    #[arg(long, default_value_t = 5)]
    folds: usize,
    /// Seed of the folds.
    #[arg(long, default_value_t = 46)]
    seed: u64,
    /// Choose the threshold for at most this share of each language's
    /// unanswerable questions answered (instead of the balanced rule:
    /// right answers kept minus unanswerable answered, at its highest).
    #[arg(long)]
    max_unanswerable: Option<f64>,
    /// Features to leave out of the model (by name: check_logit, answerable_logit, mean_logprob, cited_coverage, best_cosine, lexical_coverage, phrase_coverage).
    #[arg(long, value_delimiter = ',')]
    without: Vec<String>,
    /// Let weights take any sign (by default every weight is 0 or more:
    /// each feature is oriented so that more means more support, and a
    /// negative weight fits how the calibration sets' negatives were
    /// written rather than anything that carries to other questions).
    #[arg(long)]
    free_signs: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// The fields of an `eval answers` question this command (and
/// `eval operating-points`) reads.
#[derive(Deserialize)]
pub(super) struct RunQuestion {
    /// Its id in the set (`eval/forms`: `envi-q0001`); absent in runs made
    /// before it was recorded.
    #[serde(default)]
    pub(super) question_id: String,
    language: String,
    pub(super) answerable: bool,
    pub(super) abstained: bool,
    pub(super) mode: String,
    pub(super) answer_in_citation: bool,
    pub(super) verify_score: Option<f64>,
    #[serde(default)]
    pub(super) answerable_score: Option<f64>,
    #[serde(default)]
    answer_logprob: Option<f64>,
    #[serde(default)]
    cited_coverage: Option<f64>,
    #[serde(default)]
    best_cosine: Option<f64>,
    #[serde(default)]
    lexical_coverage: Option<f64>,
    #[serde(default)]
    cited_phrase_coverage: Option<f64>,
    /// The question as asked and the cited texts: runs made before a
    /// signal was recorded get it computed from them (the same function).
    #[serde(default)]
    question: Option<String>,
    #[serde(default)]
    cited: Vec<String>,
    #[serde(default)]
    second_look: bool,
    /// Each part's own signals, for a question of several parts.
    #[serde(default)]
    pub(super) part_scores: Vec<super::answer_scores::PartScore>,
}

#[derive(Deserialize)]
pub(super) struct Run {
    pub(super) questions: Vec<RunQuestion>,
}

fn case_of(q: &RunQuestion) -> Case {
    let signals = AnswerSignals {
        check: q.verify_score,
        answerable: q.answerable_score,
        logprob: q.answer_logprob,
        cited_coverage: q.cited_coverage,
        best_cosine: q.best_cosine,
        lexical_coverage: q.lexical_coverage,
        phrase_coverage: q
            .cited_phrase_coverage
            .or_else(|| rag_answer::signals::cited_phrase_coverage(q.question.as_deref()?, q.cited.iter().map(String::as_str))),
    };
    let answered = !q.abstained && q.mode == "llm";
    Case {
        language: q.language.clone(),
        answerable: q.answerable,
        features: if answered { features(&signals) } else { None },
        right: q.answerable && q.answer_in_citation,
    }
}

fn percent(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn outcome_json(o: &Outcome) -> serde_json::Value {
    serde_json::json!({
        "counts": o,
        "right_answers_shown": o.right_shown_rate(),
        "right_answers_held_back": o.right_held_back_rate(),
        "unanswerable_answered": o.unanswerable_answered_rate(),
    })
}

fn outcome_line(o: &Outcome) -> String {
    format!(
        "shown {}/{}, right shown {}/{} ({}), right held back {}/{} ({}), wrong shown {}, unanswerable answered {}/{} ({})",
        o.shown,
        o.questions,
        o.right_shown,
        o.answerable,
        percent(o.right_shown_rate()),
        o.right_held_back,
        o.right_candidates,
        percent(o.right_held_back_rate()),
        o.wrong_shown,
        o.unanswerable_answered,
        o.unanswerable,
        percent(o.unanswerable_answered_rate())
    )
}

pub fn eval_calibration(args: CalibrationArgs) -> anyhow::Result<ExitCode> {
    let mut cases: Vec<Case> = Vec::new();
    let mut second_looks = 0;
    for path in &args.runs {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let run: Run = serde_json::from_str(&text).with_context(|| format!("{}: not an `eval answers --json` output", path.display()))?;
        second_looks += run.questions.iter().filter(|q| q.second_look).count();
        cases.extend(run.questions.iter().map(case_of));
    }
    anyhow::ensure!(!cases.is_empty(), "the runs hold no questions");
    anyhow::ensure!(args.folds >= 2, "--folds must be at least 2");
    anyhow::ensure!(
        cases.iter().any(|c| c.features.is_some()),
        "no answer in the runs has the check's and the model's token probabilities: run `eval answers` against a provider that gives logprobs"
    );
    if second_looks > 0 {
        eprintln!(
            "eval calibration: warning: {second_looks} questions took a second look; make the runs with ANSWER_SECOND_LOOK=false and ANSWER_ABSTAIN_THRESHOLD=0"
        );
    }
    let mut use_feature = [true; N_FEATURES];
    for name in &args.without {
        let k = FEATURES.iter().position(|f| f == name).with_context(|| format!("--without {name}: no such feature ({FEATURES:?})"))?;
        use_feature[k] = false;
    }
    let languages: Vec<String> = languages(cases.iter().map(|c| c.language.as_str())).into_iter().map(str::to_string).collect();

    let rule = match args.max_unanswerable {
        Some(max) => ThresholdRule::AtMostUnanswerable(max),
        None => ThresholdRule::Balanced,
    };
    let spec = FitSpec { use_feature, signs: if args.free_signs { Signs::Free } else { Signs::NonNegative } };
    let cv = cross_validate(&cases, args.folds, args.seed, &spec, rule);
    let across = across_languages(&cases, &spec);
    let check_scores: Vec<Option<f64>> = cases.iter().map(|c| c.features.map(|x| CHECK_ONLY.probability(&x))).collect();
    let final_model = fit_cases(&cases, &spec);
    let all_scored: Vec<(&Case, Option<f64>)> = cases.iter().map(|c| (c, c.features.map(|x| final_model.probability(&x)))).collect();
    let final_threshold = rule.choose(&all_scored);

    let mut per_language = serde_json::Map::new();
    let mut outcomes: std::collections::HashMap<&str, [Outcome; 3]> = std::collections::HashMap::new();
    for lang in &languages {
        let idx: Vec<usize> = (0..cases.len()).filter(|&i| cases[i].language == *lang).collect();
        let label = |i: usize| cases[i].answerable && cases[i].right;
        let auc = |scores: &[Option<f64>]| {
            let scored: Vec<(f64, bool)> = idx.iter().filter_map(|&i| scores[i].map(|s| (s, label(i)))).collect();
            auroc(&scored)
        };
        let feature_auc: serde_json::Map<String, serde_json::Value> = FEATURES
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let scored: Vec<(f64, bool)> = idx.iter().filter_map(|&i| cases[i].features.map(|x| (x[k], label(i)))).collect();
                (name.to_string(), auroc(&scored).into())
            })
            .collect();
        let mut at_fold_thresholds = Outcome::default();
        for &i in &idx {
            at_fold_thresholds.add(&cases[i], cv.shown[i]);
        }
        let held_out: Vec<(&Case, Option<f64>)> = idx.iter().map(|&i| (&cases[i], cv.scores[i])).collect();
        let check_only: Vec<(&Case, Option<f64>)> = idx.iter().map(|&i| (&cases[i], check_scores[i])).collect();
        let today = outcome_at(&check_only, 0.5);
        let model_only = outcome_at(&check_only, 0.0);
        let curve: Vec<serde_json::Value> = (1..20)
            .map(|s| {
                let t = f64::from(s) * 0.05;
                let o = outcome_at(&held_out, t);
                serde_json::json!({"threshold": t, "shown": o.shown, "right_answers_held_back": o.right_held_back_rate(),
                    "unanswerable_answered": o.unanswerable_answered_rate(), "right_answers_shown": o.right_shown_rate()})
            })
            .collect();
        outcomes.insert(lang.as_str(), [at_fold_thresholds, today, model_only]);
        per_language.insert(
            lang.clone(),
            serde_json::json!({
                "questions": idx.len(),
                "answerable": idx.iter().filter(|&&i| cases[i].answerable).count(),
                "unanswerable": idx.iter().filter(|&&i| !cases[i].answerable).count(),
                "answered_by_the_model": idx.iter().filter(|&&i| cases[i].features.is_some()).count(),
                "auroc": auc(&cv.scores),
                "auroc_check_only": auc(&check_scores),
                "auroc_fitted_on_other_languages": auc(&across),
                "auroc_by_feature": feature_auc,
                "at_fold_thresholds": outcome_json(&at_fold_thresholds),
                "check_at_0_5": outcome_json(&today),
                "no_decision": outcome_json(&model_only),
                "curve": curve,
            }),
        );
    }
    let report = serde_json::json!({
        "runs": args.runs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "folds": args.folds, "seed": args.seed, "rule": match rule { ThresholdRule::Balanced => serde_json::json!("balanced"), ThresholdRule::AtMostUnanswerable(m) => serde_json::json!({"max_unanswerable": m}) },
        "features": FEATURES.iter().zip(use_feature).filter(|(_, u)| *u).map(|(f, _)| *f).collect::<Vec<_>>(),
        "signs": if args.free_signs { "free" } else { "non-negative" },
        "fold_thresholds": cv.thresholds,
        "by_language": per_language,
        "model": {"bias": final_model.bias, "weights": final_model.weights, "threshold": final_threshold},
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    let rule_text = match rule {
        ThresholdRule::Balanced => "right answers kept minus unanswerable answered at its highest".to_string(),
        ThresholdRule::AtMostUnanswerable(m) => format!("at most {} of each language's unanswerable questions answered", percent(m)),
    };
    println!(
        "calibration: {} questions from {} run(s), {}-fold cross-validation (seed {}), weights {}, threshold chosen inside each fold: {rule_text}",
        cases.len(),
        args.runs.len(),
        args.folds,
        args.seed,
        if args.free_signs { "of any sign" } else { "0 or more" }
    );
    println!("fold thresholds: {:?}", cv.thresholds.iter().map(|t| format!("{t:.2}")).collect::<Vec<_>>());
    for lang in &languages {
        let l = &per_language[lang];
        println!(
            "\n[{lang}] {} questions ({} answerable, {} unanswerable), {} answered by the model",
            l["questions"], l["answerable"], l["unanswerable"], l["answered_by_the_model"]
        );
        let f = |v: &serde_json::Value| v.as_f64().map_or("-".to_string(), |x| format!("{x:.3}"));
        println!(
            "  AUROC held out: decision {}, check alone {}, decision fitted on the other languages only {}",
            f(&l["auroc"]),
            f(&l["auroc_check_only"]),
            f(&l["auroc_fitted_on_other_languages"])
        );
        let by: Vec<String> = FEATURES.iter().map(|n| format!("{n} {}", f(&l["auroc_by_feature"][*n]))).collect();
        println!("  AUROC of each feature alone: {}", by.join(", "));
        let [decided, today, none] = &outcomes[lang.as_str()];
        println!("  decision, held out:  {}", outcome_line(decided));
        println!("  check >= 0.5:        {}", outcome_line(today));
        println!("  no decision:         {}", outcome_line(none));
        println!("  curve (held-out scores): threshold  shown  right held back  unanswerable answered");
        for p in l["curve"].as_array().into_iter().flatten() {
            println!(
                "    {:.2}  {:>4}  {:>6}  {:>6}",
                p["threshold"].as_f64().unwrap_or(0.0),
                p["shown"],
                percent(p["right_answers_held_back"].as_f64().unwrap_or(0.0)),
                percent(p["unanswerable_answered"].as_f64().unwrap_or(0.0))
            );
        }
    }
    let DecisionModel { bias, weights } = final_model;
    println!(
        "\nfitted on every question: bias {bias:.4}, weights {:?}, threshold {final_threshold:.2}",
        weights.map(|w| (w * 1e4).round() / 1e4)
    );
    Ok(ExitCode::SUCCESS)
}

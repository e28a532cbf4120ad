//! `rag-dev eval operating-points RUN.json...`: where the shipped
//! decision should hold answers back, per form of question. A run is the
//! `--json` output of `eval answers` over a tuning half of the forms set
//! (`eval/forms/`) made with the decision out of the way
//! (`ANSWER_ABSTAIN_THRESHOLD=0`),
//! so every answer the model gave is shown with its signals. For each form
//! the threshold is the highest at which at most `--max-held-back` of the
//! form's right answers are held back (a hard limit: right answers held
//! back is what people saw most), which among the thresholds that meet
//! it answers the fewest unanswerable questions; the curve is printed
//! beside it, and last the `ANSWER_ABSTAIN_THRESHOLDS` setting that
//! applies them. The weights stay the shipped ones (or
//! `ANSWER_DECISION_WEIGHTS`): this chooses where to cut, not what to weigh.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use rag_answer::decision::{AnswerSignals, DecisionModel};
use serde::Serialize;

use super::calibration::{Run, RunQuestion};
use super::forms::form_of;

#[derive(Args, Debug)]
pub struct OperatingArgs {
    /// `eval answers --json` outputs over a tuning half, made with both
    /// abstain thresholds at 0.
    #[arg(required = true)]
    runs: Vec<PathBuf>,
    /// The most right answers a form may hold back (0 to 1).
    #[arg(long, default_value_t = 0.10)]
    max_held_back: f64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// One question as the decision sees it: its score (None: the model
/// abstained itself, or gave no token probabilities), whether it is
/// answerable and whether the answer the model gave was right.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    pub score: Option<f64>,
    pub answerable: bool,
    pub right: bool,
    /// An unanswerable question from outside the corpus.
    pub outside: bool,
}

/// What a threshold does to one form's questions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Point {
    pub threshold: f64,
    /// Right answers the model gave, and the share held back.
    pub right: usize,
    pub right_held_back: f64,
    /// Unanswerable questions on a topic of the corpus / from outside it,
    /// and the shares answered anyway.
    pub same_topic: usize,
    pub same_topic_answered: f64,
    pub outside: usize,
    pub outside_answered: f64,
}

fn share(n: usize, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        n as f64 / of as f64
    }
}

/// What `threshold` does to `questions`.
pub fn point(questions: &[Scored], threshold: f64) -> Point {
    let shown = |q: &Scored| q.score.is_some_and(|s| s >= threshold);
    let right: Vec<&Scored> = questions.iter().filter(|q| q.answerable && q.right && q.score.is_some()).collect();
    let same: Vec<&Scored> = questions.iter().filter(|q| !q.answerable && !q.outside).collect();
    let outside: Vec<&Scored> = questions.iter().filter(|q| !q.answerable && q.outside).collect();
    Point {
        threshold,
        right: right.len(),
        right_held_back: share(right.iter().filter(|q| !shown(q)).count(), right.len()),
        same_topic: same.len(),
        same_topic_answered: share(same.iter().filter(|q| shown(q)).count(), same.len()),
        outside: outside.len(),
        outside_answered: share(outside.iter().filter(|q| shown(q)).count(), outside.len()),
    }
}

/// The highest threshold of 0.00, 0.01, … 1.00 that holds back at most
/// `max_held_back` of the right answers: the fewest unanswerable questions
/// answered among those that meet the limit (answering falls as the
/// threshold rises).
pub fn operating_point(questions: &[Scored], max_held_back: f64) -> Point {
    (0..=100)
        .rev()
        .map(|step| point(questions, f64::from(step) / 100.0))
        .find(|p| p.right_held_back <= max_held_back + 1e-9)
        .unwrap_or_default()
}

/// The question as the decision judged it: one [`Scored`], or one per part
/// for a question of several parts (each part is decided on its own
/// evidence, so each is a point on its form's curve: answerable when the
/// part has a gold answer, right when that answer lies inside a citation).
fn scored(q: &RunQuestion, decision: &DecisionModel) -> Vec<Scored> {
    let outside = form_of(&q.question_id).is_some_and(|(_, kind)| kind == 'x');
    let score = |abstained: bool, check: Option<f64>, answerable: Option<f64>| {
        let signals = AnswerSignals { check, answerable, ..Default::default() };
        if !abstained && q.mode == "llm" {
            decision.confidence(&signals)
        } else {
            None
        }
    };
    if !q.part_scores.is_empty() {
        return q
            .part_scores
            .iter()
            .map(|p| Scored {
                score: score(p.abstained, p.verify_score, p.answerable_score),
                answerable: p.in_citation.is_some(),
                right: p.in_citation == Some(true),
                outside,
            })
            .collect();
    }
    vec![Scored {
        score: score(q.abstained, q.verify_score, q.answerable_score),
        answerable: q.answerable,
        right: q.answerable && q.answer_in_citation,
        outside,
    }]
}

pub fn eval_operating_points(args: OperatingArgs, decision: &DecisionModel) -> anyhow::Result<ExitCode> {
    let mut forms: BTreeMap<String, Vec<Scored>> = BTreeMap::new();
    for path in &args.runs {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let run: Run = serde_json::from_str(&text).with_context(|| format!("{} is not an `eval answers --json` output", path.display()))?;
        for q in &run.questions {
            let form = form_of(&q.question_id).map_or("-", |(f, _)| f).to_string();
            forms.entry(form).or_default().extend(scored(q, decision));
        }
    }
    anyhow::ensure!(!forms.is_empty(), "the runs hold no question");
    let chosen: BTreeMap<&String, (Point, Vec<Point>)> = forms
        .iter()
        .map(|(form, qs)| (form, (operating_point(qs, args.max_held_back), [0.3, 0.4, 0.5, 0.6].iter().map(|t| point(qs, *t)).collect())))
        .collect();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({"max_held_back": args.max_held_back, "forms": chosen}))?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("operating points: right answers held back at most {:.0}% per form (decision {decision:?})", 100.0 * args.max_held_back);
    let line = |p: &Point| {
        format!(
            "{:.2}: right {} held back {:.1}%, same-topic unanswerable {} answered {:.1}%, outside {} answered {:.1}%",
            p.threshold,
            p.right,
            100.0 * p.right_held_back,
            p.same_topic,
            100.0 * p.same_topic_answered,
            p.outside,
            100.0 * p.outside_answered
        )
    };
    for (form, (best, curve)) in &chosen {
        println!("{form:<9} chosen {}", line(best));
        for p in curve {
            println!("{:<9}        {}", "", line(p));
        }
    }
    // What a deployment sets: the chosen point of every form the runs hold.
    let setting: Vec<String> = chosen
        .iter()
        .filter(|(form, _)| rag_answer::decision::QuestionForm::from_name(form).is_some())
        .map(|(form, (best, _))| format!("{form}={:.2}", best.threshold))
        .collect();
    println!("ANSWER_ABSTAIN_THRESHOLDS={}", setting.join(","));
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(score: Option<f64>, answerable: bool, right: bool, outside: bool) -> Scored {
        Scored { score, answerable, right, outside }
    }

    #[test]
    fn each_part_of_a_compound_question_is_its_own_point() {
        let q: RunQuestion = serde_json::from_value(serde_json::json!({
            "question_id": "compound-q0001", "language": "vi", "answerable": true, "abstained": false, "mode": "llm",
            "answer_in_citation": false, "verify_score": 0.9, "answerable_score": 0.99,
            "part_scores": [
                {"abstained": false, "verify_score": 0.9, "answerable_score": 0.99, "in_citation": true},
                {"abstained": true, "verify_score": null, "answerable_score": null, "in_citation": false},
            ],
        }))
        .unwrap();
        let parts = scored(&q, &rag_answer::decision::DEFAULT_DECISION);
        assert_eq!(parts.len(), 2);
        assert!(parts[0].right && parts[0].answerable && parts[0].score.is_some());
        assert!(!parts[1].right && parts[1].answerable && parts[1].score.is_none(), "the model abstained on it itself");
    }

    #[test]
    fn the_highest_threshold_that_holds_back_at_most_the_limit_of_right_answers() {
        let mut qs: Vec<Scored> = (1..=10).map(|i| q(Some(f64::from(i) / 10.0), true, true, false)).collect();
        qs.push(q(Some(0.35), false, false, false));
        qs.push(q(Some(0.95), false, false, true));
        qs.push(q(None, false, false, true));
        // One right answer of ten (0.1) may be held back: cut at 0.2.
        let p = operating_point(&qs, 0.10);
        assert_eq!(p.threshold, 0.2);
        assert!((p.right_held_back - 0.1).abs() < 1e-9);
        assert_eq!((p.same_topic, p.same_topic_answered), (1, 1.0));
        assert_eq!((p.outside, p.outside_answered), (2, 0.5));
        // Stricter limit, lower cut; none at all, everything shown.
        assert_eq!(operating_point(&qs, 0.0).threshold, 0.1);
        let p = point(&qs, 0.5);
        assert_eq!((p.right_held_back, p.same_topic_answered), (0.4, 0.0));
    }
}

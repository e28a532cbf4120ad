// ~340 lines of code, the rest tests: the fit, its curve and its operating points are one computation.
//! The pure side of `eval calibration`: a logistic model fitted to the
//! answers' signals, its area under the ROC curve, and what a threshold on
//! it does to a set of questions (answers shown, right answers held back,
//! unanswerable questions answered), by stratified k-fold cross-validation
//! with the threshold chosen inside each fold's training part.

use rag_answer::decision::{DecisionModel, N_FEATURES};
use serde::Serialize;

/// One question of a calibration run, as the decision sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub language: String,
    /// The passages answer it.
    pub answerable: bool,
    /// The model gave a grounded answer the decision can show or hold
    /// back, with these features (None: the answer abstained before any
    /// decision, or the provider gave no token probabilities).
    pub features: Option<[f64; N_FEATURES]>,
    /// That answer holds the gold answer inside a citation.
    pub right: bool,
}

/// What a decision did to a set of questions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Outcome {
    pub questions: usize,
    pub answerable: usize,
    pub unanswerable: usize,
    /// Answers shown (not abstained).
    pub shown: usize,
    /// Right answers the model gave (before the decision) / held back by it.
    pub right_candidates: usize,
    pub right_held_back: usize,
    /// Right answers shown.
    pub right_shown: usize,
    /// Unanswerable questions given an answer.
    pub unanswerable_answered: usize,
    /// Answerable questions given an answer without the gold answer in a
    /// citation.
    pub wrong_shown: usize,
}

impl Outcome {
    pub fn add(&mut self, case: &Case, shown: bool) {
        self.questions += 1;
        if case.answerable {
            self.answerable += 1;
        } else {
            self.unanswerable += 1;
        }
        let right = case.answerable && case.right && case.features.is_some();
        if right {
            self.right_candidates += 1;
        }
        if shown {
            self.shown += 1;
            if right {
                self.right_shown += 1;
            } else if case.answerable {
                self.wrong_shown += 1;
            } else {
                self.unanswerable_answered += 1;
            }
        } else if right {
            self.right_held_back += 1;
        }
    }

    pub fn right_held_back_rate(&self) -> f64 {
        ratio(self.right_held_back, self.right_candidates)
    }

    pub fn unanswerable_answered_rate(&self) -> f64 {
        ratio(self.unanswerable_answered, self.unanswerable)
    }

    pub fn right_shown_rate(&self) -> f64 {
        ratio(self.right_shown, self.answerable)
    }
}

pub fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// The area under the ROC curve of `scores` for `labels` (ties count half);
/// None without both classes.
pub fn auroc(scored: &[(f64, bool)]) -> Option<f64> {
    let pos = scored.iter().filter(|(_, l)| *l).count();
    let neg = scored.len() - pos;
    if pos == 0 || neg == 0 {
        return None;
    }
    let mut sorted: Vec<(f64, bool)> = scored.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Mann-Whitney U with average ranks for ties.
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1].0 == sorted[i].0 {
            j += 1;
        }
        let avg_rank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum += avg_rank * sorted[i..=j].iter().filter(|(_, l)| *l).count() as f64;
        i = j + 1;
    }
    let u = rank_sum - (pos * (pos + 1)) as f64 / 2.0;
    Some(u / (pos * neg) as f64)
}

/// L2 penalty on the standardised weights: enough to keep a feature that
/// separates a few cases perfectly from running off.
const L2: f64 = 0.01;
const STEPS: usize = 4_000;
const LEARNING_RATE: f64 = 0.5;

/// What a fit may weigh, and how.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitSpec {
    /// The features it weighs (the others get weight 0).
    pub use_feature: [bool; N_FEATURES],
    pub signs: Signs,
}

/// Which way a weight may point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Signs {
    /// Every weight is 0 or more. Each feature is oriented so that more
    /// means more support for the answer (a surer check, a likelier
    /// answer, more of the question in the cited text, a closer passage);
    /// a negative weight says the calibration sets' make-up rewards less
    /// support, a pattern of how their negatives were written that does
    /// not carry to other questions (an off-topic question, far from every
    /// passage, would gain from it).
    NonNegative,
    /// Any sign: whatever fits the calibration sets best.
    Free,
}

/// A logistic regression of `labels` on `x`, fitted by (projected)
/// gradient descent on standardised features (L2-penalised), returned on
/// the raw scale.
pub fn fit(x: &[[f64; N_FEATURES]], labels: &[bool], spec: &FitSpec) -> DecisionModel {
    let use_feature = &spec.use_feature;
    let n = x.len().max(1) as f64;
    let mut mean = [0.0; N_FEATURES];
    let mut sd = [1.0; N_FEATURES];
    for k in 0..N_FEATURES {
        mean[k] = x.iter().map(|r| r[k]).sum::<f64>() / n;
        let var = x.iter().map(|r| (r[k] - mean[k]).powi(2)).sum::<f64>() / n;
        sd[k] = if var > 1e-12 { var.sqrt() } else { 1.0 };
    }
    let z: Vec<[f64; N_FEATURES]> =
        x.iter().map(|r| std::array::from_fn(|k| if use_feature[k] { (r[k] - mean[k]) / sd[k] } else { 0.0 })).collect();
    let (mut b, mut w) = (0.0, [0.0; N_FEATURES]);
    for _ in 0..STEPS {
        let (mut gb, mut gw) = (0.0, [0.0; N_FEATURES]);
        for (row, &y) in z.iter().zip(labels) {
            let p = 1.0 / (1.0 + (-(b + w.iter().zip(row).map(|(a, v)| a * v).sum::<f64>())).exp());
            let e = p - if y { 1.0 } else { 0.0 };
            gb += e;
            for k in 0..N_FEATURES {
                gw[k] += e * row[k];
            }
        }
        b -= LEARNING_RATE * gb / n;
        for k in 0..N_FEATURES {
            w[k] -= LEARNING_RATE * (gw[k] / n + L2 * w[k]);
            if spec.signs == Signs::NonNegative {
                w[k] = w[k].max(0.0);
            }
        }
    }
    // Back to raw features: w_k z_k = (w_k / sd_k) x_k - w_k mean_k / sd_k.
    let weights: [f64; N_FEATURES] = std::array::from_fn(|k| if use_feature[k] { w[k] / sd[k] } else { 0.0 });
    let bias = b - (0..N_FEATURES).map(|k| weights[k] * mean[k]).sum::<f64>();
    DecisionModel { bias, weights }
}

/// [`fit`] on the cases with an answer to decide on, labelled by whether
/// it is a right answer to an answerable question.
pub fn fit_cases<'a>(cases: impl IntoIterator<Item = &'a Case>, spec: &FitSpec) -> DecisionModel {
    let (x, y): (Vec<[f64; N_FEATURES]>, Vec<bool>) =
        cases.into_iter().filter_map(|c| c.features.map(|x| (x, c.answerable && c.right))).unzip();
    fit(&x, &y, spec)
}

/// The distinct languages of `names`, sorted.
pub fn languages<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut languages: Vec<&str> = names.into_iter().collect();
    languages.sort();
    languages.dedup();
    languages
}

/// What showing answers scoring at least `threshold` does to `cases`
/// (`score` None: the answer abstained before the decision).
pub fn outcome_at(cases: &[(&Case, Option<f64>)], threshold: f64) -> Outcome {
    let mut o = Outcome::default();
    for (case, score) in cases {
        o.add(case, score.is_some_and(|s| s >= threshold));
    }
    o
}

/// The lowest threshold (of 0.00, 0.01, ... 1.00) at which no language of
/// `cases` answers more than `max_unanswerable` of its unanswerable
/// questions: as many answers as the abstention target allows.
pub fn choose_threshold(cases: &[(&Case, Option<f64>)], max_unanswerable: f64) -> f64 {
    let languages = languages(cases.iter().map(|(c, _)| c.language.as_str()));
    for step in 0..=100 {
        let t = f64::from(step) / 100.0;
        let ok = languages.iter().all(|lang| {
            let of: Vec<(&Case, Option<f64>)> = cases.iter().filter(|(c, _)| c.language == *lang).copied().collect();
            outcome_at(&of, t).unanswerable_answered_rate() <= max_unanswerable
        });
        if ok {
            return t;
        }
    }
    1.0
}

/// How a threshold is chosen on a set of scored cases.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThresholdRule {
    /// The lowest threshold at which no language answers more than this
    /// share of its unanswerable questions.
    AtMostUnanswerable(f64),
    /// The threshold that keeps the most right answers for the fewest
    /// unanswerable questions answered, the two weighed equally (Youden's
    /// J: right answers kept minus unanswerable answered), averaged over
    /// the languages.
    Balanced,
}

impl ThresholdRule {
    pub fn choose(self, cases: &[(&Case, Option<f64>)]) -> f64 {
        match self {
            ThresholdRule::AtMostUnanswerable(max) => choose_threshold(cases, max),
            ThresholdRule::Balanced => balanced_threshold(cases),
        }
    }
}

/// [`ThresholdRule::Balanced`]: of 0.00, 0.01, ... 1.00, the one with the
/// highest mean over languages of (right answers kept - unanswerable
/// answered); the lowest of equals.
pub fn balanced_threshold(cases: &[(&Case, Option<f64>)]) -> f64 {
    let languages = languages(cases.iter().map(|(c, _)| c.language.as_str()));
    let mut best = (f64::NEG_INFINITY, 0.0);
    for step in 0..=100 {
        let t = f64::from(step) / 100.0;
        let j: f64 = languages
            .iter()
            .map(|lang| {
                let of: Vec<(&Case, Option<f64>)> = cases.iter().filter(|(c, _)| c.language == *lang).copied().collect();
                let o = outcome_at(&of, t);
                (1.0 - o.right_held_back_rate()) - o.unanswerable_answered_rate()
            })
            .sum::<f64>()
            / languages.len().max(1) as f64;
        if j > best.0 + 1e-12 {
            best = (j, t);
        }
    }
    best.1
}

/// Fold of each case (0..k): stratified by language, answerability and
/// whether there is an answer to decide on, shuffled with `seed`.
pub fn folds(cases: &[Case], k: usize, seed: u64) -> Vec<usize> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut order: Vec<usize> = (0..cases.len()).collect();
    rng.shuffle(&mut order);
    let stratum = |c: &Case| (c.language.clone(), c.answerable, c.features.is_some(), c.right);
    order.sort_by_key(|&i| stratum(&cases[i]));
    let mut fold = vec![0; cases.len()];
    for (n, &i) in order.iter().enumerate() {
        fold[i] = n % k.max(1);
    }
    fold
}

/// Cross-validated scores: each case scored by the model fitted on the
/// other folds, and the threshold each fold's training part chose.
pub struct CrossValidated {
    pub scores: Vec<Option<f64>>,
    pub thresholds: Vec<f64>,
    /// Each case's decision at its own fold's threshold.
    pub shown: Vec<bool>,
}

pub fn cross_validate(cases: &[Case], k: usize, seed: u64, spec: &FitSpec, rule: ThresholdRule) -> CrossValidated {
    let fold = folds(cases, k, seed);
    let mut scores = vec![None; cases.len()];
    let mut shown = vec![false; cases.len()];
    let mut thresholds = Vec::new();
    for f in 0..k {
        let train: Vec<usize> = (0..cases.len()).filter(|&i| fold[i] != f).collect();
        let model = fit_cases(train.iter().map(|&i| &cases[i]), spec);
        let train_scored: Vec<(&Case, Option<f64>)> =
            train.iter().map(|&i| (&cases[i], cases[i].features.map(|x| model.probability(&x)))).collect();
        let t = rule.choose(&train_scored);
        thresholds.push(t);
        for i in (0..cases.len()).filter(|&i| fold[i] == f) {
            scores[i] = cases[i].features.map(|x| model.probability(&x));
            shown[i] = scores[i].is_some_and(|s| s >= t);
        }
    }
    CrossValidated { scores, thresholds, shown }
}

/// Each case scored by the model fitted on the other languages' cases
/// only: how the decision holds on questions unlike those it was fitted
/// on (another language, another source, other negatives). None for a
/// case without features, or all None with one language.
pub fn across_languages(cases: &[Case], spec: &FitSpec) -> Vec<Option<f64>> {
    let mut scores = vec![None; cases.len()];
    let languages = languages(cases.iter().map(|c| c.language.as_str()));
    if languages.len() < 2 {
        return scores;
    }
    for lang in languages {
        let model = fit_cases(cases.iter().filter(|c| c.language != lang), spec);
        for (i, c) in cases.iter().enumerate().filter(|(_, c)| c.language == lang) {
            scores[i] = c.features.map(|x| model.probability(&x));
        }
    }
    scores
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: FitSpec = FitSpec { use_feature: [true; N_FEATURES], signs: Signs::NonNegative };

    fn case(language: &str, answerable: bool, check: Option<f64>, right: bool) -> Case {
        Case { language: language.into(), answerable, features: check.map(|c| [c, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]), right }
    }

    #[test]
    fn auroc_is_the_chance_a_positive_outranks_a_negative() {
        assert_eq!(auroc(&[(0.9, true), (0.1, false)]), Some(1.0));
        assert_eq!(auroc(&[(0.1, true), (0.9, false)]), Some(0.0));
        assert_eq!(auroc(&[(0.5, true), (0.5, false)]), Some(0.5));
        assert_eq!(auroc(&[(0.8, true), (0.4, false), (0.6, false), (0.2, true)]), Some(0.5));
        assert_eq!(auroc(&[(0.8, true)]), None);
    }

    #[test]
    fn the_fit_separates_what_a_feature_separates() {
        let x: Vec<[f64; N_FEATURES]> =
            (0..200).map(|i| [f64::from(i % 2) * 2.0 - 1.0 + f64::from(i % 7) * 0.01, 0.3, 0.0, 0.0, 0.0, 0.0, 0.0]).collect();
        let y: Vec<bool> = (0..200).map(|i| i % 2 == 1).collect();
        let m = fit(&x, &y, &ALL);
        assert!(m.weights[0] > 1.0, "{m:?}");
        assert!(m.probability(&[1.0, 0.3, 0.0, 0.0, 0.0, 0.0, 0.0]) > 0.8);
        assert!(m.probability(&[-1.0, 0.3, 0.0, 0.0, 0.0, 0.0, 0.0]) < 0.2);
        let off = fit(&x, &y, &FitSpec { use_feature: [false; N_FEATURES], ..ALL });
        assert_eq!(off.weights, [0.0; N_FEATURES], "a feature left out gets no weight");
    }

    #[test]
    fn a_feature_that_separates_backwards_gets_no_weight_unless_signs_are_free() {
        // Feature 1 is high exactly for the wrong answers.
        let x: Vec<[f64; N_FEATURES]> = (0..200)
            .map(|i| [f64::from(i % 2) + f64::from(i % 5) * 0.3, f64::from(1 - i % 2) + f64::from(i % 3) * 0.2, 0.0, 0.0, 0.0, 0.0, 0.0])
            .collect();
        let y: Vec<bool> = (0..200).map(|i| i % 2 == 1).collect();
        let kept = fit(&x, &y, &ALL);
        assert!(kept.weights[0] > 0.0 && kept.weights[1] == 0.0, "{kept:?}");
        let free = fit(&x, &y, &FitSpec { signs: Signs::Free, ..ALL });
        assert!(free.weights[1] < -0.5, "{free:?}");
    }

    #[test]
    fn across_languages_scores_each_language_by_the_others_fit() {
        // In "vi" the feature separates; in "en" it separates backwards: the
        // model fitted on one language ranks the other one upside down.
        let cases: Vec<Case> = (0..80)
            .map(|i| {
                let right = i % 2 == 0;
                let lang = if i < 40 { "vi" } else { "en" };
                let x = if (lang == "vi") == right { 0.9 } else { 0.1 } + f64::from(i % 4) * 0.01;
                case(lang, true, Some(x), right)
            })
            .collect();
        let free = FitSpec { signs: Signs::Free, ..ALL };
        let scores = across_languages(&cases, &free);
        let of = |lang: &str| -> Vec<(f64, bool)> {
            (0..80).filter(|&i| cases[i].language == lang).map(|i| (scores[i].unwrap_or(0.5), cases[i].right)).collect()
        };
        assert!(auroc(&of("vi")).unwrap() < 0.1 && auroc(&of("en")).unwrap() < 0.1);
        let one: Vec<Case> = cases.iter().filter(|c| c.language == "vi").cloned().collect();
        assert!(across_languages(&one, &free).iter().all(Option::is_none), "one language: nothing to score across");
    }

    #[test]
    fn an_outcome_counts_what_the_threshold_shows_and_holds_back() {
        let cases = [
            case("vi", true, Some(0.9), true),
            case("vi", true, Some(0.4), true),
            case("vi", true, Some(0.8), false),
            case("vi", false, Some(0.7), false),
            case("vi", false, None, false),
        ];
        let scored: Vec<(&Case, Option<f64>)> = cases.iter().map(|c| (c, c.features.map(|x| x[0]))).collect();
        let o = outcome_at(&scored, 0.5);
        assert_eq!((o.shown, o.right_candidates, o.right_held_back, o.wrong_shown, o.unanswerable_answered), (3, 2, 1, 1, 1));
        assert_eq!(o.unanswerable_answered_rate(), 0.5);
        assert_eq!(choose_threshold(&scored, 0.0), 0.71);
        assert_eq!(choose_threshold(&scored, 0.5), 0.0);
        // Balanced: keeping both right answers and answering one of two
        // unanswerable questions (t <= 0.4) is as good as keeping one and
        // answering none (0.7 < t <= 0.9); the lower threshold is taken.
        assert_eq!(balanced_threshold(&scored), 0.0);
        let more = [
            case("vi", true, Some(0.9), true),
            case("vi", true, Some(0.4), true),
            case("vi", false, Some(0.7), false),
            case("vi", false, Some(0.6), false),
            case("vi", false, Some(0.5), false),
        ];
        let scored: Vec<(&Case, Option<f64>)> = more.iter().map(|c| (c, c.features.map(|x| x[0]))).collect();
        // t <= 0.4: 1 - 3/3 = 0; 0.5 < t <= 0.6: 1/2 - 2/3; 0.7 < t <= 0.9: 1/2 - 0.
        assert_eq!(balanced_threshold(&scored), 0.71);
    }

    #[test]
    fn folds_are_stratified_and_repeatable() {
        let cases: Vec<Case> = (0..40).map(|i| case(if i < 20 { "vi" } else { "en" }, i % 4 != 0, Some(0.5), i % 2 == 0)).collect();
        let f = folds(&cases, 5, 46);
        assert_eq!(f, folds(&cases, 5, 46));
        for k in 0..5 {
            assert_eq!(f.iter().filter(|&&x| x == k).count(), 8);
            assert_eq!((0..40).filter(|&i| f[i] == k && !cases[i].answerable).count(), 2);
        }
    }
}

//! The forms a question comes in (pure): a stratified sample of a set
//! whose query ids name their form and kind (`eval/forms/build.py`:
//! `vi-q0001`, `envi-u0003`, `compound-x0002`), and the figures of
//! `eval answers` per form, so a change that helps one form and hurts
//! another shows as both.
//!
//! Forms: `vi` (Vietnamese over Vietnamese), `en`, `envi` (English over
//! Vietnamese), `vien` (Vietnamese over English), `viplain` (Vietnamese
//! typed without diacritics), `compound` (two questions in one). Kinds:
//! `q` answerable, `u` unanswerable on a topic the corpus has (its hard
//! negatives are in it), `x` unanswerable from outside the corpus.

use std::collections::BTreeMap;

use serde::Serialize;

use super::answer_scores::{Percentiles, Scored};

/// The form and kind a query id names: `("envi", 'q')` for `envi-q0001`;
/// None for an id of another shape.
pub fn form_of(id: &str) -> Option<(&str, char)> {
    let (form, rest) = id.split_once('-')?;
    let kind = rest.chars().next().filter(|k| matches!(k, 'q' | 'u' | 'x'))?;
    (!form.is_empty() && rest[1..].chars().all(|c| c.is_ascii_digit())).then_some((form, kind))
}

/// A stable number for `id` under `seed` (FNV-1a): the order a sample is
/// drawn in, the same on every machine and run.
fn draw(seed: u64, id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Which of `ids` to ask: up to `per_form` of each form, its kinds in the
/// shares the set has them (at least one of each kind it has), drawn by
/// `seed`; in the set's order. Ids of no form are all kept.
pub fn stratified(ids: &[&str], per_form: usize, seed: u64) -> Vec<bool> {
    let mut groups: BTreeMap<(&str, char), Vec<usize>> = BTreeMap::new();
    let mut form_sizes: BTreeMap<&str, usize> = BTreeMap::new();
    let mut keep = vec![false; ids.len()];
    for (i, id) in ids.iter().enumerate() {
        match form_of(id) {
            Some((form, kind)) => {
                groups.entry((form, kind)).or_default().push(i);
                *form_sizes.entry(form).or_default() += 1;
            }
            None => keep[i] = true,
        }
    }
    for ((form, _), mut members) in groups {
        let size = form_sizes[form];
        let take =
            if size <= per_form { members.len() } else { ((members.len() * per_form) as f64 / size as f64).round().max(1.0) as usize };
        members.sort_by_key(|&i| draw(seed, ids[i]));
        for &i in members.iter().take(take) {
            keep[i] = true;
        }
    }
    keep
}

/// What one form's questions came to.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct FormFigures {
    pub answerable: usize,
    /// Of the answerable: the answer (every part's) inside a cited span;
    /// the gold passage cited; held back (the answer said the documents do
    /// not say); failed.
    pub answer_in_citation: f64,
    pub gold_cited: f64,
    pub held_back: f64,
    pub failed: usize,
    /// Unanswerable on a topic the corpus has, and from outside it: how
    /// many, and the share answered anyway (not abstained, or citing).
    pub same_topic_unanswerable: usize,
    pub same_topic_answered: f64,
    pub outside_unanswerable: usize,
    pub outside_answered: f64,
    /// Shown sections without a citation, over every question of the form.
    pub sections_without_citations: usize,
    /// Sections the figure and name check took back (shown as their cited
    /// text instead), and citations that do not slice the raw text.
    pub unfaithful_sections: usize,
    pub bad_slices: usize,
    /// Sections given the sentence that states their own words
    /// (`rag_answer::support`).
    pub supported_sections: usize,
    /// Of the answerable: the page's first words and the whole answer,
    /// and llama.cpp's own prefill of the answer's prompt.
    pub first_words_ms: Percentiles,
    pub whole_ms: Percentiles,
    pub prefill_ms: Percentiles,
    /// Question by question, the first words less llama.cpp's prefill of
    /// the prompt: what the system and the model's first tokens add to
    /// what the first words cannot come before (issue 57's bar: 1 s).
    pub after_prefill_ms: Percentiles,
}

fn p50(mut v: Vec<u64>) -> Percentiles {
    v.sort_unstable();
    let at = |p: f64| if v.is_empty() { 0 } else { v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1] };
    Percentiles { p50: at(0.5), p95: at(0.95) }
}

/// The figures per form of `scored` (questions whose id names no form are
/// left out; empty when none does).
pub fn by_form(scored: &[Scored]) -> BTreeMap<String, FormFigures> {
    let mut out: BTreeMap<String, Vec<(&Scored, char)>> = BTreeMap::new();
    for s in scored {
        if let Some((form, kind)) = form_of(&s.question_id) {
            out.entry(form.to_string()).or_default().push((s, kind));
        }
    }
    out.into_iter()
        .map(|(form, members)| {
            let share = |of: &[&Scored], f: &dyn Fn(&Scored) -> bool| of.iter().filter(|s| f(s)).count() as f64 / of.len().max(1) as f64;
            let kind = |k: char| members.iter().filter(|(_, c)| *c == k).map(|(s, _)| *s).collect::<Vec<_>>();
            let (answerable, same, outside) = (kind('q'), kind('u'), kind('x'));
            let answered = |s: &Scored| !s.abstained || s.citations > 0;
            let figures = FormFigures {
                answerable: answerable.len(),
                answer_in_citation: share(&answerable, &|s| s.answer_in_citation),
                gold_cited: share(&answerable, &|s| s.gold_cited),
                held_back: share(&answerable, &|s| s.abstained),
                failed: members.iter().filter(|(s, _)| s.status == rag_store::messages::MessageStatus::Failed).count(),
                same_topic_unanswerable: same.len(),
                same_topic_answered: share(&same, &answered),
                outside_unanswerable: outside.len(),
                outside_answered: share(&outside, &answered),
                sections_without_citations: members.iter().filter(|(s, _)| !s.abstained).map(|(s, _)| s.sections_without_citations).sum(),
                unfaithful_sections: members.iter().map(|(s, _)| s.unfaithful_sections).sum(),
                bad_slices: members.iter().map(|(s, _)| s.bad_slices).sum(),
                supported_sections: members.iter().map(|(s, _)| s.supported_sections).sum(),
                first_words_ms: p50(answerable.iter().map(|s| s.first_token_ms).collect()),
                whole_ms: p50(answerable.iter().map(|s| s.latency_ms).collect()),
                prefill_ms: p50(answerable.iter().filter(|s| s.prefill_ms > 0).map(|s| s.prefill_ms).collect()),
                after_prefill_ms: p50(answerable
                    .iter()
                    .filter(|s| s.prefill_ms > 0)
                    .map(|s| s.first_token_ms.saturating_sub(s.prefill_ms))
                    .collect()),
            };
            (form, figures)
        })
        .collect()
}

/// The per-form table, for people.
pub fn print(forms: &BTreeMap<String, FormFigures>) {
    if forms.is_empty() {
        return;
    }
    println!(
        "{:<9} {:>4} {:>9} {:>7} {:>9} {:>12} {:>12} {:>8} {:>10} {:>6} {:>12} {:>12} {:>12} {:>13}",
        "form",
        "n",
        "in cited",
        "gold",
        "held back",
        "same-topic",
        "outside",
        "uncited",
        "unfaithful",
        "bad",
        "first p50",
        "whole p50",
        "prefill p50",
        "after it p50"
    );
    for (form, f) in forms {
        println!(
            "{form:<9} {:>4} {:>8.1}% {:>6.1}% {:>8.1}% {:>12} {:>12} {:>8} {:>10} {:>6} {:>11.1}s {:>11.1}s {:>11.1}s {:>12.1}s",
            f.answerable,
            100.0 * f.answer_in_citation,
            100.0 * f.gold_cited,
            100.0 * f.held_back,
            format!("{:.0}% of {}", 100.0 * f.same_topic_answered, f.same_topic_unanswerable),
            format!("{:.0}% of {}", 100.0 * f.outside_answered, f.outside_unanswerable),
            f.sections_without_citations,
            f.unfaithful_sections,
            f.bad_slices,
            f.first_words_ms.p50 as f64 / 1000.0,
            f.whole_ms.p50 as f64 / 1000.0,
            f.prefill_ms.p50 as f64 / 1000.0,
            f.after_prefill_ms.p50 as f64 / 1000.0,
        );
    }
    println!(
        "(in cited, gold, held back: of the answerable; same-topic and outside: unanswerable questions answered anyway; \
         after it: the first words less llama.cpp's prefill of the prompt, question by question)"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_their_form_and_kind() {
        assert_eq!(form_of("envi-q0012"), Some(("envi", 'q')));
        assert_eq!(form_of("compound-x0002"), Some(("compound", 'x')));
        assert_eq!(form_of("q01"), None);
        assert_eq!(form_of("vi-z0001"), None);
        assert_eq!(form_of("vi-qx"), None);
    }

    #[test]
    fn a_stratified_sample_keeps_each_forms_kinds_in_their_shares_and_is_the_same_every_time() {
        let mut ids: Vec<String> = Vec::new();
        for form in ["vi", "en"] {
            ids.extend((1..=70).map(|i| format!("{form}-q{i:04}")));
            ids.extend((1..=20).map(|i| format!("{form}-u{i:04}")));
            ids.extend((1..=10).map(|i| format!("{form}-x{i:04}")));
        }
        ids.push("c01".into());
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let keep = stratified(&refs, 20, 46);
        let kept: Vec<&str> = refs.iter().zip(&keep).filter(|(_, k)| **k).map(|(id, _)| *id).collect();
        let count = |p: &str| kept.iter().filter(|id| id.starts_with(p)).count();
        assert_eq!((count("vi-q"), count("vi-u"), count("vi-x")), (14, 4, 2));
        assert_eq!((count("en-q"), count("en-u"), count("en-x")), (14, 4, 2));
        assert!(kept.contains(&"c01"), "an id of no form is kept");
        assert_eq!(keep, stratified(&refs, 20, 46));
        assert_ne!(keep, stratified(&refs, 20, 47));
        // A form smaller than the sample is asked whole.
        assert!(stratified(&refs, 500, 46).iter().all(|k| *k));
    }

    #[test]
    fn figures_per_form_count_each_kind_apart() {
        let s = |id: &str, answerable: bool, abstained: bool, in_citation: bool, citations: usize| Scored {
            question_id: id.into(),
            answerable,
            abstained,
            answer_in_citation: in_citation,
            citations,
            first_token_ms: 1000,
            latency_ms: 3000,
            ..Scored::default()
        };
        let scored = [
            s("envi-q0001", true, false, true, 1),
            s("envi-q0002", true, true, false, 0),
            s("envi-u0001", false, true, false, 0),
            s("envi-x0001", false, false, false, 2),
            s("vi-q0001", true, false, true, 1),
            s("q07", true, false, true, 1),
        ];
        let forms = by_form(&scored);
        assert_eq!(forms.keys().collect::<Vec<_>>(), ["envi", "vi"]);
        let f = &forms["envi"];
        assert_eq!((f.answerable, f.answer_in_citation, f.held_back), (2, 0.5, 0.5));
        assert_eq!((f.same_topic_unanswerable, f.same_topic_answered), (1, 0.0));
        assert_eq!((f.outside_unanswerable, f.outside_answered), (1, 1.0));
        assert_eq!(f.first_words_ms.p50, 1000);
    }

    #[test]
    fn the_first_words_after_the_prefill_are_taken_question_by_question() {
        let s = |id: &str, first: u64, prefill: u64| Scored {
            question_id: id.into(),
            answerable: true,
            first_token_ms: first,
            prefill_ms: prefill,
            ..Scored::default()
        };
        // Medians apart (first words 5.0 s, prefill 4.0 s) say 1 s; each
        // question's own gap is 0.3 s, 0.4 s or 3.5 s (an extractive answer
        // with no prefill left out).
        let forms = by_form(&[s("vi-q1", 4300, 4000), s("vi-q2", 5000, 4600), s("vi-q3", 6500, 3000), s("vi-q4", 20, 0)]);
        assert_eq!(forms["vi"].after_prefill_ms.p50, 400);
        assert_eq!(forms["vi"].prefill_ms.p50, 4000);
    }
}

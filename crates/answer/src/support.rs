//! Which evidence sentence states what a section says: its words the
//! question did not bring.
//!
//! Small models write the right fact and cite the sentence beside it (the
//! one that names the question's topic), so the span a reader opens does
//! not hold what they read, and the check, which reads the cited sentences,
//! holds the answer back. A section's own words (a name, a date, a figure:
//! what it adds to the question) are found in the sentence it was read
//! from; grounding adds that sentence to the section's citations. Pure: no
//! model call, no threshold fitted on a set (`MIN_SUPPORT` and `MARGIN` are
//! round numbers; docs/answers.md has the figures on the forms set).

use rag_lexical::function_words::{is_filler, is_negation};

use crate::evidence::Evidence;

/// At least this share of a section's own words must be in a sentence for
/// it to be the section's support.
pub const MIN_SUPPORT: f64 = 0.5;
/// …and that share must beat every cited sentence's by this much, so a
/// section its ids already support keeps them alone.
pub const MARGIN: f64 = 0.25;

/// Whether `text` says no: a sentence that says the opposite of a
/// section shares its words but does not state it. Compared with their
/// marks ("chưa" is "not yet", "chùa" a pagoda).
fn negated(text: &str) -> bool {
    rag_lexical::words(text).iter().any(|w| is_negation(w))
}

/// The section's own words: folded, neither filler nor a word of the
/// question, each once.
pub fn own_words(section: &str, question: &str) -> Vec<String> {
    let asked: std::collections::HashSet<String> = rag_lexical::words(question).iter().map(|w| rag_lexical::fold(w)).collect();
    let mut out: Vec<String> = Vec::new();
    for w in rag_lexical::words(section) {
        let f = rag_lexical::fold(&w);
        if !is_filler(&f) && !asked.contains(&f) && !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

/// The section's own words that are names or figures: written with a
/// capital inside a sentence, or with a digit. They read the same in every
/// language, so an English section over a Vietnamese sentence ("Andy
/// Taylor was the band's lead guitarist, Duran Duran") is found by them
/// when its other words are not the sentence's.
pub fn anchors(section: &str, own: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut sentence_start = true;
    for token in section.split_whitespace() {
        let capital = !sentence_start && token.chars().find(|c| c.is_alphanumeric()).is_some_and(char::is_uppercase);
        for w in rag_lexical::words(token) {
            let f = rag_lexical::fold(&w);
            if (capital || f.chars().any(|c| c.is_ascii_digit())) && own.contains(&f) && !out.contains(&f) {
                out.push(f);
            }
        }
        sentence_start = token.ends_with(['.', '!', '?', ':']);
    }
    out
}

/// How well a unit states the section: the larger of the share of its own
/// words and the share of its anchors found among the unit's words
/// (folded); none when one of its figures is missing: a figure is the
/// fact, and a sentence about the same thing with another figure does not
/// state it.
fn support(own: &[String], anchors: &[String], unit_text: &str) -> f64 {
    if own.is_empty() {
        return 0.0;
    }
    let words: std::collections::HashSet<String> = rag_lexical::words(unit_text).iter().map(|w| rag_lexical::fold(w)).collect();
    let has_digit = |w: &String| w.chars().any(|c| c.is_ascii_digit());
    if own.iter().any(|w| has_digit(w) && !words.contains(w)) {
        return 0.0;
    }
    let share = |of: &[String]| of.iter().filter(|w| words.contains(*w)).count() as f64 / of.len().max(1) as f64;
    share(own).max(share(anchors))
}

/// The unit, not among `cited`, that states the section's own words:
/// at least [`MIN_SUPPORT`] of them, [`MARGIN`] more than the best cited
/// unit, and more than any other unit (a tie is no answer, unless one of
/// the tied units is next to a cited one: the model's id was off by one).
/// None when the section has no word of its own.
pub fn supporting_unit(section: &str, question: &str, evidence: &Evidence, cited: &[usize]) -> Option<usize> {
    let own = own_words(section, question);
    if own.is_empty() {
        return None;
    }
    let anchors = anchors(section, &own);
    let says_no = negated(section);
    let scores: Vec<f64> =
        evidence.units.iter().map(|u| if negated(&u.text) == says_no { support(&own, &anchors, &u.text) } else { 0.0 }).collect();
    let best_cited = cited.iter().filter_map(|&i| scores.get(i)).copied().fold(0.0, f64::max);
    let best = scores.iter().enumerate().filter(|(i, _)| !cited.contains(i)).map(|(_, s)| *s).fold(0.0, f64::max);
    if best < MIN_SUPPORT || best < best_cited + MARGIN {
        return None;
    }
    let tied: Vec<usize> = (0..scores.len()).filter(|i| !cited.contains(i) && scores[*i] == best).collect();
    if tied.len() == 1 {
        return tied.first().copied();
    }
    let next_to_cited = |i: &usize| {
        cited.iter().any(|&c| c.abs_diff(*i) == 1 && evidence.units.get(c).map(|u| u.chunk) == evidence.units.get(*i).map(|u| u.chunk))
    };
    let near: Vec<usize> = tied.into_iter().filter(next_to_cited).collect();
    match near.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::EvidenceUnit;

    fn evidence(texts: &[&str]) -> Evidence {
        let units = texts
            .iter()
            .enumerate()
            .map(|(i, t)| EvidenceUnit {
                id: format!("S{}", i + 1),
                chunk: 0,
                start: 0,
                end: t.chars().count(),
                header: None,
                text: t.to_string(),
                heading: None,
            })
            .collect();
        Evidence { units, chunks_used: 1 }
    }

    const TEXTS: &[&str] = &[
        "Andy Taylor là một nhạc sĩ người Anh sinh ra ở Newcastle.",
        "Andy Taylor, cựu tay guitar chính của Duran Duran, sinh năm 1961.",
        "Ban nhạc được thành lập ở Birmingham.",
    ];

    #[test]
    fn own_words_leave_out_the_question_and_the_phrasing() {
        let q = "Andy Taylor là tay guitar của ban nhạc nào?";
        assert_eq!(own_words("Andy Taylor là tay guitar chính của Duran Duran.", q), ["chinh", "duran"]);
        assert!(own_words("Andy Taylor là của ban nhạc nào?", q).is_empty());
    }

    #[test]
    fn the_sentence_that_states_the_fact_is_found_when_a_neighbour_was_cited() {
        let ev = evidence(TEXTS);
        let q = "Andy Taylor là tay guitar của ban nhạc nào?";
        // The model wrote the fact of S2 and cited S1.
        assert_eq!(supporting_unit("Andy Taylor là tay guitar chính của Duran Duran.", q, &ev, &[0]), Some(1));
        // Cited right: nothing to add.
        assert_eq!(supporting_unit("Andy Taylor là tay guitar chính của Duran Duran.", q, &ev, &[1]), None);
        // Nothing of its own, or nothing the evidence states: nothing found.
        assert_eq!(supporting_unit("Andy Taylor chơi guitar.", q, &ev, &[0]), None);
        assert_eq!(supporting_unit("Ban nhạc Queen.", q, &ev, &[0]), None);
        // A figure the sentence does not give: not its support, however
        // many other words it shares.
        assert_eq!(supporting_unit("Andy Taylor, tay guitar chính của Duran Duran, sinh năm 1962.", q, &ev, &[0]), None);
        // Marks do not matter (a reply typed without them).
        assert_eq!(supporting_unit("Duran Duran, sinh nam 1961", q, &ev, &[2]), Some(1));
    }

    #[test]
    fn a_negation_is_a_word_of_the_section() {
        let ev = evidence(&["Probation staff get annual leave.", "The office opens at 8.", "Nhân viên thử việc chưa được nghỉ phép năm."]);
        let q = "Do probation staff get leave?";
        // The sentence that says the opposite states nothing of it.
        assert_eq!(supporting_unit("Probation staff do not get annual leave.", q, &ev, &[1]), None);
        assert_eq!(supporting_unit("Probation staff get annual leave.", q, &ev, &[1]), Some(0));
        let q = "Nhân viên thử việc có được nghỉ phép không?";
        assert_eq!(supporting_unit("Nhân viên thử việc chưa được nghỉ phép năm.", q, &ev, &[1]), Some(2));
    }

    #[test]
    fn names_and_figures_find_the_sentence_across_languages() {
        let ev = evidence(TEXTS);
        let q = "What group is Newcastle native Andy Taylor the former lead guitarist of?";
        let section = "Andy Taylor was formerly the lead guitarist for the band Duran Duran.";
        assert_eq!(anchors(section, &own_words(section, q)), ["duran"]);
        // Of its own words only "duran" is the sentence's; it is the one
        // name, and only S2 has it.
        assert_eq!(supporting_unit(section, q, &ev, &[]), Some(1));
        assert_eq!(supporting_unit(section, q, &ev, &[0]), Some(1));
        // A capital that only starts a sentence names nothing.
        assert!(anchors("Formerly. Band", &own_words("Formerly. Band", q)).is_empty());
    }

    #[test]
    fn a_cited_sentence_that_supports_the_section_nearly_as_well_stands() {
        let ev = evidence(&[
            "Thưởng Tết trả bằng tiền mặt tại văn phòng Hà Nội.",
            "Thưởng Tết trả bằng tiền mặt tại văn phòng Hà Nội hằng năm.",
        ]);
        // Seven of its eight words against eight of eight.
        assert_eq!(supporting_unit("Trả bằng tiền mặt tại văn phòng Hà Nội hằng năm.", "Thưởng Tết trả thế nào?", &ev, &[0]), None);
    }

    #[test]
    fn a_tie_is_broken_only_by_a_neighbour_of_the_cited_sentence() {
        let ev = evidence(&["Giá vé là 50.000 đồng.", "Mở cửa lúc 8 giờ.", "Giá vé là 50.000 đồng."]);
        assert_eq!(supporting_unit("50.000 đồng", "Giá vé bao nhiêu?", &ev, &[1]), None, "both beside it");
        assert_eq!(supporting_unit("50.000 đồng", "Giá vé bao nhiêu?", &ev, &[]), None, "neither beside anything");
        let ev = evidence(&["Giá vé là 50.000 đồng.", "Mở cửa lúc 8 giờ.", "Đóng cửa lúc 17 giờ.", "Vé 50.000 đồng."]);
        assert_eq!(supporting_unit("50.000 đồng", "Giá vé bao nhiêu?", &ev, &[1]), Some(0));
    }
}

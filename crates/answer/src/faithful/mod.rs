//! Nothing said that the cited sentences do not say: the figures, dates
//! and names of a section's text must be those of what it cites.
//!
//! The model cites sentence ids and the system makes exact spans, so a
//! citation is always real; the section's own words are the model's. A
//! small model writes "năm 1901" citing a sentence that says 1900, swaps a
//! day and a month, gives one row's figure to another, or computes "tăng
//! 38,6%" from rows that make 12,6%, and the citation then lends the error
//! its authority. Numbers, dates and proper names are what such errors are
//! made of and what a reader checks, so they are checked here:
//!
//! - every date of the section is a date of its cited text or of the
//!   question, compared as a date (`figures::Date::agrees_with`);
//! - every other number is a number of its cited units (compared by its
//!   digits: "1.245,6" is "1,245.6") said of the unit or the row's column
//!   that holds it (`bind`), or of the question; or it is recomputed from
//!   cited numbers (`derive`: a difference, a percent change, a share, a
//!   ratio or a sum, rounded as written), and the computation is then
//!   shown after the section;
//! - every capitalised word inside a sentence (a name in Vietnamese and
//!   English writing) is a word of the cited text or of the question,
//!   diacritics and case aside.
//!
//! Across languages names and the binding are not checked (an English
//! section over Vietnamese text spells "Hà Nội" "Hanoi"); numbers and dates
//! are. A section that fails says its cited units instead, a table row with
//! its header ("Lợi nhuận gộp — 2022: 312,5; 2023: 351,9").

use std::collections::HashSet;

mod bind;
mod derive;
mod figures;

use figures::{dates, month_named, numbers};

/// Lower-cased, diacritics-folded words of `text`.
fn folded_words(text: &str) -> HashSet<String> {
    rag_lexical::words(text).iter().map(|w| rag_lexical::fold(w)).collect()
}

/// Capitalised words of `text` that do not open a sentence (after ". ! ?
/// : ;", a line break, a bullet, or at the start): names.
fn names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut opens = true;
    for token in text.split_whitespace() {
        let first = token.chars().find(|c| c.is_alphanumeric());
        if !opens && first.is_some_and(char::is_uppercase) {
            // The token's words as the cited text's are split ("U.S.",
            // "Mark's", "Coca-Cola", "COVID-19").
            out.extend(rag_lexical::words(token).into_iter().filter(|w| w.chars().count() >= 2 && !w.chars().all(|c| c.is_ascii_digit())));
        }
        opens = token.ends_with(['.', '!', '?', ':', ';', '…']) || token.chars().all(|c| !c.is_alphanumeric());
    }
    out
}

/// The cited units of `section`: the evidence units its citations cover,
/// each as the model was shown it (a table row with its header:
/// "Lợi nhuận gộp — 2022: 312,5; 2023: 351,9"), in citation order; a
/// citation covering no unit (a narrowed quote) as its own text; a table's
/// header row, cited beside its rows, not again.
pub fn cited_units(section: &crate::Section, evidence: &crate::evidence::Evidence, chunks: &[crate::SourceChunk]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in &section.citations {
        let span = |u: &crate::evidence::EvidenceUnit, (s, e): (usize, usize)| {
            let chunk = &chunks[u.chunk];
            (chunk.chunk_id == c.chunk_id).then(|| (chunk.char_start + s as u64, chunk.char_start + e as u64))
        };
        let covered: Vec<&crate::evidence::EvidenceUnit> = evidence
            .units
            .iter()
            .filter(|u| span(u, (u.start, u.end)).is_some_and(|(s, e)| c.char_start <= s && e <= c.char_end))
            .collect();
        let a_header = evidence.units.iter().any(|u| u.header.and_then(|h| span(u, h)) == Some((c.char_start, c.char_end)));
        let texts: Vec<String> = if !covered.is_empty() {
            covered.iter().map(|u| u.text.clone()).collect()
        } else if a_header {
            Vec::new()
        } else {
            vec![c.text.split_whitespace().collect::<Vec<_>>().join(" ")]
        };
        for t in texts {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out
}

/// Replaces the text of each section that says what its cited units do
/// not by those units (`cited_units`), recording the section as written
/// and what was missing in `report.unfaithful_sections`; a section with a
/// recomputed figure keeps its text and shows the computation after it
/// (`report.derived_figures`).
pub fn keep_to_citations(
    sections: &mut [crate::Section],
    question: &str,
    evidence: &crate::evidence::Evidence,
    chunks: &[crate::SourceChunk],
    report: &mut crate::CitationReport,
) {
    for section in sections.iter_mut() {
        let units = cited_units(section, evidence, chunks);
        if units.is_empty() {
            continue;
        }
        let check = check_facts(&section.text, &units, question);
        if !check.missing.is_empty() {
            report.unfaithful_sections.push(format!("{} (not in its citations: {})", section.text, check.missing.join(", ")));
            // Each unit a sentence of its own: a table row ends with its
            // last value, not a full stop.
            let sentences: Vec<String> =
                units.iter().map(|u| if u.ends_with(['.', '!', '?', '…', ':']) { u.clone() } else { format!("{u}.") }).collect();
            section.text = sentences.join(" ");
        } else if !check.derived.is_empty() {
            let said = match rag_retrieval::detect_language(&section.text) {
                rag_retrieval::Language::Vi => "tính lại",
                _ => "recomputed",
            };
            report.derived_figures.extend(check.derived.iter().cloned());
            section.text = format!("{} ({said}: {})", section.text.trim_end(), check.derived.join("; "));
        }
    }
}

/// Removes from each section the sentences that are questions: a small
/// model answering one part of a question often writes the question (or
/// the next part) into its answer ("Nhà hát Mùa hè nằm ở đâu? Nhà hát …").
/// An answer's sentence never ends with a question mark. A section left
/// with nothing says its cited text verbatim. Returns how many sentences
/// went.
pub fn drop_questions(sections: &mut [crate::Section]) -> usize {
    let mut dropped = 0;
    for section in sections.iter_mut() {
        let sentences = sentence_spans(&section.text);
        let (questions, kept): (Vec<&str>, Vec<&str>) = sentences.iter().partition(|s| s.trim_end().ends_with(['?', '？']));
        if questions.is_empty() {
            continue;
        }
        dropped += questions.len();
        let kept = kept.iter().map(|s| s.trim()).filter(|s| !s.is_empty()).collect::<Vec<_>>().join(" ");
        section.text = if kept.chars().any(char::is_alphanumeric) {
            kept
        } else {
            section.citations.iter().map(|c| c.text.split_whitespace().collect::<Vec<_>>().join(" ")).collect::<Vec<_>>().join(" ")
        };
    }
    dropped
}

/// `text` cut after each `.`, `!`, `?` (and full-width `？`) that ends a
/// word and is followed by a space or the end: enough to find a question
/// the model wrote, not a sentence splitter (a cut inside "TP. Hồ Chí
/// Minh" only splits a kept sentence in two, which are joined again).
fn sentence_spans(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if matches!(c, '.' | '!' | '?' | '？') && chars.peek().is_none_or(|(_, n)| n.is_whitespace()) {
            let end = i + c.len_utf8();
            out.push(&text[start..end]);
            start = end;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// What the check found in one section.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FactCheck {
    /// What the section says that its cited units do not: numbers as
    /// compared (digits, "12.4"), dates and numbers said of the wrong
    /// thing as written, names lower-cased. Empty: faithful as far as this
    /// can tell.
    pub missing: Vec<String>,
    /// Numbers recomputed from cited ones: "12,6% = (351,9 − 312,5) /
    /// 312,5 × 100 = 12,61".
    pub derived: Vec<String>,
}

/// Checks `section` against its cited units (`cited_units`: sentences, and
/// table rows read with their headers) and the question.
pub fn check_facts(section: &str, cited_units: &[String], question: &str) -> FactCheck {
    let cited = cited_units.join(" ");
    let mut check = FactCheck::default();
    let cited_words = folded_words(&cited);
    let same_language = rag_retrieval::detect_language(section) == rag_retrieval::detect_language(&cited);

    // Dates, as dates.
    let known_dates: Vec<figures::Date> = dates(&cited).into_iter().chain(dates(question)).collect();
    let section_dates = dates(section);
    for d in &section_dates {
        if !known_dates.iter().any(|k| d.agrees_with(k)) {
            check.missing.push(section[d.start..d.end].to_string());
        }
    }
    let in_a_date = |pos: usize| section_dates.iter().any(|d| d.start <= pos && pos < d.end);

    // Numbers: stated and bound, or recomputed.
    let question_keys: HashSet<String> = numbers(question).into_iter().map(|f| f.key).collect();
    let mut known: HashSet<String> = numbers(&cited).into_iter().map(|f| f.key).collect();
    for w in &cited_words {
        if let Some(m) = month_named(w) {
            known.insert(m.to_string());
        }
    }
    let units: Vec<bind::CitedUnit> = cited_units.iter().map(|t| bind::CitedUnit::new(t)).collect();
    let operands: Vec<derive::Operands> =
        units.iter().map(|u| derive::Operands { figures: u.figures.iter().collect(), words: u.words.clone() }).collect();
    for f in numbers(section).iter().filter(|f| !in_a_date(f.start)) {
        if question_keys.contains(&f.key) {
            continue;
        }
        if known.contains(&f.key) {
            if same_language && !f.is_year() && bind::misbound(section, f, &units) {
                check.missing.push(format!("{} (said of another row or sentence)", f.written));
            }
            continue;
        }
        let after = section[f.end..].trim_start().to_lowercase();
        let ratio_word =
            after.starts_with("lần") || after.starts_with("times") || section[..f.start].to_lowercase().trim_end().ends_with("gấp");
        match derive::derive(f, &operands, ratio_word) {
            Some(d) => check.derived.push(format!("{}{} = {}", f.written, if f.percent { "%" } else { "" }, d.shown)),
            None => check.missing.push(f.key.clone()),
        }
    }

    // Names.
    if same_language {
        let question_words = folded_words(question);
        for name in names(section) {
            let folded = rag_lexical::fold(&name);
            if !cited_words.contains(&folded) && !question_words.contains(&folded) {
                check.missing.push(name);
            }
        }
    }
    check.missing.dedup();
    check
}

/// What a section says that `cited` (one text) does not: `check_facts`'s
/// `missing` with the whole cited text as one unit.
pub fn unsupported_facts(section: &str, cited: &str, question: &str) -> Vec<String> {
    check_facts(section, &[cited.to_string()], question).missing
}

#[cfg(test)]
mod tests;

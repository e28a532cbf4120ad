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
mod tests {
    #[test]
    fn a_question_written_into_an_answer_goes() {
        let section = |text: &str, cited: &str| crate::fixtures::section(text, vec![crate::fixtures::citation(cited)]);
        let mut sections = [
            section("Nhà hát Mùa hè nằm ở đâu? Nhà hát nằm trong Vườn Saxon.", "Nhà hát Mùa hè nằm trong Vườn Saxon."),
            section("Doanh thu tăng 12,4%. Ngoài ra, lợi nhuận tăng bao nhiêu?", "Doanh thu tăng 12,4%."),
            section("What did the exchange stop?", "The exchange stopped in 1939."),
            section("TP. Hồ Chí Minh có 22 quận.", "TP. Hồ Chí Minh có 22 quận."),
        ];
        assert_eq!(drop_questions(&mut sections), 3);
        assert_eq!(sections[0].text, "Nhà hát nằm trong Vườn Saxon.");
        assert_eq!(sections[1].text, "Doanh thu tăng 12,4%.");
        assert_eq!(sections[2].text, "The exchange stopped in 1939.", "nothing left: the cited text");
        assert_eq!(sections[3].text, "TP. Hồ Chí Minh có 22 quận.", "no question: untouched");
    }

    use super::*;

    #[test]
    fn numbers_compare_by_their_digits() {
        // A tenfold error is one.
        assert_eq!(unsupported_facts("Lãi suất 15%.", "Lãi suất 1,5%.", ""), vec!["15"]);
        assert!(unsupported_facts("Doanh thu đạt 1,245.6 tỷ đồng.", "Doanh thu thuần đạt 1.245,6 tỷ đồng.", "").is_empty());
    }

    #[test]
    fn a_number_the_cited_text_does_not_hold_is_reported() {
        // Issue 46: the passage says 1900, the cited sentence is about 1901.
        let cited = "Marconi đã truyền tín hiệu qua Đại Tây Dương vào năm 1901.";
        assert_eq!(unsupported_facts("Tesla đạt được bằng sáng chế vào năm 1900.", cited, "Tesla được cấp bằng năm nào?"), vec!["1900"]);
        // A number of the question may be repeated.
        assert!(unsupported_facts("Năm 2023 doanh thu tăng.", "Doanh thu tăng mạnh.", "Doanh thu năm 2023?").is_empty());
    }

    #[test]
    fn dates_across_languages() {
        let cited = "The settlers were naturalized on May 12, 1705.";
        assert!(unsupported_facts("Họ được nhập tịch ngày 12 tháng 5 năm 1705.", cited, "").is_empty());
        assert_eq!(unsupported_facts("The settlers were naturalized in 1803.", cited, ""), vec!["1803"]);
    }

    #[test]
    fn dates_are_compared_as_dates() {
        let cited = "Hợp đồng có hiệu lực từ ngày 12/05/2024.";
        assert_eq!(unsupported_facts("Hợp đồng có hiệu lực từ ngày 05/12/2024.", cited, ""), vec!["05/12/2024"]);
        assert!(unsupported_facts("Hợp đồng có hiệu lực từ ngày 12 tháng 5 năm 2024.", cited, "").is_empty());
        assert!(unsupported_facts("Hiệu lực từ tháng 5 năm 2024.", cited, "").is_empty());
    }

    const REPORT: &str = "Doanh thu thuần năm 2023 đạt 1.245,6 tỷ đồng, tăng 12,4% so với năm 2022.\n\n\
        | Chỉ tiêu | 2022 | 2023 |\n|---|---|---|\n| Lợi nhuận gộp | 312,5 | 351,9 |\n| Lợi nhuận sau thuế | 173,3 | 187,3 |\n";

    /// The sections the model wrote, each citing ids of the evidence of
    /// `REPORT` (S1 the revenue sentence, S2 and S3 the two rows), grounded
    /// and then checked.
    fn checked(written: &[(&str, &[&str])]) -> (Vec<crate::Section>, crate::CitationReport) {
        let text = REPORT.to_string();
        let chunks = vec![crate::SourceChunk {
            chunk_id: "c".into(),
            document_id: "d".into(),
            char_start: 0,
            char_end: text.chars().count() as u64,
            content: text,
            filename: None,
            page_start: 0,
            page_end: 0,
            lines: None,
            segments: vec![],
        }];
        let evidence = crate::evidence::build(&chunks, usize::MAX);
        let answer = crate::contract::ModelAnswer {
            answerable: true,
            sections: written
                .iter()
                .map(|(t, ids)| crate::contract::ModelSection {
                    text: t.to_string(),
                    cites: ids.iter().map(|i| i.to_string()).collect(),
                    quote: None,
                })
                .collect(),
        };
        let mut report = crate::CitationReport::default();
        let mut sections = crate::grounding::ground(&answer, &evidence, &chunks, &mut report);
        keep_to_citations(&mut sections, "Doanh thu và lợi nhuận năm 2023 tăng bao nhiêu?", &evidence, &chunks, &mut report);
        (sections, report)
    }

    #[test]
    fn a_figure_the_rows_do_not_give_falls_back_to_the_rows_read_with_their_header() {
        // The demo's answer: 312,5 -> 351,9 is +12,6%, not 38,6%.
        let (sections, report) = checked(&[
            ("Doanh thu thuần năm 2023 tăng 12,4%.", &["S1"]),
            ("Lợi nhuận gộp năm 2023 là 351,9 tỷ đồng, tăng 38,6% so với năm 2022.", &["S2", "S3"]),
        ]);
        assert_eq!(sections[0].text, "Doanh thu thuần năm 2023 tăng 12,4%.");
        assert_eq!(sections[1].text, "Lợi nhuận gộp — 2022: 312,5; 2023: 351,9. Lợi nhuận sau thuế — 2022: 173,3; 2023: 187,3.");
        assert!(!sections[1].text.contains('|'), "never as pipes");
        assert_eq!(report.unfaithful_sections.len(), 1);
        assert!(report.unfaithful_sections[0].ends_with("(not in its citations: 38.6)"), "{:?}", report.unfaithful_sections);
        // The citations stay: the rows and their header row, exact.
        let cited: Vec<&str> = sections[1].citations.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(cited, ["| Lợi nhuận gộp | 312,5 | 351,9 |", "| Chỉ tiêu | 2022 | 2023 |", "| Lợi nhuận sau thuế | 173,3 | 187,3 |"]);
    }

    #[test]
    fn a_figure_recomputed_from_the_cited_rows_is_kept_with_its_computation() {
        let (sections, report) = checked(&[("Lợi nhuận gộp năm 2023 là 351,9 tỷ đồng, tăng 12,6% so với năm 2022.", &["S2"])]);
        assert_eq!(
            sections[0].text,
            "Lợi nhuận gộp năm 2023 là 351,9 tỷ đồng, tăng 12,6% so với năm 2022. (tính lại: 12,6% = (351,9 − 312,5) / 312,5 × 100 = 12,61)"
        );
        assert_eq!(report.derived_figures, ["12,6% = (351,9 − 312,5) / 312,5 × 100 = 12,61"]);
        assert!(report.unfaithful_sections.is_empty());
    }

    #[test]
    fn a_figure_given_to_another_row_or_year_is_unfaithful() {
        let (sections, report) = checked(&[
            ("Lợi nhuận gộp năm 2023 là 187,3 tỷ đồng.", &["S2", "S3"]),
            ("Lợi nhuận gộp năm 2022 là 351,9 tỷ đồng.", &["S2"]),
            ("Lợi nhuận sau thuế năm 2023 đạt 187,3 tỷ đồng.", &["S3"]),
        ]);
        assert_eq!(report.unfaithful_sections.len(), 2, "{:?}", report.unfaithful_sections);
        assert_eq!(sections[1].text, "Lợi nhuận gộp — 2022: 312,5; 2023: 351,9.");
        assert_eq!(sections[2].text, "Lợi nhuận sau thuế năm 2023 đạt 187,3 tỷ đồng.");
    }

    #[test]
    fn an_unfaithful_section_is_shown_as_its_citation() {
        let cited = crate::fixtures::citation;
        let mut sections = vec![
            crate::Section {
                text: "Doanh thu tăng 12,4%.".into(),
                source_ids: vec![],
                citations: vec![cited("Doanh thu tăng 12,4% so với năm 2022.")],
            },
            crate::Section {
                text: "Lợi nhuận tăng 9%.".into(),
                source_ids: vec![],
                citations: vec![cited("Lợi nhuận sau thuế\n tăng 8,1%.")],
            },
        ];
        let mut report = crate::CitationReport::default();
        let none = crate::evidence::Evidence::default();
        keep_to_citations(&mut sections, "Doanh thu và lợi nhuận tăng bao nhiêu?", &none, &[], &mut report);
        assert_eq!(sections[0].text, "Doanh thu tăng 12,4%.");
        assert_eq!(sections[1].text, "Lợi nhuận sau thuế tăng 8,1%.");
        assert_eq!(report.unfaithful_sections, vec!["Lợi nhuận tăng 9%. (not in its citations: 9)"]);
    }

    #[test]
    fn names_must_be_in_the_cited_text_or_the_question() {
        let cited = "Fresno là thành phố đông dân nhất vùng Trung tâm California.";
        assert_eq!(unsupported_facts("Thành phố Fresno, California có dân số đông nhất ở Florida.", cited, ""), vec!["florida"]);
        assert!(unsupported_facts("Thành phố Fresno đông dân nhất ở California.", cited, "").is_empty());
        // Diacritics and case aside; a sentence's first word is no name.
        assert!(unsupported_facts("Ở TP. Hồ Chí Minh. Văn phòng mở cửa.", "văn phòng tại tp. ho chi minh mở cửa", "").is_empty());
        // A name is compared word by word, as the cited text is split.
        assert!(unsupported_facts("Ở đó có quân đội U.S. và Coca-Cola.", "Quân đội U.S. mua Coca-Cola.", "").is_empty());
        // Across languages names are not compared.
        assert!(unsupported_facts("The office is in Hanoi.", "Văn phòng đặt tại Hà Nội.", "").is_empty());
    }
}

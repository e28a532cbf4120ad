//! Nothing said that the cited sentences do not say: the numbers and names
//! of a section's text must occur in what it cites.
//!
//! The model cites sentence ids and the system makes exact spans, so a
//! citation is always real; the section's own words are the model's. A
//! small model writes "năm 1901" citing a sentence that says 1900, or puts
//! a city in the wrong state, and the citation then lends the error its
//! authority. Numbers (dates, amounts, percentages) and proper names are
//! what such errors are made of and what a reader checks, so they are
//! checked here: every number of the section must be a number of its cited
//! text, the question, or a month the cited text names ("12 tháng 5 năm
//! 1705" over "May 12, 1705"), compared by their digits ("1.245,6" is
//! "1,245.6"); every capitalised word inside a sentence (a name in
//! Vietnamese and English writing) must be a word of the cited text or of
//! the question, diacritics and case aside. Names are not checked across
//! languages (an English section over Vietnamese text spells "Hà Nội"
//! "Hanoi"); numbers are.

use std::collections::HashSet;

/// Month names (English and Vietnamese spelled-out forms) and their
/// numbers.
const MONTHS: &[(&str, &str)] = &[
    ("january", "1"),
    ("jan", "1"),
    ("february", "2"),
    ("feb", "2"),
    ("march", "3"),
    ("mar", "3"),
    ("april", "4"),
    ("apr", "4"),
    ("may", "5"),
    ("june", "6"),
    ("jun", "6"),
    ("july", "7"),
    ("jul", "7"),
    ("august", "8"),
    ("aug", "8"),
    ("september", "9"),
    ("sep", "9"),
    ("sept", "9"),
    ("october", "10"),
    ("oct", "10"),
    ("november", "11"),
    ("nov", "11"),
    ("december", "12"),
    ("dec", "12"),
    ("giêng", "1"),
    ("chạp", "12"),
];

/// The numbers of `text`, each as its integer digits without thousands
/// separators and leading zeros, and its decimals after a `.`: a period
/// or comma followed by exactly three digits separates thousands, any
/// other one is the decimal mark ("1.245,6" and "1,245.6" are "1245.6",
/// "12,4" is "12.4", "1,5" is "1.5" and not "15"); a space separates
/// thousands only after a group of one to three digits ("1 245", but
/// "năm 2023 150 người" is two numbers).
fn numbers(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let (mut integer, mut decimals) = (String::new(), None::<String>);
        let mut group = 0;
        while i < chars.len() {
            let c = chars[i];
            let digits_after = chars[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            if c.is_ascii_digit() {
                match decimals.as_mut() {
                    Some(d) => d.push(c),
                    None => integer.push(c),
                }
                group += 1;
            } else if decimals.is_none() && digits_after > 0 && matches!(c, '.' | ',') {
                if digits_after == 3 {
                    group = 0;
                } else {
                    decimals = Some(String::new());
                }
            } else if decimals.is_none() && matches!(c, ' ' | '\u{a0}') && digits_after == 3 && (1..=3).contains(&group) {
                group = 0;
            } else {
                break;
            }
            i += 1;
        }
        let trimmed = integer.trim_start_matches('0');
        let mut number = if trimmed.is_empty() { "0".to_string() } else { trimmed.to_string() };
        if let Some(d) = decimals.map(|d| d.trim_end_matches('0').to_string()).filter(|d| !d.is_empty()) {
            number.push('.');
            number.push_str(&d);
        }
        out.push(number);
    }
    out
}

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

/// Replaces the text of each section that says what its citations do not
/// by its cited text verbatim (the sentences, or the narrowed quote), and
/// records the section as written and what was missing in
/// `report.unfaithful_sections`.
pub fn keep_to_citations(sections: &mut [crate::Section], question: &str, report: &mut crate::CitationReport) {
    for section in sections.iter_mut() {
        let cited: Vec<&str> = section.citations.iter().map(|c| c.text.as_str()).collect();
        if cited.is_empty() {
            continue;
        }
        let missing = unsupported_facts(&section.text, &cited.join(" "), question);
        if missing.is_empty() {
            continue;
        }
        report.unfaithful_sections.push(format!("{} (not in its citations: {})", section.text, missing.join(", ")));
        section.text = cited.iter().map(|t| t.split_whitespace().collect::<Vec<_>>().join(" ")).collect::<Vec<_>>().join(" ");
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

/// What a section says that its cited text does not: its numbers and names
/// missing from `cited` (and from `question`): numbers normalised, names
/// lower-cased.
/// Empty: the section is faithful as far as this can tell.
pub fn unsupported_facts(section: &str, cited: &str, question: &str) -> Vec<String> {
    let mut known: HashSet<String> = numbers(cited).into_iter().chain(numbers(question)).collect();
    let cited_words = folded_words(cited);
    for (name, number) in MONTHS {
        if cited_words.contains(&rag_lexical::fold(name)) {
            known.insert((*number).to_string());
        }
    }
    let mut missing: Vec<String> = numbers(section).into_iter().filter(|n| !known.contains(n)).collect();
    let same_language = rag_retrieval::detect_language(section) == rag_retrieval::detect_language(cited);
    if same_language {
        let question_words = folded_words(question);
        for name in names(section) {
            let folded = rag_lexical::fold(&name);
            if !cited_words.contains(&folded) && !question_words.contains(&folded) {
                missing.push(name);
            }
        }
    }
    missing.dedup();
    missing
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
        assert_eq!(numbers("đạt 1.245,6 tỷ, tăng 12,4%; năm 2023"), vec!["1245.6", "12.4", "2023"]);
        assert_eq!(
            numbers("1,245.6 and 05 and 1 245 and 2023 12 and 1,5 and 0.50"),
            vec!["1245.6", "5", "1245", "2023", "12", "1.5", "0.5"]
        );
        assert_eq!(numbers("năm 2023 150 người, 1.234.567 đồng"), vec!["2023", "150", "1234567"]);
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
        keep_to_citations(&mut sections, "Doanh thu và lợi nhuận tăng bao nhiêu?", &mut report);
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

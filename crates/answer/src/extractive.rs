//! Answers without a model: the evidence units (sentences, labelled table
//! rows) that share the most words with the question, each cited with its
//! exact span; no answer at all when none holds enough of the question.

use std::collections::BTreeSet;

use rag_lexical::function_words;

use crate::{evidence, grounding, Section, SourceChunk};

/// Distinct content words of `text`, diacritics and case folded: every
/// word but those the extractive answer ignores
/// (`rag_lexical::function_words::EXTRACTIVE_IGNORED`), as written or folded.
fn content_terms(text: &str) -> BTreeSet<String> {
    let ignored = |w: &str| function_words::EXTRACTIVE_IGNORED.contains(&w);
    rag_lexical::words(text)
        .into_iter()
        .filter(|w| !ignored(w) && !ignored(&rag_lexical::fold(w)))
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .map(|w| rag_lexical::fold(&w))
        .collect()
}

/// The share of the question's content words a unit must hold for the
/// extractive answer to say it: below it, the documents are taken not to
/// answer, and the answer abstains rather than show loosely related
/// sentences. On `eval/vi-dev` (36 answerable, 12 unanswerable questions)
/// see docs/answers.md for what this trades.
pub const MIN_SUPPORT: f64 = 0.5;

/// Up to `max_sections` evidence units, best first by distinct question
/// words matched (ties: earlier in the evidence), then shown in reading
/// order. A unit matching less than half as many words as the best one is
/// left out: a title that shares only "năm 2023" with the question is not
/// an answer beside the sentence that shares all its words. Empty (the
/// caller abstains) when no unit holds [`MIN_SUPPORT`] of the question's
/// content words.
pub fn answer(question: &str, chunks: &[SourceChunk], max_sections: usize) -> Vec<Section> {
    let wanted = content_terms(question);
    if wanted.is_empty() {
        return Vec::new();
    }
    let mut evidence = evidence::build(chunks, usize::MAX);
    // A sentence written to the model is data, never an answer (a row
    // keeps the cells before one that is, `injection::cut`).
    evidence.cut_units(crate::injection::cut);
    let mut scored: Vec<(usize, usize)> = evidence
        .units
        .iter()
        .enumerate()
        // A table row without its header is numbers with nothing to say
        // what they measure: never an answer of its own.
        .filter(|(_, u)| u.header.is_some() || !evidence::is_table_row(&u.text))
        .map(|(i, u)| (content_terms(&u.text).intersection(&wanted).count(), i))
        .filter(|(score, _)| *score > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let best = scored.first().map_or(0, |s| s.0);
    if (best as f64) < MIN_SUPPORT * wanted.len() as f64 {
        return Vec::new();
    }
    let mut picked: Vec<usize> = Vec::new();
    for (score, i) in scored {
        if picked.len() >= max_sections || score * 2 < best {
            break;
        }
        // The same sentence in two documents is said once.
        if !picked.iter().any(|p| evidence.units[*p].text == evidence.units[i].text) {
            picked.push(i);
        }
    }
    picked.sort();
    picked
        .into_iter()
        .map(|i| {
            let unit = &evidence.units[i];
            let chunk = &chunks[unit.chunk];
            Section {
                text: unit.text.clone(),
                source_ids: vec![chunk.chunk_id.clone()],
                citations: grounding::unit_citations(chunk, unit, None),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_matching_sentences_with_exact_spans() {
        let content = "The cat sleeps. Revenue grew 12% in 2023. Costs fell.".to_string();
        let chunk = SourceChunk {
            chunk_id: "chunk-x".into(),
            document_id: "d".into(),
            char_start: 10,
            char_end: 10 + content.chars().count() as u64,
            content,
            filename: None,
            page_start: 0,
            page_end: 0,
            lines: None,
            revision: 1,
            segments: vec![],
        };
        let s = answer("How much did revenue grow?", std::slice::from_ref(&chunk), 3);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].text, "Revenue grew 12% in 2023.");
        assert_eq!(s[0].citations[0].char_start, 10 + 16);
        assert!(answer("quantum chromodynamics", &[chunk], 3).is_empty());
    }

    fn chunk_of(content: &str) -> SourceChunk {
        SourceChunk {
            chunk_id: "c".into(),
            document_id: "d".into(),
            char_start: 100,
            char_end: 100 + content.chars().count() as u64,
            content: content.to_string(),
            filename: None,
            page_start: 0,
            page_end: 0,
            lines: None,
            revision: 1,
            segments: vec![],
        }
    }

    #[test]
    fn a_table_row_is_said_with_its_header_and_cites_both() {
        let content = "Kết quả kinh doanh.\n\n| Chỉ tiêu | 2022 | 2023 |\n|---|---|---|\n| Doanh thu thuần | 1.108,2 | 1.245,6 |\n\
                       | Lợi nhuận gộp | 312,5 | 351,9 |\n\nRủi ro tỷ giá.";
        let chunk = chunk_of(content);
        let sections = answer("Lợi nhuận gộp là bao nhiêu?", std::slice::from_ref(&chunk), 3);
        assert_eq!(sections.len(), 1, "{sections:?}");
        assert_eq!(sections[0].text, "Lợi nhuận gộp — 2022: 312,5; 2023: 351,9");
        let cites: Vec<&str> = sections[0].citations.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(cites, ["| Lợi nhuận gộp | 312,5 | 351,9 |", "| Chỉ tiêu | 2022 | 2023 |"]);
        // Each citation is exactly its slice of the text.
        for c in &sections[0].citations {
            let (s, e) = ((c.char_start - 100) as usize, (c.char_end - 100) as usize);
            assert_eq!(content.chars().skip(s).take(e - s).collect::<String>(), c.text);
        }
        // The header row and the rule are never an answer of their own.
        let texts: Vec<String> = answer("chỉ tiêu 2022 2023", &[chunk], 3).into_iter().map(|s| s.text).collect();
        assert!(texts.iter().all(|t| !t.starts_with('|')), "{texts:?}");
        // Cells joined by " | " (the HTML parser's tables) work the same.
        let html = chunk_of("Chỉ tiêu | 2022 | 2023\nTổng tài sản | 2.310,4 | 2.590,1");
        let s = answer("tổng tài sản", &[html], 3);
        assert_eq!(s[0].text, "Tổng tài sản — 2022: 2.310,4; 2023: 2.590,1");
        // A lone row (no header above it) is never an answer: bare numbers.
        let lone = chunk_of("Intro.\n\n| Tổng tài sản | 2.310,4 |");
        assert!(answer("tổng tài sản", &[lone], 3).is_empty());
    }

    #[test]
    fn sentences_far_behind_the_best_are_left_out() {
        let content = "# Báo cáo tài chính năm 2023\n\nDoanh thu thuần năm 2023 đạt 1.245,6 tỷ đồng, tăng\n12,4% so với năm 2022. \
                       Lợi nhuận tăng 8,1%. Doanh thu dịch vụ tăng mạnh."
            .to_string();
        let chunk = SourceChunk {
            chunk_id: "c".into(),
            document_id: "d".into(),
            char_start: 0,
            char_end: content.chars().count() as u64,
            content,
            filename: None,
            page_start: 0,
            page_end: 0,
            lines: None,
            revision: 1,
            segments: vec![],
        };
        let texts: Vec<String> = answer("Doanh thu năm 2023 tăng bao nhiêu?", &[chunk], 3).into_iter().map(|s| s.text).collect();
        // The title shares only "năm 2023", the profit sentence only "tăng".
        assert_eq!(
            texts,
            vec!["Doanh thu thuần năm 2023 đạt 1.245,6 tỷ đồng, tăng\n12,4% so với năm 2022.", "Doanh thu dịch vụ tăng mạnh."]
        );
    }
}

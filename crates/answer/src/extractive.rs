//! Answers without a model: the retrieved chunks' sentences that share the
//! most words with the question, each cited with its exact span.

use std::collections::BTreeSet;

use crate::cite::citation;
use crate::{Section, SourceChunk};

/// Function words that say nothing about relevance (English, Vietnamese).
const STOPWORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "for", "by", "with", "and", "or", "is", "are", "was", "were", "be", "been", "what", "which",
    "who", "how", "why", "when", "where", "does", "do", "did", "it", "its", "this", "that", "as", "at", "from", "there", "any", "can",
    "about", "là", "của", "và", "có", "các", "những", "cho", "trong", "được", "với", "này", "gì", "nào", "bao", "nhiêu", "không", "một",
    "thì", "ở", "theo", "như", "về", "khi", "đã", "sẽ",
];

/// Sentence spans of `text`, in chars, trimmed of surrounding whitespace.
/// A line break ends a sentence, except a soft one: PDFs and wrapped text
/// break paragraphs into lines, and a sentence cut at its line end would
/// cite half a claim ("… đạt 1.245,6 tỷ đồng, tăng" without "12,4%").
pub fn sentences(text: &str) -> Vec<(usize, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let end_here = (c == '\n' && !is_soft_break(&chars, i))
            || (matches!(c, '.' | '!' | '?' | '…' | '。') && chars.get(i + 1).is_none_or(|n| n.is_whitespace()));
        if end_here || i + 1 == chars.len() {
            let end = if c == '\n' { i } else { i + 1 };
            push_trimmed(&chars, start, end, &mut out);
            start = i + 1;
        }
        i += 1;
    }
    out
}

/// The line break at `i` continues the sentence: the line goes on in
/// lower case, or ends with a comma-like mark, or a word is followed by a
/// number that is not a list item ("tăng\n12,4%" but not "x\n2. y").
/// A blank line, a line ending in sentence punctuation, or a line starting
/// in upper case (headings, table rows, list items) stays a break.
fn is_soft_break(chars: &[char], i: usize) -> bool {
    let prev = chars[..i].iter().rev().find(|c| **c != ' ' && **c != '\t' && **c != '\r');
    let mut rest = chars[i + 1..].iter().skip_while(|c| **c == ' ' || **c == '\t' || **c == '\r');
    let next = rest.clone().next();
    let (Some(&prev), Some(&next)) = (prev, next) else { return false };
    if next == '\n' || matches!(prev, '.' | '!' | '?' | '…' | '。' | ':' | '\n') {
        return false;
    }
    if next.is_lowercase() || matches!(prev, ',' | ';' | '-' | '–' | '(') {
        return true;
    }
    if prev.is_alphabetic() && next.is_numeric() {
        // "2. item" or "12) item" starts a list item; "2022." ends a year.
        let digits = rest.clone().take_while(|c| c.is_numeric()).count();
        let after_digits = rest.nth(digits);
        return !(digits <= 2 && matches!(after_digits, Some('.' | ')')));
    }
    false
}

fn push_trimmed(chars: &[char], mut s: usize, mut e: usize, out: &mut Vec<(usize, usize)>) {
    while s < e && chars[s].is_whitespace() {
        s += 1;
    }
    while e > s && chars[e - 1].is_whitespace() {
        e -= 1;
    }
    if e > s {
        out.push((s, e));
    }
}

fn content_terms(text: &str) -> BTreeSet<String> {
    rag_lexical::words(text)
        .into_iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()) && w.chars().any(char::is_alphanumeric))
        .flat_map(|w| [rag_lexical::fold(&w), w])
        .collect()
}

/// Up to `max_sections` sentences, best first by distinct question words
/// matched (ties: earlier chunk, earlier position), then shown in reading
/// order. A sentence matching less than half as many words as the best one
/// is left out: a title that shares only "năm 2023" with the question is
/// not an answer beside the sentence that shares all its words. Empty when
/// no sentence shares a content word with the question.
pub fn answer(question: &str, chunks: &[SourceChunk], max_sections: usize) -> Vec<Section> {
    let wanted = content_terms(question);
    let mut scored: Vec<(usize, usize, usize, usize, usize)> = Vec::new(); // (score, chunk, start, end, len)
    for (ci, chunk) in chunks.iter().enumerate() {
        let chars: Vec<char> = chunk.content.chars().collect();
        for (s, e) in sentences(&chunk.content) {
            let sentence: String = chars[s..e].iter().collect();
            // A table's header and rule rows are no answer of their own:
            // they are said with the rows they head.
            if is_rule_row(&sentence) || is_header_row(&chars, s) {
                continue;
            }
            let score = content_terms(&sentence).intersection(&wanted).count();
            if score > 0 {
                scored.push((score, ci, s, e, e - s));
            }
        }
    }
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let best = scored.first().map_or(0, |s| s.0);
    let mut picked: Vec<(usize, usize, usize)> = Vec::new();
    for (score, ci, s, e, _) in scored {
        if picked.len() >= max_sections || score * 2 < best {
            break;
        }
        // The same sentence text from an overlapping chunk is said once.
        let text: String = chunks[ci].content.chars().skip(s).take(e - s).collect();
        let dup = picked.iter().any(|(pc, ps, pe)| chunks[*pc].content.chars().skip(*ps).take(pe - ps).collect::<String>() == text);
        if !dup {
            picked.push((ci, s, e));
        }
    }
    picked.sort();
    picked
        .into_iter()
        .map(|(ci, s, e)| {
            let chunk = &chunks[ci];
            let cit = citation(&chunk.chunk_id, chunk, s, e, true);
            let chars: Vec<char> = chunk.content.chars().collect();
            // A table row is said with what its numbers measure: its
            // table's header row names each column, and is cited too.
            if is_table_row(&cit.text) {
                if let Some((hs, he)) = table_header(&chars, s) {
                    let header = citation(&chunk.chunk_id, chunk, hs, he, true);
                    let text = labelled_row(&header.text, &cit.text);
                    return Section { text, source_ids: vec![chunk.chunk_id.clone()], citations: vec![cit, header] };
                }
            }
            Section { text: cit.text.clone(), source_ids: vec![chunk.chunk_id.clone()], citations: vec![cit] }
        })
        .collect()
}

/// A line of a pipe table (Markdown, or cells joined by ` | ` as the HTML
/// parser writes them).
fn is_table_row(line: &str) -> bool {
    let t = line.trim();
    (t.starts_with('|') && t.ends_with('|') && t.len() > 1) || t.matches(" | ").count() >= 2
}

/// `|---|:--:|`: the rule under a Markdown table's header.
fn is_rule_row(line: &str) -> bool {
    let t = line.trim();
    t.contains('-') && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ' | '+'))
}

fn cells(row: &str) -> Vec<&str> {
    let t = row.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split('|').map(str::trim).collect()
}

/// The line (in chars, with its line break excluded) that starts at or
/// before `at`, and the one before it.
fn line_at(chars: &[char], at: usize) -> (usize, usize) {
    let start = chars[..at].iter().rposition(|c| *c == '\n').map_or(0, |n| n + 1);
    let end = chars[at..].iter().position(|c| *c == '\n').map_or(chars.len(), |n| at + n);
    (start, end)
}

fn text_of(chars: &[char], (s, e): (usize, usize)) -> String {
    chars[s..e].iter().collect()
}

/// The row starting at `row_start` is the first line of a table of at
/// least two rows.
fn is_header_row(chars: &[char], row_start: usize) -> bool {
    let line = line_at(chars, row_start);
    // At a line break, `line_at` gives the line it ends.
    let above = (line.0 > 0).then(|| line_at(chars, line.0 - 1));
    let below = (line.1 < chars.len()).then(|| line_at(chars, line.1 + 1));
    is_table_row(&text_of(chars, line))
        && !above.is_some_and(|a| is_table_row(&text_of(chars, a)))
        && below.is_some_and(|b| is_table_row(&text_of(chars, b)))
}

/// The span (in chars, trimmed) of the header row of the table whose row
/// starts at `row_start`: the first line of the run of table rows above
/// it. None for a row with no table row above it.
fn table_header(chars: &[char], row_start: usize) -> Option<(usize, usize)> {
    let mut top = line_at(chars, row_start);
    while top.0 > 0 {
        let prev = line_at(chars, top.0 - 1);
        if !is_table_row(&text_of(chars, prev)) {
            break;
        }
        top = prev;
    }
    let header = text_of(chars, top);
    if top.0 >= line_at(chars, row_start).0 || is_rule_row(&header) {
        return None;
    }
    let start = top.0 + (header.chars().count() - header.trim_start().chars().count());
    let end = top.1 - (header.chars().count() - header.trim_end().chars().count());
    Some((start, end))
}

/// "Lợi nhuận gộp — 2022: 312,5; 2023: 351,9" from the header row
/// "| Chỉ tiêu | 2022 | 2023 |" and the row "| Lợi nhuận gộp | 312,5 | 351,9 |".
fn labelled_row(header: &str, row: &str) -> String {
    let (names, values) = (cells(header), cells(row));
    let Some((label, rest)) = values.split_first() else { return row.trim().to_string() };
    let pairs: Vec<String> = rest
        .iter()
        .enumerate()
        .filter(|(_, v)| !v.is_empty())
        .map(|(i, v)| match names.get(i + 1).filter(|n| !n.is_empty()) {
            Some(name) => format!("{name}: {v}"),
            None => v.to_string(),
        })
        .collect();
    format!("{label} — {}", pairs.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentence_spans() {
        let t = "Một. Hai ba!\n\nBốn 1.5 năm?  Năm";
        let spans: Vec<String> = sentences(t).into_iter().map(|(s, e)| t.chars().skip(s).take(e - s).collect()).collect();
        assert_eq!(spans, vec!["Một.", "Hai ba!", "Bốn 1.5 năm?", "Năm"]);
    }

    #[test]
    fn wrapped_lines_stay_in_their_sentence() {
        let spans = |t: &str| -> Vec<String> { sentences(t).into_iter().map(|(s, e)| t.chars().skip(s).take(e - s).collect()).collect() };
        // A PDF's text layer: one paragraph over three lines.
        assert_eq!(
            spans("Doanh thu thuần đạt 1.245,6 tỷ đồng, tăng\n12,4% so với năm\n2022. Lợi nhuận tăng."),
            vec!["Doanh thu thuần đạt 1.245,6 tỷ đồng, tăng\n12,4% so với năm\n2022.", "Lợi nhuận tăng."]
        );
        assert_eq!(spans("revenue grew,\nand costs\nfell"), vec!["revenue grew,\nand costs\nfell"]);
        // Hard breaks: headings, table rows, list items, blank lines.
        assert_eq!(spans("Kết quả\nDoanh thu tăng"), vec!["Kết quả", "Doanh thu tăng"]);
        assert_eq!(spans("Chỉ tiêu | 2022\nTổng tài sản | 2.310,4"), vec!["Chỉ tiêu | 2022", "Tổng tài sản | 2.310,4"]);
        assert_eq!(spans("các bước\n1) mở\n2) đóng"), vec!["các bước", "1) mở", "2) đóng"]);
        assert_eq!(spans("một dòng\n\nhai dòng"), vec!["một dòng", "hai dòng"]);
    }

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
        // A lone row (no header above it) is quoted as it is.
        let lone = chunk_of("Intro.\n\n| Tổng tài sản | 2.310,4 |");
        assert_eq!(answer("tổng tài sản", &[lone], 3)[0].text, "| Tổng tài sản | 2.310,4 |");
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

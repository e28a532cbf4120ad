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
            Section { text: cit.text.clone(), source_ids: vec![chunk.chunk_id.clone()], citations: vec![cit] }
        })
        .collect()
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

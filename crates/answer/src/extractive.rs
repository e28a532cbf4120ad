//! Answers without a model: the retrieved chunks' sentences that share the
//! most words with the question, each cited with its exact span.

use std::collections::BTreeSet;

use crate::cite::citation;
use crate::{Section, SourceChunk};

/// Function words that say nothing about relevance (English, Vietnamese).
const STOPWORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "for", "by", "with", "and", "or", "is", "are", "was", "were", "be", "been",
    "what", "which", "who", "how", "why", "when", "where", "does", "do", "did", "it", "its", "this", "that", "as", "at",
    "from", "there", "any", "can", "about", "là", "của", "và", "có", "các", "những", "cho", "trong", "được", "với",
    "này", "gì", "nào", "bao", "nhiêu", "không", "một", "thì", "ở", "theo", "như", "về", "khi", "đã", "sẽ",
];

/// Sentence spans of `text`, in chars, trimmed of surrounding whitespace.
pub fn sentences(text: &str) -> Vec<(usize, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let end_here = c == '\n' || (matches!(c, '.' | '!' | '?' | '…' | '。') && chars.get(i + 1).is_none_or(|n| n.is_whitespace()));
        if end_here || i + 1 == chars.len() {
            let end = if c == '\n' { i } else { i + 1 };
            push_trimmed(&chars, start, end, &mut out);
            start = i + 1;
        }
        i += 1;
    }
    out
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
/// order. Empty when no sentence shares a content word with the question.
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
    let mut picked: Vec<(usize, usize, usize)> = Vec::new();
    for (_, ci, s, e, _) in scored {
        if picked.len() >= max_sections {
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
    fn picks_matching_sentences_with_exact_spans() {
        let content = "The cat sleeps. Revenue grew 12% in 2023. Costs fell.".to_string();
        let chunk = SourceChunk {
            chunk_id: "chunk-x".into(),
            document_id: "d".into(),
            char_start: 10,
            char_end: 10 + content.chars().count() as u64,
            content,
            filename: None,
            segments: vec![],
        };
        let s = answer("How much did revenue grow?", std::slice::from_ref(&chunk), 3);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].text, "Revenue grew 12% in 2023.");
        assert_eq!(s[0].citations[0].char_start, 10 + 16);
        assert!(answer("quantum chromodynamics", &[chunk], 3).is_empty());
    }
}

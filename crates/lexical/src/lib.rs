//! Lexical analysis shared by the indexer and the query side, so both see
//! the same terms.
//!
//! No stemming (it would mangle Vietnamese syllables); terms are lower-cased
//! NFC words with their diacritics kept. Each term with diacritics also
//! yields a folded variant (`~` prefix: "tăng" -> "~tang", "đồng" ->
//! "~dong") so a query typed without diacritics still matches, at a lower
//! weight decided by the ranker.

use std::collections::BTreeMap;

use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

/// Prefix of diacritic-folded variant terms.
pub const FOLDED_PREFIX: char = '~';
/// Longest term kept (longer tokens are noise: hashes, base64, ...).
pub const MAX_TERM_CHARS: usize = 40;

/// Lower-cased NFC words of `text`, in order (UAX #29 word boundaries).
pub fn words(text: &str) -> Vec<String> {
    let lowered: String = text.nfc().flat_map(char::to_lowercase).collect();
    lowered.unicode_words().filter(|w| w.chars().count() <= MAX_TERM_CHARS).map(str::to_string).collect()
}

/// Removes diacritics: NFD, drop combining marks, `đ` -> `d`.
pub fn fold(word: &str) -> String {
    word.nfd()
        .filter(|c| !is_combining(*c))
        .map(|c| match c {
            'đ' => 'd',
            'Đ' => 'D',
            other => other,
        })
        .collect()
}

fn is_combining(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F)
}

/// Terms of an indexed text with their frequencies: every word, and the
/// folded variant of every word that has diacritics.
pub fn document_terms(text: &str) -> (BTreeMap<String, u32>, u32) {
    let mut tf: BTreeMap<String, u32> = BTreeMap::new();
    let words = words(text);
    let len = words.len() as u32;
    for w in words {
        let folded = fold(&w);
        if folded != w {
            *tf.entry(format!("{FOLDED_PREFIX}{folded}")).or_default() += 1;
        }
        *tf.entry(w).or_default() += 1;
    }
    (tf, len)
}

/// A query term and how to match it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryTerm {
    /// The term as indexed.
    pub term: String,
    /// True for a folded variant (a query word without diacritics, or the
    /// folded form of one with diacritics).
    pub folded: bool,
}

/// Terms of a query: each word exactly, plus its folded variant, so
/// "doanh thu tang" finds "doanh thu tăng".
pub fn query_terms(query: &str) -> Vec<QueryTerm> {
    let mut out: Vec<QueryTerm> = Vec::new();
    for w in words(query) {
        let folded = format!("{FOLDED_PREFIX}{}", fold(&w));
        for t in [QueryTerm { term: w.clone(), folded: false }, QueryTerm { term: folded, folded: true }] {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vietnamese_words_keep_diacritics_and_fold() {
        let (tf, len) = document_terms("Doanh thu TĂNG 12,4%; đồng Việt Nam tăng.");
        assert_eq!(len, 8);
        assert_eq!(tf["tăng"], 2);
        assert_eq!(tf["~tang"], 2);
        assert_eq!(tf["~dong"], 1);
        assert_eq!(tf["đồng"], 1);
        assert_eq!(tf["12,4"], 1);
        assert!(!tf.contains_key("~doanh"), "words without diacritics have no folded twin");
        // Decomposed input is the same term.
        assert_eq!(words("vie\u{0323}\u{0302}t"), vec!["việt"]);
    }

    #[test]
    fn queries_match_with_or_without_diacritics() {
        let q: Vec<String> = query_terms("doanh thu tang").into_iter().map(|t| t.term).collect();
        assert!(q.contains(&"~tang".to_string()));
        let q: Vec<String> = query_terms("Tăng").into_iter().map(|t| t.term).collect();
        assert_eq!(q, vec!["tăng", "~tang"]);
        assert_eq!(fold("Đường"), "Duong");
    }
}

//! Lexical analysis shared by the indexer and the query side, so both see
//! the same terms.
//!
//! Terms are lower-cased NFC words with their diacritics kept. Each term
//! with diacritics also yields a folded variant (`~` prefix: "tăng" ->
//! "~tang", "đồng" -> "~dong") so a query typed without diacritics still
//! matches, at a lower weight decided by the ranker.
//!
//! English text ([`Analysis::English`], chosen per chunk and per query by
//! its detected language) also yields the Snowball stem of every word the
//! stemmer changes (`^` prefix: "proteins" -> "^protein"), so "protein"
//! meets "proteins". Vietnamese is never stemmed (the stemmer would mangle
//! its syllables). Stems are extra terms beside the words, never instead of
//! them: an index written before stems existed still answers every query,
//! its chunks just lack the stem matches until they are indexed again.

pub mod function_words;

use std::collections::BTreeMap;

use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

/// Prefix of diacritic-folded variant terms.
pub const FOLDED_PREFIX: char = '~';
/// Prefix of English stem variant terms.
pub const STEM_PREFIX: char = '^';
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

/// How a text's words are analysed, by its language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Analysis {
    /// Words and their folded variants (Vietnamese, and anything not
    /// English).
    Plain,
    /// Also the English stem of every word the stemmer changes.
    English,
}

static ENGLISH: std::sync::LazyLock<rust_stemmers::Stemmer> =
    std::sync::LazyLock::new(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English));

/// The Snowball English stem of a lower-cased ASCII word, when it differs
/// from the word ("proteins" -> "protein"; numbers and other scripts have
/// none).
pub fn english_stem(word: &str) -> Option<String> {
    if !word.bytes().all(|b| b.is_ascii_lowercase()) || word.len() < 3 {
        return None;
    }
    let stem = ENGLISH.stem(word);
    (stem != word).then(|| stem.into_owned())
}

/// Terms of an indexed text with their frequencies: every word, the
/// folded variant of every word that has diacritics, and with
/// [`Analysis::English`] the stem variant of every word that has one.
pub fn document_terms(text: &str, analysis: Analysis) -> (BTreeMap<String, u32>, u32) {
    let mut tf: BTreeMap<String, u32> = BTreeMap::new();
    let words = words(text);
    let len = words.len() as u32;
    for w in words {
        let folded = fold(&w);
        if folded != w {
            *tf.entry(format!("{FOLDED_PREFIX}{folded}")).or_default() += 1;
        }
        if analysis == Analysis::English {
            if let Some(stem) = english_stem(&w) {
                *tf.entry(format!("{STEM_PREFIX}{stem}")).or_default() += 1;
            }
        }
        *tf.entry(w).or_default() += 1;
    }
    (tf, len)
}

/// How a query term matches its word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// The word as written.
    Exact,
    /// Its folded variant (a query word without diacritics, or the folded
    /// form of one with diacritics).
    Folded,
    /// Its English stem: the stem variant of inflected indexed words, and
    /// the bare stem as a word.
    Stem,
}

/// A query term and how to match it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryTerm {
    /// The term as indexed.
    pub term: String,
    pub variant: Variant,
}

/// Terms of a query, word by word (a repeated word once): each word
/// exactly, plus its folded variant, so "doanh thu tang" finds "doanh thu
/// tăng"; with [`Analysis::English`] each word also matches through its
/// stem ("protein" finds "^protein" of "proteins"; "proteins" finds
/// "^protein" and "protein"). No word is dropped as a stopword: an
/// unaccented Vietnamese query ("the tin dung", "no xau") can look English,
/// and BM25's idf already makes frequent words weigh little.
pub fn query_terms(query: &str, analysis: Analysis) -> Vec<Vec<QueryTerm>> {
    let mut seen_words: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut out: Vec<Vec<QueryTerm>> = Vec::new();
    for w in words(query) {
        if !seen_words.insert(w.clone()) {
            continue;
        }
        let mut terms = vec![
            QueryTerm { term: w.clone(), variant: Variant::Exact },
            QueryTerm { term: format!("{FOLDED_PREFIX}{}", fold(&w)), variant: Variant::Folded },
        ];
        if analysis == Analysis::English {
            let stem = english_stem(&w).unwrap_or_else(|| w.clone());
            terms.push(QueryTerm { term: format!("{STEM_PREFIX}{stem}"), variant: Variant::Stem });
            if stem != w {
                terms.push(QueryTerm { term: stem, variant: Variant::Stem });
            }
        }
        out.push(terms);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vietnamese_words_keep_diacritics_and_fold() {
        let (tf, len) = document_terms("Doanh thu TĂNG 12,4%; đồng Việt Nam tăng.", Analysis::Plain);
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
        let terms = |q: &str| -> Vec<Vec<String>> {
            query_terms(q, Analysis::Plain).into_iter().map(|w| w.into_iter().map(|t| t.term).collect()).collect()
        };
        assert!(terms("doanh thu tang")[2].contains(&"~tang".to_string()));
        assert_eq!(terms("Tăng"), vec![vec!["tăng", "~tang"]]);
        assert_eq!(fold("Đường"), "Duong");
    }

    #[test]
    fn english_words_meet_their_inflections_through_stems() {
        let (tf, len) = document_terms("Proteins were measured; the protein binds.", Analysis::English);
        assert_eq!(len, 6);
        assert_eq!((tf["proteins"], tf["protein"], tf["^protein"]), (1, 1, 1), "{tf:?}");
        assert_eq!(tf["^measur"], 1);
        assert!(tf.contains_key("^bind") && !tf.contains_key("^the"), "{tf:?}");
        // Plain analysis (Vietnamese) has no stems.
        assert!(!document_terms("Proteins", Analysis::Plain).0.contains_key("^protein"));
        assert_eq!(english_stem("việt"), None);
        assert_eq!(english_stem("12"), None);

        let q = query_terms("What are the proteins?", Analysis::English);
        assert_eq!(q.len(), 4, "no word dropped: {q:?}");
        let terms: Vec<(&str, Variant)> = q[3].iter().map(|t| (t.term.as_str(), t.variant)).collect();
        assert_eq!(
            terms,
            vec![("proteins", Variant::Exact), ("~proteins", Variant::Folded), ("^protein", Variant::Stem), ("protein", Variant::Stem)]
        );
        // An unaccented Vietnamese query that looks English loses no word.
        assert_eq!(query_terms("the tin dung", Analysis::English).len(), 3);
        // A repeated word is one word; each word keeps its own exact term
        // even when another word's stem is that term.
        let q = query_terms("proteins protein protein", Analysis::English);
        assert_eq!(q.len(), 2);
        assert!(q[1].iter().any(|t| t.term == "protein" && t.variant == Variant::Exact));
        // "protein" reaches "^protein" (its own stem is itself).
        let q = query_terms("protein", Analysis::English);
        assert!(q[0].iter().any(|t| t.term == "^protein" && t.variant == Variant::Stem));
    }
}

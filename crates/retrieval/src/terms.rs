//! The lexical terms of a query, with their weights.

use crate::{detect_language, Language};

/// Weight of folded-variant matches (a query word typed without its
/// diacritics, or matched through its folded form) relative to exact ones.
pub const FOLDED_WEIGHT: f64 = 0.6;

/// Weight of stem-variant matches ("protein" meeting "proteins") relative
/// to exact ones; chosen on Cranfield and an English set (docs/performance.md).
pub const STEM_WEIGHT: f64 = 0.8;

/// A lexical query term: the indexed term, the index of the query word it
/// comes from, and its weight.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTerm {
    pub term: String,
    pub word: usize,
    pub weight: f64,
}

/// How a query is analysed: English for an English query, and when unsure
/// (stems only touch ASCII words, as extra variants); plain for a
/// Vietnamese one.
pub fn query_analysis(query: &str) -> rag_lexical::Analysis {
    match detect_language(query) {
        Language::Vi => rag_lexical::Analysis::Plain,
        Language::En | Language::Other => rag_lexical::Analysis::English,
    }
}

/// How an indexed chunk is analysed: English only when it is detected
/// English (a Vietnamese syllable typed without diacritics is never
/// stemmed).
pub fn document_analysis(text: &str) -> rag_lexical::Analysis {
    match detect_language(text) {
        Language::En => rag_lexical::Analysis::English,
        Language::Vi | Language::Other => rag_lexical::Analysis::Plain,
    }
}

/// Lexical terms of a query: each word exactly (weight 1), its folded
/// variant (weight [`FOLDED_WEIGHT`]) and for an English query its stem
/// (weight [`STEM_WEIGHT`]); the ranker keeps the best-matching term per
/// word so they never add up. A word the query repeats weighs as many
/// times as it is written (BM25's query term frequency, as Lucene and
/// bm25s count it): a long query (a paragraph, an argument) says what it
/// is about by what it repeats (ArguAna, docs/performance.md).
pub fn query_terms(query: &str) -> Vec<QueryTerm> {
    let mut out: Vec<QueryTerm> = Vec::new();
    let written = rag_lexical::words(query);
    for (word, terms) in rag_lexical::query_terms(query, query_analysis(query)).into_iter().enumerate() {
        // `terms[0]` is the word as written (rag_lexical lists it first).
        let times = terms.first().map_or(1, |exact| written.iter().filter(|w| **w == exact.term).count().max(1)) as f64;
        for t in terms {
            let weight = times
                * match t.variant {
                    rag_lexical::Variant::Exact => 1.0,
                    rag_lexical::Variant::Folded => FOLDED_WEIGHT,
                    rag_lexical::Variant::Stem => STEM_WEIGHT,
                };
            out.push(QueryTerm { term: t.term, word, weight });
        }
    }
    out
}

//! What an answer's own reading says about how sure it is, besides the
//! check: the model's probability that the evidence answers at all, its
//! token probabilities while writing, and how much of the question the
//! cited sentences hold. Recorded in the citation report; `decision.rs`
//! weighs them into the one answer-or-abstain score.

use crate::llm::TokenLogprobs;
use crate::Section;

/// The question's content words, folded: every word but the phrasing
/// (`rag_lexical::function_words`, where every word list lives).
pub use rag_lexical::function_words::content_words;

/// Share of the question's content words found in the sentences the
/// sections cite (folded, so marks and case do not matter); None when the
/// question has none or nothing is cited.
pub fn cited_coverage(question: &str, sections: &[Section]) -> Option<f64> {
    let wanted = content_words(question);
    let cited: std::collections::HashSet<String> =
        sections.iter().flat_map(|s| &s.citations).flat_map(|c| rag_lexical::words(&c.text)).map(|w| rag_lexical::fold(&w)).collect();
    if wanted.is_empty() || cited.is_empty() {
        return None;
    }
    Some(wanted.iter().filter(|w| cited.contains(*w)).count() as f64 / wanted.len() as f64)
}

/// Share of the question's consecutive word pairs ("tổng thống", "thống
/// hà", "hà lan") found as consecutive words in the sentences the sections
/// cite (folded): a passage on the same topic that answers a neighbouring
/// question holds the question's words but not its phrases ("Thủ tướng Hà
/// Lan" for "Tổng thống Hà Lan là ai"; "cầu thủ xuất sắc nhất trận chung
/// kết" for "... nhất World Cup"). Every pair counts, phrasing words
/// included ("cha của" is not "chồng của"). None when the question has
/// fewer than two words or nothing is cited. `cited`: the cited texts.
pub fn cited_phrase_coverage<'a>(question: &str, cited_texts: impl IntoIterator<Item = &'a str>) -> Option<f64> {
    let folded = |text: &str| -> Vec<String> { rag_lexical::words(text).iter().map(|w| rag_lexical::fold(w)).collect() };
    let asked = folded(question);
    let pairs: Vec<(&String, &String)> = asked.iter().zip(asked.iter().skip(1)).collect();
    let mut cited: std::collections::HashSet<(String, String)> = std::collections::HashSet::new();
    for text in cited_texts {
        let words = folded(text);
        cited.extend(words.iter().cloned().zip(words.iter().skip(1).cloned()));
    }
    if pairs.is_empty() || cited.is_empty() {
        return None;
    }
    Some(pairs.iter().filter(|(a, b)| cited.contains(&((*a).clone(), (*b).clone()))).count() as f64 / pairs.len() as f64)
}

/// The mean log-probability of the reply's tokens: how easily the model
/// wrote it. None without token probabilities.
pub fn mean_logprob(tokens: &[TokenLogprobs]) -> Option<f64> {
    let finite: Vec<f64> = tokens.iter().map(|t| t.logprob).filter(|l| l.is_finite()).collect();
    (!finite.is_empty()).then(|| finite.iter().sum::<f64>() / finite.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cited(text: &str) -> Section {
        crate::fixtures::section("x", vec![crate::fixtures::citation(text)])
    }

    #[test]
    fn coverage_counts_the_questions_content_words_in_the_cited_text() {
        let s = [cited("Giám đốc công ty là bà Nguyễn Thị Lan.")];
        assert_eq!(content_words("Ai là giám đốc công ty?"), ["giam", "doc", "cong", "ty"]);
        assert_eq!(cited_coverage("Ai là giám đốc công ty?", &s), Some(1.0));
        assert_eq!(cited_coverage("Giam doc sinh o dau?", &s), Some(2.0 / 3.0));
        assert_eq!(cited_coverage("Who is the director?", &s), Some(0.0));
        assert_eq!(cited_coverage("Ai là gì?", &s), None, "no content word");
        assert_eq!(cited_coverage("Ai là giám đốc?", &[]), None, "nothing cited");
    }

    #[test]
    fn phrase_coverage_counts_the_questions_word_pairs_in_the_cited_text() {
        let s = ["Thủ tướng Hà Lan Mark Rutte đạp xe đến gặp Đức vua."];
        // "tổng thống", "thống hà", "hà lan", "lan là", "là ai": one in five.
        assert_eq!(cited_phrase_coverage("Tổng thống Hà Lan là ai", s), Some(0.2));
        assert_eq!(cited_phrase_coverage("Thu tuong Ha Lan", s), Some(1.0), "folded");
        assert_eq!(cited_phrase_coverage("Rutte", s), None, "one word: no pair");
        assert_eq!(cited_phrase_coverage("Thủ tướng Hà Lan", []), None, "nothing cited");
    }

    #[test]
    fn mean_logprob_skips_tokens_without_one() {
        let t = |l: f64| TokenLogprobs { token: "a".into(), logprob: l, top_logprobs: vec![] };
        assert_eq!(mean_logprob(&[]), None);
        assert_eq!(mean_logprob(&[t(-1.0), t(f64::NEG_INFINITY), t(-3.0)]), Some(-2.0));
    }
}

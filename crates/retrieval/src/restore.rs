//! Diacritics restored to a Vietnamese question typed without them, from
//! the workspace's own text.
//!
//! The lexical side already matches "doanh thu nam 2023" to "doanh thu năm
//! 2023" through folded terms, but an embedder does not: e5 puts the
//! unaccented question far from its passage (nDCG@10 0.43 against 0.95
//! accented), and the answer's model reads it as broken text. The texts
//! that the lexical side found for the question are written in the
//! workspace's own Vietnamese, so they say which accented word each folded
//! word stands for, and in which context: "nam" next to "2023" is "năm",
//! next to "miền" it is "Nam". Each unaccented word takes the form those
//! texts use for it beside the question's neighbouring words (bigrams),
//! else the form they use for it alone, provided one form clearly wins; a
//! word they do not settle keeps its letters, and the share of words
//! settled tells the fusion how far to trust the restored question's
//! embedding.

use std::collections::{HashMap, HashSet};

use unicode_segmentation::UnicodeSegmentation;

use crate::syllable::is_vietnamese_syllable;
use crate::{detect_language, Language};

/// A question after restoration.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Restoration {
    /// The question with each settled word in its accented form, every
    /// other character as typed.
    pub text: String,
    /// Unaccented Vietnamese words looked at.
    pub words: usize,
    /// Of those, the ones the texts settled (restored, or confirmed as
    /// written: "thu" of "doanh thu" has no marks).
    pub settled: usize,
    /// Of those, the ones whose letters changed.
    pub restored: usize,
}

impl Restoration {
    /// Share of the looked-at words that the texts settled (1 when there
    /// were none).
    pub fn confidence(&self) -> f64 {
        if self.words == 0 {
            1.0
        } else {
            self.settled as f64 / self.words as f64
        }
    }
}

/// How often each form (or pair of forms) was seen.
type FormCounts<K> = HashMap<K, f64>;

/// Evidence a bigram gives is worth this many lone occurrences.
const BIGRAM_WEIGHT: f64 = 8.0;
/// The winning form must hold more than this share of the evidence for a
/// word to be settled (a strict majority).
const MIN_SHARE: f64 = 0.5;
/// Evidence (in lone occurrences) needed to settle a word at all.
const MIN_EVIDENCE: f64 = 2.0;

// Phrases questions ask with, folded and written
// (`rag_lexical::function_words`): seen beside each other `PHRASE_PRIOR`
// times in any workspace.
use rag_lexical::function_words::WRITTEN_QUESTION_PHRASES as QUESTION_PHRASES;
const PHRASE_PRIOR: f64 = 2.0;

// Frequent words of questions, folded and written in the form questions
// mostly mean (`rag_lexical::function_words`): a word the workspace's
// text shows no neighbour for leans to it by `WORD_PRIOR` occurrences.
use rag_lexical::function_words::WRITTEN_QUESTION_WORDS as QUESTION_WORDS;
const WORD_PRIOR: f64 = 5.0;

/// Whether `query` is Vietnamese typed without any mark: the only case
/// restored (a question with marks was typed with an input method, and
/// its unmarked words are meant so).
pub fn needs_restoration(query: &str) -> bool {
    if detect_language(query) != Language::Vi {
        return false;
    }
    let words = rag_lexical::words(query);
    words.iter().all(|w| rag_lexical::fold(w) == *w) && words.iter().any(|w| is_vietnamese_syllable(w))
}

/// One word of the question: where it is, and its folded lower-case form.
struct QueryWord<'q> {
    start: usize,
    token: &'q str,
    folded: String,
    /// An unaccented Vietnamese syllable: restorable.
    open: bool,
}

/// Restores `query`'s unaccented Vietnamese words from `texts` (the
/// workspace's passages the lexical side found for it, best first).
/// Returns the query unchanged, with `words` 0, when it has nothing to
/// restore.
pub fn restore_diacritics<'t>(query: &str, texts: impl IntoIterator<Item = &'t str>) -> Restoration {
    let words: Vec<QueryWord<'_>> = query
        .split_word_bound_indices()
        .filter(|(_, t)| t.chars().any(char::is_alphanumeric))
        .map(|(start, token)| {
            let lower = token.to_lowercase();
            let folded = rag_lexical::fold(&lower);
            let open = folded == lower && is_vietnamese_syllable(&lower);
            QueryWord { start, token, folded, open }
        })
        .collect();
    let open = words.iter().filter(|w| w.open).count();
    if open == 0 {
        return Restoration { text: query.to_string(), words: 0, settled: 0, restored: 0 };
    }
    let wanted: HashSet<&str> = words.iter().map(|w| w.folded.as_str()).collect();
    // The question's neighbouring pairs (a handful: looked up by scanning).
    let pairs: Vec<(&str, &str)> = words.windows(2).map(|p| (p[0].folded.as_str(), p[1].folded.as_str())).collect();
    // Forms seen alone, and beside each neighbouring pair of the question.
    let mut alone: HashMap<&str, HashMap<String, f64>> = HashMap::new();
    let mut beside: HashMap<(&str, &str), FormCounts<(String, String)>> = HashMap::new();
    for text in texts {
        let mut previous: Option<(String, String)> = None;
        for word in rag_lexical::words(text) {
            let folded = rag_lexical::fold(&word);
            let Some(&key) = wanted.get(folded.as_str()) else {
                previous = None;
                continue;
            };
            *alone.entry(key).or_default().entry(word.clone()).or_default() += 1.0;
            if let Some((prev_word, prev_folded)) = previous.take() {
                if let Some(&pair) = pairs.iter().find(|(a, b)| *a == prev_folded && *b == key) {
                    *beside.entry(pair).or_default().entry((prev_word, word.clone())).or_default() += 1.0;
                }
            }
            previous = Some((word, folded));
        }
    }
    // Questions ask with words their passages seldom hold ("bao nhiêu",
    // "ở đâu"): those phrases count as if seen beside each other.
    for (left, right, left_form, right_form) in QUESTION_PHRASES {
        if let Some(&pair) = pairs.iter().find(|(a, b)| a == left && b == right) {
            *beside.entry(pair).or_default().entry((left_form.to_string(), right_form.to_string())).or_default() += PHRASE_PRIOR;
        }
    }
    let mut text = String::with_capacity(query.len() + 16);
    let mut copied = 0;
    let (mut settled, mut restored) = (0, 0);
    for (i, w) in words.iter().enumerate() {
        if !w.open {
            continue;
        }
        // A neighbour typed with marks only counts beside its own form.
        let fixed = |j: usize| -> Option<String> { (!words[j].open).then(|| words[j].token.to_lowercase()) };
        // Bigram evidence first: a word's form beside its neighbours says
        // more than all its lone occurrences ("Việt Nam" once against "năm"
        // twenty times); only without any does the word alone count.
        let mut beside_evidence: HashMap<&str, f64> = HashMap::new();
        if i > 0 {
            let left = fixed(i - 1);
            for ((a, b), n) in beside.get(&(words[i - 1].folded.as_str(), w.folded.as_str())).into_iter().flatten() {
                if left.as_ref().is_none_or(|l| l == a) {
                    *beside_evidence.entry(b.as_str()).or_default() += BIGRAM_WEIGHT * n;
                }
            }
        }
        if i + 1 < words.len() {
            let right = fixed(i + 1);
            for ((a, b), n) in beside.get(&(w.folded.as_str(), words[i + 1].folded.as_str())).into_iter().flatten() {
                if right.as_ref().is_none_or(|r| r == b) {
                    *beside_evidence.entry(a.as_str()).or_default() += BIGRAM_WEIGHT * n;
                }
            }
        }
        let evidence = if beside_evidence.is_empty() {
            let mut alone_evidence: HashMap<&str, f64> = HashMap::new();
            for (form, n) in alone.get(w.folded.as_str()).into_iter().flatten() {
                *alone_evidence.entry(form.as_str()).or_default() += n;
            }
            if let Some((_, form)) = QUESTION_WORDS.iter().find(|(folded, _)| *folded == w.folded) {
                *alone_evidence.entry(form).or_default() += WORD_PRIOR;
            }
            alone_evidence
        } else {
            beside_evidence
        };
        let total: f64 = evidence.values().sum();
        // Ties broken by the form itself, so the result never depends on a
        // hash map's order.
        let best = evidence.iter().max_by(|a, b| a.1.total_cmp(b.1).then_with(|| b.0.cmp(a.0)));
        let Some((form, n)) = best else { continue };
        if total < MIN_EVIDENCE || *n / total <= MIN_SHARE {
            continue;
        }
        settled += 1;
        if *form == w.token.to_lowercase() {
            continue;
        }
        restored += 1;
        text.push_str(&query[copied..w.start]);
        text.push_str(&with_case_of(form, w.token));
        copied = w.start + w.token.len();
    }
    text.push_str(&query[copied..]);
    Restoration { text, words: open, settled, restored }
}

/// `form` (lower case) written with `typed`'s capitals: "Ha" -> "Hà",
/// "HA NOI" -> "HÀ NỘI".
fn with_case_of(form: &str, typed: &str) -> String {
    let mut typed_letters = typed.chars().filter(|c| c.is_alphabetic());
    let all_upper = typed.chars().count() > 1 && typed.chars().filter(|c| c.is_alphabetic()).all(char::is_uppercase);
    if all_upper {
        return form.to_uppercase();
    }
    if typed_letters.next().is_some_and(char::is_uppercase) {
        let mut chars = form.chars();
        return chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default();
    }
    form.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXTS: &[&str] = &[
        "Doanh thu thuần năm 2023 đạt 1.245,6 tỷ đồng, tăng 12,4% so với năm 2022.",
        "Lợi nhuận sau thuế năm 2023 đạt 187,3 tỷ đồng.",
        "Chi nhánh miền Nam có doanh thu cao nhất.",
        "Nhân viên nam và nữ được nghỉ phép như nhau.",
    ];

    #[test]
    fn words_take_the_form_their_neighbours_have_in_the_texts() {
        let r = restore_diacritics("Doanh thu nam 2023 tang bao nhieu?", TEXTS.iter().copied());
        // "tăng" once alone is too little: kept as typed; "bao nhieu" is
        // not in the texts, but questions ask with it.
        assert_eq!(r.text, "Doanh thu năm 2023 tang bao nhiêu?");
        assert_eq!((r.words, r.restored), (6, 2));
        assert_eq!(r.settled, 5, "doanh, thu (as written), năm, bao nhiêu: {r:?}");
        // Beside its neighbour once, a word is settled.
        let r = restore_diacritics("Doanh thu nam 2023 tang 12,4% bao nhieu?", TEXTS.iter().copied());
        assert_eq!(r.text, "Doanh thu năm 2023 tăng 12,4% bao nhiêu?");
        // A text's pair outweighs a frequent word's lone form.
        let r = restore_diacritics("xuat khau gao viet nam", ["Năm nay, năm sau, năm 2023: xuất khẩu gạo của Việt Nam tăng."]);
        assert_eq!(r.text, "xuất khẩu gạo việt nam");
        // The same folded word beside another neighbour.
        let r = restore_diacritics("doanh thu mien nam", TEXTS.iter().copied());
        assert_eq!(r.text, "doanh thu miền nam");
    }

    #[test]
    fn a_word_the_texts_disagree_on_is_kept() {
        // "tien": "tiền" twice, "tiến" twice: without a neighbour to tell
        // them apart, not settled.
        let r = restore_diacritics("tien", ["Tiền lương và tiền thưởng.", "Tiến độ.", "Tiến sĩ."]);
        assert_eq!((r.text.as_str(), r.settled, r.words), ("tien", 0, 1));
        assert!(r.confidence() < 0.01);
    }

    #[test]
    fn capitals_and_other_characters_are_kept() {
        let texts = ["Hà Nội là thủ đô. Thời tiết Hà Nội hôm nay."];
        let r = restore_diacritics("THOI TIET Ha Noi (hom nay)?", texts);
        assert_eq!(r.text, "THỜI TIẾT Hà Nội (hôm nay)?");
        assert_eq!(with_case_of("đồng", "Dong"), "Đồng");
    }

    #[test]
    fn questions_with_marks_or_in_english_are_left_alone() {
        assert!(needs_restoration("doanh thu nam 2023 la bao nhieu"));
        assert!(!needs_restoration("doanh thu năm 2023 là bao nhiêu"));
        assert!(!needs_restoration("What was the revenue in 2023?"));
        let r = restore_diacritics("What was the revenue?", TEXTS.iter().copied());
        assert_eq!((r.text.as_str(), r.words), ("What was the revenue?", 1), "only \"the\" is a syllable: {r:?}");
    }
}

//! The function words the engine reads questions and sections with (the
//! phrasing of a question, its question words and auxiliaries, joining
//! words, negations, and diacritic restoration's priors), in one place, so
//! a word added for one reader is seen beside the others: four files kept
//! lists of their own before, and they drifted (the extractive answer's
//! holds "là", "của" with their marks only, so a question typed without
//! them keeps "la", "cua" as content words; kept so, as measured in
//! [`EXTRACTIVE_IGNORED`]). Phrases that join the parts of a question
//! (`rag_answer::parts`) and the instruction rules' own patterns
//! (`rag_answer::injection`) stay with the one rule that reads them.
//!
//! The search index uses none of them: it keeps every word (see
//! [`crate::query_terms`]), and BM25's weights do what a stop-word list
//! would. Folded lists hold words as [`crate::fold`] writes them; marked
//! lists are compared with their marks, where folding would confuse two
//! words ("mấy" how many, "máy" a machine; "chưa" not yet, "chùa" a pagoda).

use std::collections::HashSet;
use std::sync::OnceLock;

use crate::fold;

/// Vietnamese words a question is phrased with rather than about, with
/// their marks: "Ai là giám đốc?" is about "giám đốc" only. Folded
/// ([`is_phrasing`]), what the answer's signals, the figure check and the
/// support rule leave out of a question's or a section's own words; as
/// written ([`is_phrasing_as_written`]), a word with marks compared with
/// them.
pub const PHRASING_VI: &[&str] = &[
    "ai", "gì", "nào", "đâu", "bao", "nhiêu", "mấy", "sao", "thế", "là", "có", "không", "của", "và", "các", "những", "một", "được", "bị",
    "ở", "tại", "trong", "từ", "đến", "cho", "với", "về", "như", "này", "đó", "do", "đã", "đang", "sẽ", "thì", "mà", "khi", "lúc", "năm",
    "ngày", "tháng", "hay", "hoặc", "còn", "vào", "ra", "lên", "bởi", "vì", "theo", "trên", "dưới",
];
/// English words a question is phrased with rather than about.
pub const PHRASING_EN: &[&str] = &[
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "many", "much", "the", "a", "an", "of", "in", "on", "at", "to",
    "for", "from", "by", "with", "and", "or", "is", "are", "was", "were", "be", "been", "do", "does", "did", "has", "have", "had", "it",
    "its", "that", "this", "these", "those", "as", "into", "than", "there", "their", "they", "he", "she", "his", "her", "year", "s",
];

/// Both phrasing lists, folded: folded, "đó" and "do" are one word, "thế"
/// and "the" another.
fn phrasing_folded() -> &'static HashSet<String> {
    static FOLDED: OnceLock<HashSet<String>> = OnceLock::new();
    FOLDED.get_or_init(|| PHRASING_VI.iter().chain(PHRASING_EN).map(|w| fold(w)).collect())
}

/// Joining words that carry no fact of their own and fold to no other
/// word (folded): with the phrasing, what a section's own words leave out.
/// ("ba", "hôn", "cùng" are not here: folded they are also "bà", "hơn",
/// "cũng"; a reviewer caught them as filler once.)
pub const JOINING: &[&str] = &["rat", "also", "but"];

/// Words of how a person asks in English ("Can I ...", "anything about
/// my ..."), folded: left out of the question's terms by the extractive
/// answer, which has no model to read past them.
pub const ASKING_EN: &[&str] = &["about", "any", "can", "i", "my"];

/// The words the extractive answer (no model: it matches words and
/// nothing else) leaves out of a question and of each evidence unit, as
/// written or folded: a subset of the phrasing and [`ASKING_EN`] (tested).
/// Narrower than the phrasing on purpose: with the whole phrasing, the
/// units of time ("bao nhiêu tháng?") and the words folding to a phrasing
/// word ("bảo" to "bao") left its questions fewer words to match, and on
/// `eval/vi-dev` it answered 2 more of the 22 unanswerable questions and 2
/// fewer of the 56 answerable ones inside a citation (2026-12-01).
pub const EXTRACTIVE_IGNORED: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "for", "by", "with", "and", "or", "is", "are", "was", "were", "be", "been", "what", "which",
    "who", "how", "why", "when", "where", "does", "do", "did", "it", "its", "this", "that", "as", "at", "from", "there", "any", "can",
    "about", "là", "của", "và", "có", "các", "những", "cho", "trong", "được", "với", "này", "gì", "nào", "bao", "nhiêu", "không", "một",
    "thì", "ở", "theo", "như", "về", "khi", "đã", "sẽ", "much", "many", "i", "my", "mấy", "đâu", "sao", "thế",
];

/// Vietnamese question words, with their marks: a clause with one asks
/// something ("không" asks only at a clause's end, so it is not here).
pub const INTERROGATIVES_VI: &[&str] = &["ai", "gì", "nào", "đâu", "bao nhiêu", "bao giờ", "bao lâu", "mấy", "sao", "thế nào"];
/// English question words.
pub const INTERROGATIVES_EN: &[&str] = &["what", "who", "whom", "whose", "when", "where", "which", "why", "how"];
/// English auxiliaries that open a yes/no question ("Is it open ...?").
pub const AUXILIARIES_EN: &[&str] = &["is", "are", "was", "were", "do", "does", "did", "can"];
/// English auxiliaries of the perfect ("How many ... has it had"), which
/// follow a question word as the others do.
pub const PERFECT_EN: &[&str] = &["has", "have", "had"];
/// English words of quantity that follow "how" ("How much did ...").
pub const QUANTITY_EN: &[&str] = &["much", "many"];

/// Words that say no, with their marks ("chưa" is "not yet", "chùa" a
/// pagoda); an English word ending in "n't" says no as well.
pub const NEGATIONS: &[&str] = &["not", "no", "never", "cannot", "không", "chưa", "chẳng"];

/// Frequent words of Vietnamese questions, folded and in the written form
/// questions mostly mean: the priors of diacritic restoration
/// (`rag_retrieval::restore`) for a word the workspace's text shows no
/// neighbour for.
pub const WRITTEN_QUESTION_WORDS: &[(&str, &str)] = &[
    ("nao", "nào"),
    ("may", "mấy"),
    ("gi", "gì"),
    ("khong", "không"),
    ("duoc", "được"),
    ("cua", "của"),
    ("la", "là"),
    ("co", "có"),
    ("nhieu", "nhiều"),
    ("nhat", "nhất"),
    ("voi", "với"),
    ("thi", "thì"),
    ("o", "ở"),
    ("ve", "về"),
    ("mot", "một"),
    ("cac", "các"),
    ("nhu", "như"),
    ("de", "để"),
    ("den", "đến"),
    ("tu", "từ"),
    ("tren", "trên"),
    ("duoi", "dưới"),
    ("truoc", "trước"),
    ("ngoai", "ngoài"),
    ("dang", "đang"),
    ("da", "đã"),
    ("se", "sẽ"),
    ("cung", "cũng"),
    ("nguoi", "người"),
    ("nam", "năm"),
    ("ngay", "ngày"),
    ("thang", "tháng"),
];

/// Phrases Vietnamese questions ask with, folded and written (left, right,
/// left written, right written): restoration's priors for word pairs.
pub const WRITTEN_QUESTION_PHRASES: &[(&str, &str, &str, &str)] = &[
    ("bao", "nhieu", "bao", "nhiêu"),
    ("bao", "lau", "bao", "lâu"),
    ("bao", "gio", "bao", "giờ"),
    ("the", "nao", "thế", "nào"),
    ("nhu", "the", "như", "thế"),
    ("vi", "sao", "vì", "sao"),
    ("tai", "sao", "tại", "sao"),
    ("khi", "nao", "khi", "nào"),
    ("o", "dau", "ở", "đâu"),
    ("la", "gi", "là", "gì"),
    ("la", "ai", "là", "ai"),
    ("lam", "gi", "làm", "gì"),
    ("may", "gio", "mấy", "giờ"),
    ("viet", "nam", "việt", "nam"),
];

/// Whether a folded word is, folded, one a question is phrased with
/// ([`PHRASING_VI`], [`PHRASING_EN`]): "den" is, as "đến" folds to it,
/// though "đèn" (a lamp) does too.
pub fn is_phrasing(folded: &str) -> bool {
    phrasing_folded().contains(folded)
}

/// Whether a lower-cased word, as written, is phrasing: a word with marks
/// is compared with its marks ("đèn" is not "đến"), one without them
/// folded (a question typed without marks, or English).
pub fn is_phrasing_as_written(word: &str) -> bool {
    let folded = fold(word);
    if folded == word {
        is_phrasing(word)
    } else {
        PHRASING_VI.contains(&word)
    }
}

/// Whether a folded word carries no fact of a section's own: phrasing or
/// joining ([`JOINING`]).
pub fn is_filler(folded: &str) -> bool {
    is_phrasing(folded) || JOINING.contains(&folded)
}

/// Whether a lower-cased word (with its marks) says no.
pub fn is_negation(word: &str) -> bool {
    NEGATIONS.contains(&word) || word.ends_with("n't")
}

/// The content words of `text`, folded, each once, in order: every word
/// but the phrasing ([`is_phrasing`]).
pub fn content_words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in crate::words(text) {
        let f = fold(&w);
        if !is_phrasing(&f) && !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_lists_are_folded_and_hold_each_word_once() {
        for (name, list) in [("PHRASING_EN", PHRASING_EN), ("JOINING", JOINING), ("ASKING_EN", ASKING_EN)] {
            for (i, w) in list.iter().enumerate() {
                assert_eq!(fold(w), *w, "{name}: {w} is not folded");
                assert!(!list[..i].contains(w), "{name}: {w} twice");
            }
        }
        for (folded, written) in WRITTEN_QUESTION_WORDS {
            assert_eq!(fold(written), *folded, "{written}");
        }
        for (l, r, lw, rw) in WRITTEN_QUESTION_PHRASES {
            assert_eq!((fold(lw), fold(rw)), (l.to_string(), r.to_string()), "{lw} {rw}");
        }
    }

    #[test]
    fn the_folded_phrasing_is_the_one_the_answer_signals_were_fitted_with() {
        // The decision's signals (cited coverage) were calibrated with this
        // folded set: a change to it is a change to the answer path.
        let mut folded: Vec<&String> = phrasing_folded().iter().collect();
        folded.sort();
        let mut pinned = vec![
            "ai", "gi", "nao", "dau", "bao", "nhieu", "may", "sao", "the", "la", "co", "khong", "cua", "va", "cac", "nhung", "mot", "duoc",
            "bi", "o", "tai", "trong", "tu", "den", "cho", "voi", "ve", "nhu", "nay", "do", "da", "dang", "se", "thi", "ma", "khi", "luc",
            "nam", "ngay", "thang", "hay", "hoac", "con", "vao", "ra", "len", "boi", "vi", "theo", "tren", "duoi", "what", "which", "who",
            "whom", "whose", "when", "where", "why", "how", "many", "much", "a", "an", "of", "in", "on", "at", "to", "for", "from", "by",
            "with", "and", "or", "is", "are", "was", "were", "be", "been", "does", "did", "has", "have", "had", "it", "its", "that",
            "this", "these", "those", "as", "into", "than", "there", "their", "they", "he", "she", "his", "her", "year", "s",
        ];
        pinned.sort();
        assert_eq!(folded, pinned);
        for w in PHRASING_VI {
            assert!(is_phrasing_as_written(w), "{w}");
        }
        assert!(!is_phrasing_as_written("đèn") && is_phrasing_as_written("den") && !is_phrasing_as_written("chợ"));
    }

    #[test]
    fn joining_words_fold_to_no_other_word_of_a_question() {
        // A joining word is filler only because nothing else folds to it.
        for w in JOINING {
            assert!(!is_phrasing(w) && !WRITTEN_QUESTION_WORDS.iter().any(|(f, _)| f == w), "{w}");
        }
    }

    #[test]
    fn every_question_word_is_phrasing_once_folded() {
        // Single-word interrogatives and auxiliaries read as phrasing too
        // (the extractive answer and the signals agree on what a question
        // is about); the two-word ones' first word at least.
        for w in INTERROGATIVES_VI.iter().chain(INTERROGATIVES_EN).chain(QUANTITY_EN).chain(PERFECT_EN) {
            let first = w.split(' ').next().unwrap_or(w);
            assert!(is_phrasing(&fold(first)), "{w}");
        }
        for w in AUXILIARIES_EN {
            assert!(is_phrasing(w) || ASKING_EN.contains(w), "{w}");
        }
        for w in EXTRACTIVE_IGNORED {
            assert!(is_phrasing_as_written(w) || ASKING_EN.contains(w), "{w}");
        }
    }

    #[test]
    fn content_words_drop_phrasing_with_or_without_marks() {
        assert_eq!(content_words("Ai là giám đốc của công ty?"), ["giam", "doc", "cong", "ty"]);
        assert_eq!(content_words("ai la giam doc cua cong ty"), ["giam", "doc", "cong", "ty"]);
        assert_eq!(content_words("Who is the director of the company?"), ["director", "company"]);
        assert!(is_negation("không") && is_negation("isn't") && !is_negation("chùa"));
        assert!(is_filler("rat") && !is_filler("ba"));
    }
}

//! Retrieval logic without I/O: what the query side decides.
//!
//! - [`detect_language`]: Vietnamese, English (or other ASCII Latin) or other.
//! - [`fuse`]: the lexical and dense candidates combined by their
//!   normalised scores, weighted by the query's language against the
//!   candidates' and by how much of the query the lexical side matched;
//!   aware of what the embedder understands (all-MiniLM-L6-v2 is
//!   English-only and strips diacritics, so on Vietnamese its neighbours
//!   are noise: dense hits count only when both the query and the chunk
//!   are in a language the embedder reads; when the query is not, the
//!   fused list is exactly the lexical one).
//! - [`query_terms`]: the lexical terms of a query with their weights.
//! - [`metrics`]: nDCG@k, Recall@k, MRR@k for `eval retrieval`.

pub mod metrics;

use std::collections::HashMap;

use serde::Serialize;
use unicode_normalization::UnicodeNormalization;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Vi,
    /// English, or any text written in plain ASCII Latin letters.
    En,
    Other,
}

impl Language {
    pub fn code(self) -> &'static str {
        match self {
            Language::Vi => "vi",
            Language::En => "en",
            Language::Other => "other",
        }
    }
}

/// Letters that occur in Vietnamese and in no common Western language
/// (tone-marked vowels, ă, ơ, ư, đ).
fn is_vietnamese_letter(c: char) -> bool {
    const VI: &str = "ăâđêôơưàảãáạằẳẵắặầẩẫấậèẻẽéẹềểễếệìỉĩíịòỏõóọồổỗốộờởỡớợùủũúụừửữứựỳỷỹýỵ";
    let lower = c.to_lowercase().next().unwrap_or(c);
    // â, ê, ô, à, á, è, é, ì, í, ò, ó, ù, ú, ý also occur in French and
    // others: only the unambiguous ones decide alone.
    matches!(
        lower,
        'ă' | 'đ'
            | 'ơ'
            | 'ư'
            | 'ả'
            | 'ã'
            | 'ạ'
            | 'ẻ'
            | 'ẽ'
            | 'ẹ'
            | 'ỉ'
            | 'ĩ'
            | 'ị'
            | 'ỏ'
            | 'õ'
            | 'ọ'
            | 'ủ'
            | 'ũ'
            | 'ụ'
            | 'ỳ'
            | 'ỷ'
            | 'ỹ'
            | 'ỵ'
    ) || (VI.contains(lower) && !"âêôàáèéìíòóùúý".contains(lower))
}

/// Frequent Vietnamese syllables (diacritics folded) that are not English
/// words: they recognise Vietnamese typed without diacritics.
const VI_SYLLABLES: &[&str] = &[
    "doanh", "nhieu", "nhuan", "khong", "duoc", "nhung", "cua", "cac", "voi", "nay", "mot", "tang", "giam", "thoi", "tiet", "noi", "hom",
    "ngay", "thang", "chinh", "cong", "loi", "von", "gia", "xang", "bao", "thu", "quy", "viet", "nguoi", "nuoc", "nghiep", "tien", "nhat",
    "trong", "cho", "nhu", "khi", "theo", "dong", "bang", "tuc", "xuat", "khau", "gao", "ngap", "lut", "chia", "rui", "phong", "ngua",
    "sau", "thue", "vay", "hang", "truong", "dien",
];

/// The language of a text: Vietnamese when at least a fifth of its words
/// look Vietnamese (a Vietnamese-only letter, a frequent Vietnamese
/// syllable even without diacritics, or, half as strong, a letter Vietnamese
/// shares with French and others), provided one clear sign is there;
/// English/ASCII Latin when at least four letters in five are ASCII; other
/// otherwise.
pub fn detect_language(text: &str) -> Language {
    let mut signs = LanguageSigns::default();
    // Retrieval asks this of every candidate chunk: ASCII words (most of
    // them) are looked up without allocating, and NFC text is not copied.
    let normalised: std::borrow::Cow<'_, str> = match unicode_normalization::is_nfc_quick(text.chars()) {
        unicode_normalization::IsNormalized::Yes => std::borrow::Cow::Borrowed(text),
        _ => std::borrow::Cow::Owned(text.nfc().collect()),
    };
    for word in normalised.split(|c: char| !c.is_alphabetic()).filter(|w| !w.is_empty()) {
        if word.is_ascii() {
            // Folding and lower-casing an ASCII word is lower-casing it.
            signs.words += 1;
            signs.letters += word.len();
            signs.ascii += word.len();
            let mut buf = [0u8; 16];
            if word.len() <= buf.len() {
                let lower = &mut buf[..word.len()];
                lower.copy_from_slice(word.as_bytes());
                lower.make_ascii_lowercase();
                if VI_SYLLABLES.iter().any(|s| s.as_bytes() == &*lower) {
                    signs.clear += 1;
                    signs.score += 1.0;
                }
            }
            continue;
        }
        signs.add_word(word);
    }
    signs.verdict()
}

/// What [`detect_language`] counts over a text's words.
#[derive(Default)]
struct LanguageSigns {
    words: usize,
    /// Words with a clear Vietnamese sign.
    clear: usize,
    score: f64,
    letters: usize,
    ascii: usize,
}

impl LanguageSigns {
    /// One word (NFC), any script.
    fn add_word(&mut self, word: &str) {
        self.words += 1;
        let lower = word.to_lowercase();
        let folded = rag_lexical::fold(&lower);
        if word.chars().any(is_vietnamese_letter) || VI_SYLLABLES.contains(&folded.as_str()) {
            self.clear += 1;
            self.score += 1.0;
        } else if lower.chars().any(|c| !c.is_ascii() && "âêôàáèéìíòóùúý".contains(c)) {
            self.score += 0.5;
        }
        for c in word.chars() {
            self.letters += 1;
            if c.is_ascii_alphabetic() {
                self.ascii += 1;
            }
        }
    }

    fn verdict(&self) -> Language {
        if self.words == 0 {
            Language::Other
        } else if self.clear > 0 && self.score * 5.0 >= self.words as f64 {
            Language::Vi
        } else if self.ascii * 5 >= self.letters * 4 {
            Language::En
        } else {
            Language::Other
        }
    }
}

/// Languages the embedder's vectors are meaningful for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedderLanguages {
    All,
    Only(Vec<Language>),
}

/// A language code [`EmbedderLanguages::parse`] does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownLanguage(pub String);

impl std::fmt::Display for UnknownLanguage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown language {:?} (vi, en, other or *)", self.0)
    }
}

impl std::error::Error for UnknownLanguage {}

impl EmbedderLanguages {
    /// `*` or a comma-separated list of `vi`, `en`, `other`.
    pub fn parse(spec: &str) -> Result<Self, UnknownLanguage> {
        let spec = spec.trim();
        if spec == "*" || spec.eq_ignore_ascii_case("all") {
            return Ok(EmbedderLanguages::All);
        }
        let mut langs = Vec::new();
        for code in spec.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            langs.push(match code {
                "vi" => Language::Vi,
                "en" => Language::En,
                "other" => Language::Other,
                other => return Err(UnknownLanguage(other.to_string())),
            });
        }
        Ok(EmbedderLanguages::Only(langs))
    }

    pub fn understands(&self, lang: Language) -> bool {
        match self {
            EmbedderLanguages::All => true,
            EmbedderLanguages::Only(l) => l.contains(&lang),
        }
    }
}

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
/// word so they never add up.
pub fn query_terms(query: &str) -> Vec<QueryTerm> {
    let mut out: Vec<QueryTerm> = Vec::new();
    for (word, terms) in rag_lexical::query_terms(query, query_analysis(query)).into_iter().enumerate() {
        for t in terms {
            let weight = match t.variant {
                rag_lexical::Variant::Exact => 1.0,
                rag_lexical::Variant::Folded => FOLDED_WEIGHT,
                rag_lexical::Variant::Stem => STEM_WEIGHT,
            };
            out.push(QueryTerm { term: t.term, word, weight });
        }
    }
    out
}

/// One side's candidate as the fusion sees it: the chunk, its score on
/// that side (BM25 or cosine) and the chunk's language.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub id: String,
    pub score: f64,
    pub language: Language,
}

/// A fused result: ranks are 1-based positions in each input list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fused {
    pub id: String,
    pub score: f64,
    pub lexical_rank: Option<usize>,
    pub dense_rank: Option<usize>,
}

/// What the fusion knew about a query and made of it (in a search's and an
/// answer's metadata, so a ranking can be explained).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FusionDecision {
    /// Share of the dense candidates (the query's neighbourhood in the
    /// workspace) written in the query's language: what the lexical side
    /// can match at all.
    pub same_language_share: f64,
    /// Share of the dense candidates in a language the embedder reads:
    /// what the dense side can rank at all.
    pub readable_share: f64,
    /// Share of the query's words the best lexical hit holds.
    pub lexical_coverage: f64,
    /// Weight of the dense side (the lexical side has `1 - dense_share`,
    /// times `lexical_coverage`).
    pub dense_share: f64,
}

/// Share of `query`'s distinct words (diacritics folded) found in `text`:
/// how much of the question a lexical hit actually matched.
pub fn query_coverage(query: &str, text: &str) -> f64 {
    let folded = |t: &str| -> std::collections::HashSet<String> { rag_lexical::words(t).iter().map(|w| rag_lexical::fold(w)).collect() };
    let wanted = folded(query);
    if wanted.is_empty() {
        return 0.0;
    }
    let have = folded(text);
    wanted.iter().filter(|w| have.contains(*w)).count() as f64 / wanted.len() as f64
}

/// Hybrid fusion: a convex combination of each side's normalised scores,
/// weighted by what is known at query time. Reciprocal rank fusion (what
/// this replaced) lets any lexical hit that the dense side also ranks near
/// the top beat the dense side's best, however weakly it matched: an
/// English question about Vietnamese passages got the English passages
/// sharing one word with it first (e5 dense 0.969, RRF hybrid 0.730 on
/// eval/vi-dev; docs/performance.md has the comparison).
///
/// - **Languages.** The lexical side can only match text in the query's
///   language, the dense side only text its embedder reads; the dense
///   candidates sample the workspace around the query. With `s` the share
///   of them in the query's language and `r` the share the embedder
///   reads, the dense side weighs `a·r / (a·r + (1 - a)·s)`, where `a =
///   dense_weight / (1 + dense_weight)` (one half by default): a query in
///   the workspace's own language splits evenly, a cross-lingual one is
///   ranked by a multilingual dense side.
/// - **Matched terms.** The lexical side's weight is scaled by the share of
///   the query's words its best hit holds (`lexical_top_coverage`): a best
///   hit matching one word in eight is weak evidence whatever its rank.
/// - **Score gaps.** Each side's scores are normalised, not ranked: BM25 by
///   the best hit's score, cosines min-max over all the dense candidates.
///   A clear winner on one side keeps its lead; near-ties stay near.
///
/// Dense hits on chunks in a language the embedder does not read are
/// dropped, and none count when the query's language is not read: then the
/// fused list is exactly the lexical one. Ties keep lexical-first order.
pub fn fuse(
    lexical: &[Candidate],
    lexical_top_coverage: f64,
    dense: &[Candidate],
    query_language: Language,
    embedder: &EmbedderLanguages,
    dense_weight: f64,
) -> (Vec<Fused>, FusionDecision) {
    let dense_on = embedder.understands(query_language) && dense_weight > 0.0 && !dense.is_empty();
    let share = |keep: &dyn Fn(&Candidate) -> bool| -> f64 {
        if dense.is_empty() {
            1.0
        } else {
            dense.iter().filter(|c| keep(c)).count() as f64 / dense.len() as f64
        }
    };
    let same_language_share = share(&|c| c.language == query_language);
    let readable_share = share(&|c| embedder.understands(c.language));
    // Never zero: with the dense side off, the lexical order must survive.
    let lexical_coverage = lexical_top_coverage.clamp(0.0, 1.0).max(0.01);
    let dense_share = if !dense_on {
        0.0
    } else if lexical.is_empty() {
        1.0
    } else {
        // Each side weighs what it can see: the lexical side the text in
        // the query's language, the dense side the text its embedder reads.
        let base = dense_weight / (1.0 + dense_weight);
        let (dense_sees, lexical_sees) = (base * readable_share, (1.0 - base) * same_language_share);
        if dense_sees + lexical_sees > 0.0 {
            dense_sees / (dense_sees + lexical_sees)
        } else {
            base
        }
    };
    let decision = FusionDecision { same_language_share, readable_share, lexical_coverage, dense_share };
    let mut by_id: HashMap<&str, Fused> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    let lexical_top = lexical.iter().map(|c| c.score).fold(f64::MIN, f64::max);
    for (i, c) in lexical.iter().enumerate() {
        if by_id.contains_key(c.id.as_str()) {
            continue;
        }
        let normalised = if lexical_top > 0.0 { c.score / lexical_top } else { 1.0 };
        order.push(&c.id);
        by_id.insert(
            &c.id,
            Fused {
                id: c.id.clone(),
                score: (1.0 - dense_share) * lexical_coverage * normalised,
                lexical_rank: Some(i + 1),
                dense_rank: None,
            },
        );
    }
    if dense_on {
        // Scaled over every candidate, readable or not: the neighbourhood's
        // spread is the measure of a gap, and a handful of readable chunks
        // must not be stretched over the whole range.
        let top = dense.iter().map(|c| c.score).fold(f64::MIN, f64::max);
        let bottom = dense.iter().map(|c| c.score).fold(f64::MAX, f64::min);
        let usable = dense.iter().filter(|c| embedder.understands(c.language));
        for (i, c) in usable.enumerate() {
            let normalised = if top > bottom { (c.score - bottom) / (top - bottom) } else { 1.0 };
            let add = dense_share * normalised;
            match by_id.get_mut(c.id.as_str()) {
                Some(f) if f.dense_rank.is_none() => {
                    f.score += add;
                    f.dense_rank = Some(i + 1);
                }
                Some(_) => {}
                None => {
                    order.push(&c.id);
                    by_id.insert(&c.id, Fused { id: c.id.clone(), score: add, lexical_rank: None, dense_rank: Some(i + 1) });
                }
            }
        }
    }
    let mut out: Vec<Fused> = order.into_iter().filter_map(|id| by_id.remove(id)).collect();
    // Stable: equal scores keep lexical-first order.
    out.sort_by(|a, b| b.score.partial_cmp(&a.score).unwrap_or(std::cmp::Ordering::Equal));
    (out, decision)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages() {
        assert_eq!(detect_language("Doanh thu thuần năm 2023 tăng 12%"), Language::Vi);
        assert_eq!(detect_language("Lợi nhuận gộp đạt 312 tỷ đồng"), Language::Vi);
        // Typed without diacritics, or with only the letters French shares.
        assert_eq!(detect_language("thoi tiet ha noi hom nay"), Language::Vi);
        assert_eq!(detect_language("gia xang giam"), Language::Vi);
        assert_eq!(detect_language("doanh thu quý 3 tăng bao nhiêu"), Language::Vi);
        assert_eq!(detect_language("How did the company's income change?"), Language::En);
        assert_eq!(detect_language("The board approved a dividend"), Language::En);
        assert_eq!(detect_language("What is the boundary layer thickness?"), Language::En);
        assert_eq!(detect_language("Le café est très bon à Paris, évidemment"), Language::En);
        assert_eq!(detect_language("Доходы выросли"), Language::Other);
        assert_eq!(detect_language("12,4% 2023"), Language::Other);
        // Decomposed input is recognised too.
        assert_eq!(detect_language("tă\u{0300}ng trươ\u{0309}ng"), Language::Vi);
    }

    #[test]
    fn embedder_language_spec() {
        assert_eq!(EmbedderLanguages::parse("*").unwrap(), EmbedderLanguages::All);
        assert_eq!(EmbedderLanguages::parse("en").unwrap(), EmbedderLanguages::Only(vec![Language::En]));
        assert!(EmbedderLanguages::parse("fr").is_err());
    }

    #[test]
    fn query_terms_group_exact_and_folded_per_word() {
        let t = query_terms("doanh thu tăng");
        let words: Vec<(String, usize)> = t.iter().map(|q| (q.term.clone(), q.word)).collect();
        assert!(words.contains(&("tăng".into(), 2)) && words.contains(&("~tang".into(), 2)));
        assert!(words.contains(&("doanh".into(), 0)) && words.contains(&("thu".into(), 1)));
        assert_eq!(t.iter().find(|q| q.term == "~tang").unwrap().weight, FOLDED_WEIGHT);
    }

    #[test]
    fn english_queries_are_stemmed_and_vietnamese_ones_are_not() {
        let t = query_terms("What are the effects of proteins?");
        let terms: Vec<(&str, usize, f64)> = t.iter().map(|q| (q.term.as_str(), q.word, q.weight)).collect();
        assert!(terms.contains(&("effects", 3, 1.0)) && terms.contains(&("^effect", 3, STEM_WEIGHT)), "{terms:?}");
        assert!(terms.contains(&("^protein", 5, STEM_WEIGHT)) && terms.contains(&("protein", 5, STEM_WEIGHT)));
        assert!(terms.contains(&("the", 2, 1.0)), "no word dropped: {terms:?}");
        // Vietnamese without diacritics: no stems.
        let t = query_terms("doanh thu tang bao nhieu");
        assert!(t.iter().all(|q| !q.term.starts_with(rag_lexical::STEM_PREFIX)));
        assert_eq!(t.iter().map(|q| q.word).max(), Some(4));
        assert_eq!(document_analysis("Doanh thu tăng 12% so với cùng kỳ."), rag_lexical::Analysis::Plain);
        assert_eq!(document_analysis("Revenue grew twelve percent."), rag_lexical::Analysis::English);
    }

    fn cands(v: &[(&str, f64, Language)]) -> Vec<Candidate> {
        v.iter().map(|(id, score, language)| Candidate { id: id.to_string(), score: *score, language: *language }).collect()
    }

    fn order(f: &[Fused]) -> Vec<&str> {
        f.iter().map(|x| x.id.as_str()).collect()
    }

    use Language::{En, Vi};

    #[test]
    fn fusion_rewards_agreement_and_adds_dense_only_hits() {
        let en = EmbedderLanguages::Only(vec![En]);
        let lexical = cands(&[("a", 9.0, En), ("b", 4.0, En), ("c", 3.0, En)]);
        let dense = cands(&[("c", 0.90, En), ("a", 0.89, En), ("z", 0.70, En)]);
        let (f, d) = fuse(&lexical, 0.8, &dense, En, &en, 1.0);
        assert_eq!(order(&f)[..2], ["a", "c"]);
        assert!(order(&f).contains(&"z"));
        assert_eq!((f[0].lexical_rank, f[0].dense_rank), (Some(1), Some(2)));
        assert_eq!((d.same_language_share, d.readable_share, d.dense_share), (1.0, 1.0, 0.5));
    }

    #[test]
    fn a_query_the_embedder_cannot_read_gets_the_lexical_ranking() {
        let en = EmbedderLanguages::Only(vec![En]);
        let dense = cands(&[("z", 0.9, Vi), ("b", 0.8, Vi)]);
        let lexical = cands(&[("a", 5.0, Vi), ("b", 4.0, Vi), ("c", 4.0, Vi)]);
        // Even a best hit matching almost nothing keeps its order.
        let (f, d) = fuse(&lexical, 0.0, &dense, Vi, &en, 1.0);
        assert_eq!(order(&f), ["a", "b", "c"]);
        assert_eq!(d.dense_share, 0.0);
        // An English query: Vietnamese chunks' dense hits are ignored.
        let (f, _) = fuse(&cands(&[("a", 5.0, En), ("b", 4.0, En)]), 0.5, &dense, En, &en, 1.0);
        assert_eq!(order(&f), ["a", "b"]);
        assert!(f.iter().all(|x| x.dense_rank.is_none()));
    }

    #[test]
    fn a_cross_lingual_question_is_ranked_by_the_dense_side() {
        // An English question over a mostly Vietnamese workspace (eval/vi-dev
        // q31): the lexical side finds English passages sharing a word or
        // two; the dense side's best is the Vietnamese passage, by a hair.
        let all = EmbedderLanguages::All;
        let lexical = cands(&[("p27", 3.4, En), ("p29", 2.9, En), ("p28", 2.7, En)]);
        let mut dense = cands(&[("p05", 0.817, Vi), ("p27", 0.808, En), ("p06", 0.808, Vi), ("p28", 0.794, En)]);
        dense.extend((0..16).map(|i| Candidate { id: format!("v{i}"), score: 0.70, language: Vi }));
        let (f, d) = fuse(&lexical, 0.12, &dense, En, &all, 1.0);
        assert_eq!(f[0].id, "p05", "{f:?}");
        assert!(d.same_language_share < 0.2 && d.readable_share == 1.0 && d.dense_share > 0.8, "{d:?}");
        // Under reciprocal rank fusion p27, second on the dense side and
        // first on the lexical one, won.
        // An English-only embedder sees no more of the workspace than the
        // lexical side: an even split, over the English chunks it reads.
        let en = EmbedderLanguages::Only(vec![En]);
        let (f, d) = fuse(&lexical, 0.12, &dense, En, &en, 1.0);
        assert!((d.dense_share - 0.5).abs() < 1e-9 && d.readable_share < 0.2, "{d:?}");
        assert!(f.iter().all(|x| x.id != "p05"), "a Vietnamese chunk it cannot read is not fused");
    }

    #[test]
    fn a_strong_lexical_match_wins_over_a_confused_dense_side() {
        // eval/vi-sample q5, typed without diacritics: lexical finds the
        // passage at once; the dense side ranks it sixth among near-ties.
        let all = EmbedderLanguages::All;
        let lexical = cands(&[("d6", 7.4, Vi), ("d10", 2.2, Vi), ("d8", 2.0, Vi)]);
        let dense = cands(&[
            ("d13", 0.802, Vi),
            ("d9", 0.788, Vi),
            ("d2", 0.782, Vi),
            ("d1", 0.780, Vi),
            ("d3", 0.779, Vi),
            ("d6", 0.777, Vi),
            ("d14", 0.70, En),
        ]);
        let (f, _) = fuse(&lexical, 0.67, &dense, Vi, &all, 1.0);
        assert_eq!(f[0].id, "d6", "{f:?}");
        // The same lexical list matching one word in ten is not trusted.
        let (f, _) = fuse(&lexical, 0.1, &dense, Vi, &all, 1.0);
        assert_eq!(f[0].id, "d13", "{f:?}");
    }

    #[test]
    fn coverage_counts_the_querys_words_found_diacritics_folded() {
        assert_eq!(query_coverage("doanh thu tang", "Doanh thu tăng 12%"), 1.0);
        assert_eq!(query_coverage("How many paid vacation days", "Employees get 12 days"), 0.2);
        assert_eq!(query_coverage("", "anything"), 0.0);
    }
}

#[cfg(test)]
mod detect_language_reference {
    use super::*;

    /// The plain version the fast one must agree with: every word
    /// through the general path.
    fn reference(text: &str) -> Language {
        let mut signs = LanguageSigns::default();
        let normalised: String = text.nfc().collect();
        for word in normalised.split(|c: char| !c.is_alphabetic()).filter(|w| !w.is_empty()) {
            signs.add_word(word);
        }
        signs.verdict()
    }

    #[test]
    fn the_fast_detector_agrees_with_the_plain_one() {
        let texts = [
            "",
            "123 456",
            "the boundary layer of a wing",
            "Doanh thu KHONG tang nhieu trong nam nay",
            "Doanh thu không tăng",
            "Tăng trưởng GDP của Việt Nam",
            "café résumé naïve déjà vu",
            "Москва и Санкт-Петербург",
            "东京 大阪",
            "e\u{301}te\u{301} a\u{300} Ha\u{300} No\u{323}i",
            "Quy dinh ve thue xuat khau gao",
            "NGUOI nuoc ngoai vay von ngan hang",
            "supercalifragilisticexpialidocious khong",
            "mixed ASCII text with một vài từ tiếng Việt trong đó",
            "Ñandú señor año",
            "Đồng đô la",
            "x y z tang",
            "ĐỒNG",
            "naïve khong khong",
            "ﬁnance ﬂow",
        ];
        for text in texts {
            assert_eq!(detect_language(text), reference(text), "{text:?}");
        }
        // And every line of the Vietnamese evaluation sets.
        let mut lines = 0;
        for eval in ["../../eval/vi-sample", "../../eval/vi-dev"] {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(eval);
            for path in std::fs::read_dir(&dir).expect("the evaluation sets are in the repository").flatten().map(|e| e.path()) {
                let Ok(text) = std::fs::read_to_string(&path) else { continue };
                for piece in text.lines() {
                    assert_eq!(detect_language(piece), reference(piece), "{piece:?} of {}", path.display());
                    lines += 1;
                }
            }
        }
        assert!(lines > 100, "only {lines} lines compared");
    }
}

//! Retrieval logic without I/O: what the query side decides.
//!
//! - [`detect_language`]: Vietnamese, English (or other ASCII Latin) or other.
//! - [`fuse`]: reciprocal rank fusion of the lexical and dense rankings,
//!   aware of what the embedder understands. all-MiniLM-L6-v2 is
//!   English-only and strips diacritics, so on Vietnamese its neighbours are
//!   noise: dense hits count only when both the query and the chunk are in
//!   a language the embedder reads. When the query is not, the fused list is
//!   exactly the lexical one.
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

impl EmbedderLanguages {
    /// `*` or a comma-separated list of `vi`, `en`, `other`.
    pub fn parse(spec: &str) -> Result<Self, String> {
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
                other => return Err(format!("unknown language {other:?} (vi, en, other or *)")),
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

/// A lexical query term: the indexed term, the index of the query word it
/// comes from, and its weight.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTerm {
    pub term: String,
    pub word: usize,
    pub weight: f64,
}

/// Lexical terms of a query: each word exactly (weight 1) and its folded
/// variant (weight [`FOLDED_WEIGHT`]); the ranker keeps the best-matching
/// term per word so the two never add up.
pub fn query_terms(query: &str) -> Vec<QueryTerm> {
    let mut out: Vec<QueryTerm> = Vec::new();
    let mut word = 0usize;
    for t in rag_lexical::query_terms(query) {
        if !t.folded {
            word = out.iter().map(|q| q.word + 1).max().unwrap_or(0);
        }
        let exists = out.iter().any(|q| q.term == t.term);
        if !exists {
            out.push(QueryTerm { term: t.term, word, weight: if t.folded { FOLDED_WEIGHT } else { 1.0 } });
        }
    }
    out
}

/// The rank-fusion constant of Cormack et al. (2009).
pub const RRF_K: f64 = 60.0;

/// A fused result: ranks are 1-based positions in each input list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fused {
    pub id: String,
    pub score: f64,
    pub lexical_rank: Option<usize>,
    pub dense_rank: Option<usize>,
}

/// Reciprocal rank fusion: `sum(weight / (RRF_K + rank))`. Dense hits whose
/// chunk language the embedder does not understand are dropped (the rest
/// move up), and none count when the query's language is not understood.
/// Ties keep lexical order.
pub fn fuse(
    lexical: &[String],
    dense: &[(String, Language)],
    query_language: Language,
    embedder: &EmbedderLanguages,
    dense_weight: f64,
) -> Vec<Fused> {
    let mut by_id: HashMap<&str, Fused> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    for (i, id) in lexical.iter().enumerate() {
        if by_id.contains_key(id.as_str()) {
            continue;
        }
        order.push(id);
        by_id.insert(id, Fused { id: id.clone(), score: 1.0 / (RRF_K + (i + 1) as f64), lexical_rank: Some(i + 1), dense_rank: None });
    }
    if embedder.understands(query_language) && dense_weight > 0.0 {
        let usable = dense.iter().filter(|(_, lang)| embedder.understands(*lang));
        for (i, (id, _)) in usable.enumerate() {
            let add = dense_weight / (RRF_K + (i + 1) as f64);
            match by_id.get_mut(id.as_str()) {
                Some(f) if f.dense_rank.is_none() => {
                    f.score += add;
                    f.dense_rank = Some(i + 1);
                }
                Some(_) => {}
                None => {
                    order.push(id);
                    by_id.insert(id, Fused { id: id.clone(), score: add, lexical_rank: None, dense_rank: Some(i + 1) });
                }
            }
        }
    }
    let mut out: Vec<Fused> = order.into_iter().filter_map(|id| by_id.remove(id)).collect();
    // Stable: equal scores keep lexical-first order.
    out.sort_by(|a, b| b.score.partial_cmp(&a.score).unwrap_or(std::cmp::Ordering::Equal));
    out
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

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn fusion_rewards_agreement_and_adds_dense_only_hits() {
        let en = EmbedderLanguages::Only(vec![Language::En]);
        let dense = vec![("c".to_string(), Language::En), ("a".to_string(), Language::En), ("z".to_string(), Language::En)];
        let f = fuse(&ids(&["a", "b", "c"]), &dense, Language::En, &en, 1.0);
        let order: Vec<&str> = f.iter().map(|x| x.id.as_str()).collect();
        assert_eq!(order[..2], ["a", "c"]);
        assert!(order.contains(&"z"));
        assert_eq!(f[0].lexical_rank, Some(1));
        assert_eq!(f[0].dense_rank, Some(2));
    }

    #[test]
    fn a_query_the_embedder_cannot_read_gets_the_lexical_ranking() {
        let en = EmbedderLanguages::Only(vec![Language::En]);
        let dense = vec![("z".to_string(), Language::Vi), ("b".to_string(), Language::Vi)];
        let lexical = ids(&["a", "b", "c"]);
        let f = fuse(&lexical, &dense, Language::Vi, &en, 1.0);
        assert_eq!(f.iter().map(|x| x.id.clone()).collect::<Vec<_>>(), lexical);
        // An English query: Vietnamese chunks' dense hits are ignored.
        let f = fuse(&lexical, &dense, Language::En, &en, 1.0);
        assert_eq!(f.iter().map(|x| x.id.clone()).collect::<Vec<_>>(), lexical);
        assert!(f.iter().all(|x| x.dense_rank.is_none()));
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

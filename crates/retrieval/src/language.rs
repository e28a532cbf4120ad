//! Which language a text is in, and which languages an embedder reads.

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

#[cfg(test)]
mod reference {
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

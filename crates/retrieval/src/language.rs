// ~290 lines of code, the rest tests: the language of a text is one decision over its syllables, its marks and its words, read together.
//! Which language a text is in, and which languages an embedder reads.

use serde::Serialize;

use crate::syllable::AsciiWord;
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

/// The language of a text: Vietnamese when it has words with Vietnamese
/// marks and at least a fifth of its words look Vietnamese (a
/// Vietnamese-only letter, a Vietnamese syllable typed without marks, or,
/// half as strong, a letter Vietnamese shares with French and others); or,
/// without marks, when its words that can only be Vietnamese syllables
/// outweigh those that cannot be (`syllable`: "doanh thu nam 2023 la bao
/// nhieu" is Vietnamese, "Where is Da Nang?" English); English/ASCII Latin
/// when at least four letters in five are ASCII; other otherwise.
pub fn detect_language(text: &str) -> Language {
    let mut signs = LanguageSigns::default();
    // Retrieval asks this of every candidate chunk: ASCII words (most of
    // them) are looked up without allocating, and NFC text is not copied.
    let normalised: std::borrow::Cow<'_, str> = match unicode_normalization::is_nfc_quick(text.chars()) {
        unicode_normalization::IsNormalized::Yes => std::borrow::Cow::Borrowed(text),
        _ => std::borrow::Cow::Owned(text.nfc().collect()),
    };
    for (i, word) in normalised.split(|c: char| !c.is_alphabetic()).filter(|w| !w.is_empty()).enumerate() {
        if word.is_ascii() {
            let mut buf = [0u8; 16];
            if word.len() <= buf.len() && !is_name(word, i == 0) {
                let lower = &mut buf[..word.len()];
                lower.copy_from_slice(word.as_bytes());
                lower.make_ascii_lowercase();
                signs.add_ascii(word.len(), std::str::from_utf8(lower).ok().map(crate::syllable::ascii_word));
            } else {
                signs.add_ascii(word.len(), word_beyond_syllables(word, i == 0));
            }
            continue;
        }
        signs.add_word(word, i == 0);
    }
    signs.verdict()
}

/// What [`detect_language`] counts over a text's words.
#[derive(Default)]
struct LanguageSigns {
    words: usize,
    /// Words with a Vietnamese mark (a letter no other common language has).
    clear: usize,
    score: f64,
    /// ASCII words that can only be Vietnamese syllables (frequent
    /// Vietnamese words weigh 2).
    unmarked_vietnamese: f64,
    /// ASCII words that cannot be Vietnamese syllables.
    foreign: usize,
    letters: usize,
    ascii: usize,
}

impl LanguageSigns {
    /// One ASCII word of `len` letters and what it says.
    fn add_ascii(&mut self, len: usize, says: Option<AsciiWord>) {
        self.words += 1;
        self.letters += len;
        self.ascii += len;
        match says {
            Some(AsciiWord::Vietnamese(weight)) => self.unmarked_vietnamese += weight,
            Some(AsciiWord::Either) => {}
            Some(AsciiWord::Foreign) | None => self.foreign += 1,
        }
    }

    /// One word (NFC), any script; `first`: the text's first word.
    fn add_word(&mut self, word: &str, first: bool) {
        if word.is_ascii() {
            let lower = word.to_ascii_lowercase();
            let says = if lower.len() <= 16 && !is_name(word, first) {
                Some(crate::syllable::ascii_word(&lower))
            } else {
                word_beyond_syllables(word, first)
            };
            self.add_ascii(word.len(), says);
            return;
        }
        self.words += 1;
        let lower = word.to_lowercase();
        if word.chars().any(is_vietnamese_letter) {
            self.clear += 1;
            self.score += 1.0;
        } else if lower.chars().any(|c| !c.is_ascii() && "âêôàáèéìíòóùúý".contains(c)) {
            // A letter French shares, on a Vietnamese syllable ("giá",
            // "hôm", "nào") is as clear a sign as a Vietnamese-only one;
            // on anything else ("café", "très") half a sign...
            if crate::syllable::is_vietnamese_syllable(&rag_lexical::fold(&lower)) && lower.chars().count() > 1 {
                self.clear += 1;
                self.score += 1.0;
            } else {
                // ...and a word that cannot be a Vietnamese syllable speaks
                // against it, as an ASCII one does.
                self.score += 0.5;
                self.foreign += 1;
            }
        }
        for c in word.chars() {
            self.letters += 1;
            if c.is_ascii_alphabetic() {
                self.ascii += 1;
            }
        }
    }

    fn verdict(&self) -> Language {
        let unmarked = self.unmarked_vietnamese;
        if self.words == 0 {
            Language::Other
        } else if (self.clear > 0 && (self.score + unmarked) * 5.0 >= self.words as f64)
            || (unmarked > self.foreign as f64 && self.ascii * 5 >= self.letters * 4)
        {
            Language::Vi
        } else if self.ascii * 5 >= self.letters * 4 {
            Language::En
        } else {
            Language::Other
        }
    }
}

/// How a question is typed, for reports per form: Vietnamese with its
/// marks, Vietnamese without any, Vietnamese with English terms in it
/// ("deadline nộp báo cáo Q3", with or without marks), English, other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum QueryForm {
    Accented,
    Unaccented,
    Mixed,
    English,
    Other,
}

impl QueryForm {
    pub fn code(self) -> &'static str {
        match self {
            QueryForm::Accented => "accented",
            QueryForm::Unaccented => "unaccented",
            QueryForm::Mixed => "mixed",
            QueryForm::English => "english",
            QueryForm::Other => "other",
        }
    }
}

/// The form of `question`: its language, then for Vietnamese whether it
/// holds a lower-case word of three letters or more that is no Vietnamese
/// syllable (an English term: names and acronyms are capitalised and do
/// not count), else whether any word has a mark.
pub fn query_form(question: &str) -> QueryForm {
    match detect_language(question) {
        Language::En => QueryForm::English,
        Language::Other => QueryForm::Other,
        Language::Vi => {
            let words: Vec<&str> = question.split(|c: char| !c.is_alphabetic()).filter(|w| !w.is_empty()).collect();
            let english_term = words
                .iter()
                .any(|w| w.len() >= 3 && w.bytes().all(|b| b.is_ascii_lowercase()) && !crate::syllable::is_vietnamese_syllable(w));
            if english_term {
                QueryForm::Mixed
            } else if words.iter().any(|w| rag_lexical::fold(w) != *w) {
                QueryForm::Accented
            } else {
                QueryForm::Unaccented
            }
        }
    }
}

/// A capitalised word inside a text ("Da Nang", "Tim", "Pro"), or a
/// brand's inner capital ("iPhone"): a name, which says nothing of the
/// language around it. All capitals ("GDP", "DOANH THU") are not names.
fn is_name(word: &str, first: bool) -> bool {
    let bytes = word.as_bytes();
    let Some(&head) = bytes.first() else { return false };
    let has_lower = bytes.iter().any(u8::is_ascii_lowercase);
    let inner_upper = bytes.iter().skip(1).any(u8::is_ascii_uppercase);
    (!first && head.is_ascii_uppercase() && has_lower) || (head.is_ascii_lowercase() && inner_upper)
}

/// What a word [`crate::syllable::ascii_word`] is not asked about says: a
/// name nothing, a long word that it is foreign.
fn word_beyond_syllables(word: &str, first: bool) -> Option<AsciiWord> {
    is_name(word, first).then_some(AsciiWord::Either)
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
        for (i, word) in normalised.split(|c: char| !c.is_alphabetic()).filter(|w| !w.is_empty()).enumerate() {
            signs.add_word(word, i == 0);
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

#[cfg(test)]
mod labelled {
    use super::*;

    /// eval/lid/questions.tsv: questions written for this repository,
    /// labelled vi, mixed (Vietnamese with English terms) or en; the
    /// unaccented form of every vi and mixed question is derived here.
    #[test]
    fn forms() {
        assert_eq!(query_form("Doanh thu năm 2023 là bao nhiêu?"), QueryForm::Accented);
        assert_eq!(query_form("doanh thu nam 2023 la bao nhieu"), QueryForm::Unaccented);
        assert_eq!(query_form("deadline nộp báo cáo Q3 là khi nào"), QueryForm::Mixed);
        assert_eq!(query_form("deadline nop bao cao Q3 la khi nao"), QueryForm::Mixed);
        assert_eq!(query_form("Ai là tác giả của Python"), QueryForm::Accented);
        assert_eq!(query_form("Who wrote Python?"), QueryForm::English);
    }

    #[test]
    fn questions_are_told_apart_with_and_without_diacritics() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../eval/lid/questions.tsv");
        let text = std::fs::read_to_string(&path).expect("eval/lid/questions.tsv is in the repository");
        // form -> (right, total, misses)
        let mut forms: std::collections::BTreeMap<&str, (usize, usize, Vec<String>)> = Default::default();
        for line in text.lines() {
            let (label, question) = line.split_once('\t').expect("LABEL<TAB>QUESTION");
            let cases: Vec<(&str, String, Language)> = match label {
                "en" => vec![("en", question.to_string(), Language::En)],
                "vi" => {
                    vec![("vi accented", question.to_string(), Language::Vi), ("vi unaccented", rag_lexical::fold(question), Language::Vi)]
                }
                "mixed" => {
                    vec![
                        ("mixed accented", question.to_string(), Language::Vi),
                        ("mixed unaccented", rag_lexical::fold(question), Language::Vi),
                    ]
                }
                other => panic!("unknown label {other:?}"),
            };
            for (form, q, want) in cases {
                let entry = forms.entry(form).or_default();
                entry.1 += 1;
                if detect_language(&q) == want {
                    entry.0 += 1;
                } else {
                    entry.2.push(q);
                }
            }
        }
        for (form, (right, total, misses)) in &forms {
            let share = *right as f64 / *total as f64;
            println!("{form}: {right} of {total} ({:.1}%)", share * 100.0);
            assert!(*total >= 100, "{form}: only {total} questions");
            assert!(share >= 0.98, "{form}: {right} of {total}; missed {misses:?}");
        }
        assert_eq!(forms.len(), 5);
    }
}

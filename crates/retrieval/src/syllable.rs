//! Vietnamese syllables typed without diacritics.
//!
//! Vietnamese is written one syllable per word from a closed inventory: an
//! optional onset (`ngh`, `nh`, `tr`, `qu`, ...), a vowel nucleus (`a`,
//! `oa`, `uye`, ...) and an optional final (`c`, `ch`, `m`, `n`, `ng`,
//! `nh`, `p`, `t`). Folded, most English words fall outside it ("what",
//! "bank", "is", "using", "music"), while nearly every word of a Vietnamese
//! question typed without marks falls inside ("doanh thu nam 2023 la bao
//! nhieu"). The few short English words that are also valid syllables
//! ("the", "can", "long") count for neither language.

/// Onsets, longest first (so `ngh` is tried before `ng` and `n`).
const ONSETS: &[&str] = &[
    "ngh", "ng", "nh", "ch", "gh", "gi", "kh", "ph", "th", "tr", "qu", "b", "c", "d", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t",
    "v", "x",
];

/// Nuclei (diacritics folded) that may be followed by a final consonant.
const OPEN_NUCLEI: &[&str] = &["a", "e", "i", "o", "u", "y", "ie", "oa", "oe", "oo", "ua", "ue", "uo", "uy", "ye", "uye"];

/// Nuclei that end in a glide and so take no final consonant.
const CLOSED_NUCLEI: &[&str] = &[
    "ai", "ao", "au", "ay", "eo", "eu", "ia", "iu", "oi", "ui", "uu", "ieu", "yeu", "oai", "oao", "oay", "oeo", "uay", "uoi", "uou", "uya",
    "uyu", "ya",
];

/// Whether a final may close a nucleus (Vietnamese spelling: `ch` and `nh`
/// follow front vowels, `ng` and `c` never follow `i`/`y` alone).
fn final_allowed(nucleus: &str, fin: &str) -> bool {
    match fin {
        "ch" | "nh" => matches!(nucleus, "a" | "e" | "i" | "y" | "oa" | "ue" | "uy"),
        "ng" | "c" => !matches!(nucleus, "i" | "y" | "uy" | "ye" | "uye" | "ue"),
        _ => true,
    }
}

/// Whether `word` (lower-case ASCII letters, diacritics already folded,
/// `đ` as `d`) is a possible Vietnamese syllable.
pub fn is_vietnamese_syllable(word: &str) -> bool {
    if word.is_empty() || word.len() > 7 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return false;
    }
    // The onset is optional; "gi" before a consonant or at the end is g + i
    // ("gi" = gì, "gin" = gìn), and "qu" needs a vowel after it.
    let mut onsets: Vec<&str> = ONSETS.iter().copied().filter(|o| word.starts_with(o)).collect();
    onsets.push("");
    onsets.into_iter().any(|onset| {
        let rest = &word[onset.len()..];
        // "gi" with nothing after, or a final only, is g + i: gì, gìn.
        rhyme_ok(onset, rest) || (onset == "gi" && rhyme_ok("", &word[1..]))
    })
}

fn rhyme_ok(onset: &str, rhyme: &str) -> bool {
    if rhyme.is_empty() {
        return false;
    }
    let first = rhyme.as_bytes()[0];
    // Spelling rules of the onsets: k, gh, ngh before e, i, y only; c, g
    // and ng never before them (g + i is the gi onset).
    let front = matches!(first, b'e' | b'i' | b'y');
    match onset {
        "k" | "gh" | "ngh" if !front => return false,
        "c" | "g" | "ng" if front => return false,
        "qu" if first == b'u' => return false,
        _ => {}
    }
    for fin in ["ch", "ng", "nh", "c", "m", "n", "p", "t", ""] {
        let Some(nucleus) = rhyme.strip_suffix(fin) else { continue };
        if nucleus.is_empty() {
            continue;
        }
        if fin.is_empty() {
            if OPEN_NUCLEI.contains(&nucleus) || CLOSED_NUCLEI.contains(&nucleus) {
                return true;
            }
        } else if OPEN_NUCLEI.contains(&nucleus) && final_allowed(nucleus, fin) {
            return true;
        }
    }
    false
}

/// Short English words that are also Vietnamese syllables once folded: in
/// a question they say nothing about its language.
const SHARED_WITH_ENGLISH: &[&str] = &[
    "a", "i", "an", "am", "at", "in", "it", "on", "up", "oh", "hi", "be", "he", "me", "no", "so", "go", "do", "to", "the", "then", "than",
    "that", "them", "thin", "chat", "chin", "can", "man", "men", "ten", "pen", "hen", "den", "not", "but", "hot", "lot", "got", "top",
    "cut", "put", "get", "let", "set", "sit", "hit", "net", "pet", "bit", "bet", "bat", "cat", "hat", "mat", "rat", "sat", "pan", "tan",
    "van", "ran", "run", "sun", "gun", "bun", "him", "tip", "map", "cap", "lip", "chip", "pop", "cop", "mom", "son", "ton", "long", "song",
    "sang", "hang", "met", "bang", "rang", "tin", "pin", "bin", "sin", "ago", "tax", "mac", "pc", "vs", "ok", "nap", "tap", "rap", "lap",
    "gap", "cup", "pup", "hop", "mop", "hut", "nut", "rut", "ban", "ham", "cam", "dam", "ram", "hum", "sum", "gum", "tom", "pat", "may",
    "ai", "tie", "den",
    // Frequent in English text (SQuAD 2.0's questions and passages, en-dev,
    // Cranfield's queries) and valid syllables once folded.
    "by", "my", "day", "say", "pay", "buy", "due", "die", "lie", "try", "yet", "too", "true", "room", "soon", "via", "non", "boat", "hip",
    "trip", "poet", "rich", "boom", "boot", "pot", "tech", "quit", "quiet", "poem", "guy", "trap", "lay", "kit", "root",
];

/// Vietnamese words (folded) that are not English: one of them marks a
/// question typed without diacritics as Vietnamese.
const VIETNAMESE_WORDS: &[&str] = &[
    "la", "cua", "nhung", "duoc", "khong", "ko", "dc", "bao", "nhieu", "nao", "gi", "sao", "nhu", "cho", "voi", "cac", "mot", "nay", "thi",
    "va", "hay", "hoac", "neu", "vi", "nen", "tai", "tu", "trong", "ngoai", "tren", "duoi", "dau", "gio", "khi", "co", "nguoi", "nam",
    "thang", "ngay", "nhat", "toi", "minh", "chung", "cung", "da", "dang", "se", "ve", "theo", "doanh", "thu", "ntn", "vay", "nhe", "oi",
    "roi", "chua", "moi", "bi", "boi", "sau", "truoc", "giua", "cach", "lam", "phai",
];

/// What one ASCII word says about its text's language.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum AsciiWord {
    /// A Vietnamese syllable that is not an English word, with its weight:
    /// 2 for a frequent Vietnamese word ("nhieu", "duoc", "cach"), 1
    /// for any other syllable.
    Vietnamese(f64),
    /// Not a Vietnamese syllable: English, a loanword, a name, an acronym.
    Foreign,
    /// Both ("the", "can", "long") or too short to tell.
    Either,
}

/// Classifies an ASCII word, lower-cased.
pub(crate) fn ascii_word(lower: &str) -> AsciiWord {
    if lower.len() < 2 {
        return AsciiWord::Either;
    }
    if VIETNAMESE_WORDS.contains(&lower) {
        return AsciiWord::Vietnamese(2.0);
    }
    if !is_vietnamese_syllable(lower) {
        return AsciiWord::Foreign;
    }
    if SHARED_WITH_ENGLISH.contains(&lower) {
        AsciiWord::Either
    } else {
        AsciiWord::Vietnamese(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vietnamese_syllables_folded() {
        for s in [
            "doanh", "thu", "nam", "la", "bao", "nhieu", "nghieng", "khuyen", "truong", "nguoi", "quyet", "giuong", "gi", "gin", "ke",
            "ky", "ghe", "oanh", "uyen", "thuong", "khoang", "xuat", "khau", "tuyet", "ngoeo", "huou", "chuyen", "giai", "chich", "tinh",
            "uong", "oa", "y", "ki",
        ] {
            assert!(is_vietnamese_syllable(s), "{s}");
        }
        for s in [
            "what", "bank", "is", "using", "music", "the2", "street", "of", "and", "for", "with", "this", "ce", "ngi", "ka", "gha", "ing",
            "ic", "quu", "gym", "protein", "boundary", "layer", "sunday", "", "Doanh", "x", "thuongg",
        ] {
            assert!(!is_vietnamese_syllable(s), "{s}");
        }
    }

    #[test]
    fn words_that_tell_and_words_that_do_not() {
        assert_eq!(ascii_word("nhieu"), AsciiWord::Vietnamese(2.0));
        assert_eq!(ascii_word("tang"), AsciiWord::Vietnamese(1.0));
        assert_eq!(ascii_word("what"), AsciiWord::Foreign);
        assert_eq!(ascii_word("the"), AsciiWord::Either);
        assert_eq!(ascii_word("long"), AsciiWord::Either);
        assert_eq!(ascii_word("a"), AsciiWord::Either);
    }
}

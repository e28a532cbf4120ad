//! Sentence spans: where a chunk's text is cut into the units a model
//! cites.

/// Sentence spans of `text`, in chars, trimmed of surrounding whitespace.
/// A line break ends a sentence, except a soft one: PDFs and wrapped text
/// break paragraphs into lines, and a sentence cut at its line end would
/// cite half a claim ("… đạt 1.245,6 tỷ đồng, tăng" without "12,4%").
pub fn sentences(text: &str) -> Vec<(usize, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let end_here = (c == '\n' && !is_soft_break(&chars, i))
            || (matches!(c, '.' | '!' | '?' | '…' | '。')
                && chars.get(i + 1).is_none_or(|n| n.is_whitespace())
                && !(c == '.' && continues_after_period(&chars, start, i)));
        if end_here || i + 1 == chars.len() {
            let end = if c == '\n' { i } else { i + 1 };
            push_trimmed(&chars, start, end, &mut out);
            start = i + 1;
        }
        i += 1;
    }
    out
}

/// Abbreviations that end in a period inside a sentence, lower-cased:
/// titles before a name, and Vietnamese ones before a place or a person
/// ("TP. Hồ Chí Minh", "PGS. TS. Lan"). Only titles: company suffixes
/// ("Acme Corp. It …"), "vs." and "approx." end sentences as often as not.
const ABBREVIATIONS: &[&str] = &["mr", "mrs", "ms", "dr", "prof", "st", "tp", "ts", "ths", "gs", "pgs", "bs", "ks"];

/// Abbreviations that stand before a number ("No. 5", "Fig. 2", "Q. 1",
/// "P. 12"): inside a sentence only when a digit follows ("the answer is
/// no. Then …" ends one).
const NUMBER_ABBREVIATIONS: &[&str] = &["no", "nos", "fig", "q", "p"];

/// The period at `i` (followed by whitespace) is inside a sentence: the
/// text goes on in lower case ("10 a.m. to 3 p.m.", "e.g. the"), as
/// Unicode's sentence rules have it, or it ends a known abbreviation, a
/// name's initial ("Nicholas E. Golovin"), a dotted acronym ("U.S.
/// Army") or the number of a heading or list item that opens the sentence
/// ("2.1. Phạm vi"). Cutting there would cite half a claim, or a name
/// without its surname. `start`: where the current sentence began.
fn continues_after_period(chars: &[char], start: usize, i: usize) -> bool {
    let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
    if next.is_some_and(|c| c.is_lowercase()) {
        return true;
    }
    let Some(&next) = next else { return false };
    // The token the period ends: back to whitespace or an opening mark.
    let token_start = chars[..i].iter().rposition(|c| c.is_whitespace() || matches!(c, '(' | '"' | '“')).map_or(0, |p| p + 1);
    let token: String = chars[token_start..i].iter().collect();
    let opens_sentence = chars[start..token_start].iter().all(|c| c.is_whitespace());
    if opens_sentence && !token.is_empty() && token.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return true;
    }
    let letters: Vec<char> = token.chars().filter(|c| *c != '.').collect();
    let dotted = token.contains('.') && token.split('.').all(|part| part.chars().count() == 1 && part.chars().all(char::is_alphabetic));
    // An initial follows a name or another initial, or opens the sentence
    // ("J. R. R. Tolkien"); after a lower-case word a capital letter ends
    // one ("plan B. Then").
    let previous_token_capitalised = chars[start..token_start]
        .iter()
        .rev()
        .skip_while(|c| c.is_whitespace())
        .take_while(|c| !c.is_whitespace())
        .last()
        .is_none_or(|c| c.is_uppercase());
    let initial = letters.len() == 1 && letters[0].is_uppercase() && next.is_uppercase() && previous_token_capitalised;
    if (dotted && letters.iter().all(|c| c.is_uppercase())) || initial {
        return true;
    }
    if !token.chars().all(char::is_alphabetic) {
        // The end of "1.5", of a URL, of "v.v.": a sentence may end there.
        return false;
    }
    let word = token.to_lowercase();
    ABBREVIATIONS.contains(&word.as_str()) || (next.is_ascii_digit() && NUMBER_ABBREVIATIONS.contains(&word.as_str()))
}

/// The line break at `i` continues the sentence: the line goes on in
/// lower case, or ends with a comma-like mark, or a word is followed by a
/// number that is not a list item ("tăng\n12,4%" but not "x\n2. y").
/// A blank line, a line ending in sentence punctuation, or a line starting
/// in upper case (headings, table rows, list items) stays a break.
fn is_soft_break(chars: &[char], i: usize) -> bool {
    let prev = chars[..i].iter().rev().find(|c| **c != ' ' && **c != '\t' && **c != '\r');
    let mut rest = chars[i + 1..].iter().skip_while(|c| **c == ' ' || **c == '\t' || **c == '\r');
    let next = rest.clone().next();
    let (Some(&prev), Some(&next)) = (prev, next) else { return false };
    if next == '\n' || matches!(prev, '.' | '!' | '?' | '…' | '。' | ':' | '\n') {
        return false;
    }
    if next.is_lowercase() || matches!(prev, ',' | ';' | '-' | '–' | '(') {
        return true;
    }
    if prev.is_alphabetic() && next.is_numeric() {
        // "2. item" or "12) item" starts a list item; "2022." ends a year.
        let digits = rest.clone().take_while(|c| c.is_numeric()).count();
        let after_digits = rest.nth(digits);
        return !(digits <= 2 && matches!(after_digits, Some('.' | ')')));
    }
    false
}

fn push_trimmed(chars: &[char], mut s: usize, mut e: usize, out: &mut Vec<(usize, usize)>) {
    while s < e && chars[s].is_whitespace() {
        s += 1;
    }
    while e > s && chars[e - 1].is_whitespace() {
        e -= 1;
    }
    if e > s {
        out.push((s, e));
    }
}

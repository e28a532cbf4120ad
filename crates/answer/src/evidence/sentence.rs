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
                && !(c == '.' && continues_after_period(&chars, i)));
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
const ABBREVIATIONS: &[&str] = &["mr", "mrs", "ms", "dr", "prof", "tp", "ts", "ths", "gs", "pgs", "bs", "ks"];

/// Abbreviations that stand before a number ("No. 5", "Fig. 2", "Q. 1",
/// "P. 12"): inside a sentence only when a digit follows ("the answer is
/// no. Then …" ends one).
const NUMBER_ABBREVIATIONS: &[&str] = &["no", "nos", "fig", "q", "p"];

/// The period at `i` (followed by whitespace) is inside a sentence: the
/// text goes on in lower case ("10 a.m. to 3 p.m.", "e.g. the"), as
/// Unicode's sentence rules have it, or it ends a known abbreviation.
/// Cutting there would cite half a claim.
fn continues_after_period(chars: &[char], i: usize) -> bool {
    let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
    if next.is_some_and(|c| c.is_lowercase()) {
        return true;
    }
    let word: String = chars[..i].iter().rev().take_while(|c| c.is_alphabetic()).collect::<Vec<_>>().into_iter().rev().collect();
    let before_word = chars[..i - word.chars().count()].last();
    // A whole word (not the end of "1.5" or of a URL), and something follows.
    let (Some(next), true) = (next, before_word.is_none_or(|c| c.is_whitespace() || matches!(c, '(' | '"' | '“'))) else { return false };
    let word = word.to_lowercase();
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

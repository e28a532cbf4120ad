//! The figures of a text: its numbers, where each stands and whether it is
//! a percentage, and its dates as dates (day, month, year), so "05/12" is
//! not "12/05" although both hold a 5 and a 12.

/// A number as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Figure {
    /// Its integer digits without thousands separators and leading zeros,
    /// and its decimals after a `.` ("1.245,6" and "1,245.6" are
    /// "1245.6"): what two spellings of one number share.
    pub key: String,
    pub value: f64,
    /// Decimals as written: the rounding the writer chose.
    pub decimals: usize,
    /// Followed by `%` ("phần trăm", "percent").
    pub percent: bool,
    /// Written with a comma as its decimal mark ("12,4"): how a figure
    /// computed from it is written back.
    pub decimal_comma: bool,
    /// As written ("1.245,6").
    pub written: String,
    /// Byte span in the text.
    pub start: usize,
    pub end: usize,
}

impl Figure {
    /// A year on its own ("2023"), which is a label of a figure rather
    /// than one to compute with.
    pub fn is_year(&self) -> bool {
        self.decimals == 0 && !self.percent && (1900.0..=2100.0).contains(&self.value) && self.written.len() == 4
    }
}

/// The numbers of `text`: a period or comma followed by exactly three
/// digits separates thousands, any other one is the decimal mark
/// ("1.245,6" and "1,245.6" are 1245.6, "12,4" is 12.4, "1,5" is 1.5 and
/// not 15); a space separates thousands only after a group of one to three
/// digits ("1 245", but "năm 2023 150 người" is two numbers).
pub(crate) fn numbers(text: &str) -> Vec<Figure> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let byte_at = |i: usize| chars.get(i).map_or(text.len(), |(b, _)| *b);
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].1.is_ascii_digit() {
            i += 1;
            continue;
        }
        let begin = i;
        let (mut integer, mut decimals) = (String::new(), None::<String>);
        let mut decimal_comma = false;
        let mut group = 0;
        while i < chars.len() {
            let c = chars[i].1;
            let digits_after = chars[i + 1..].iter().take_while(|(_, c)| c.is_ascii_digit()).count();
            if c.is_ascii_digit() {
                match decimals.as_mut() {
                    Some(d) => d.push(c),
                    None => integer.push(c),
                }
                group += 1;
            } else if decimals.is_none() && digits_after > 0 && matches!(c, '.' | ',') {
                if digits_after == 3 {
                    group = 0;
                } else {
                    decimals = Some(String::new());
                    decimal_comma = c == ',';
                }
            } else if decimals.is_none() && matches!(c, ' ' | '\u{a0}') && digits_after == 3 && (1..=3).contains(&group) {
                group = 0;
            } else {
                break;
            }
            i += 1;
        }
        let trimmed = integer.trim_start_matches('0');
        let mut key = if trimmed.is_empty() { "0".to_string() } else { trimmed.to_string() };
        let decimals = decimals.map(|d| d.trim_end_matches('0').to_string()).filter(|d| !d.is_empty());
        let written_decimals = decimals.as_ref().map_or(0, String::len);
        if let Some(d) = &decimals {
            key.push('.');
            key.push_str(d);
        }
        let (start, end) = (byte_at(begin), byte_at(i));
        let rest = text[end..].trim_start().to_lowercase();
        let percent = rest.starts_with('%') || rest.starts_with("phần trăm") || rest.starts_with("percent") || rest.starts_with("per cent");
        // An afternoon hour is its hour of the day: "5 PM" is "17 giờ".
        let afternoon =
            rest.strip_prefix("p.m").or_else(|| rest.strip_prefix("pm")).is_some_and(|t| !t.starts_with(|c: char| c.is_alphabetic()));
        if afternoon && decimals.is_none() && (1..12).contains(&key.parse::<u32>().unwrap_or(0)) {
            key = (key.parse::<u32>().unwrap_or(0) + 12).to_string();
        }
        out.push(Figure {
            value: key.parse().unwrap_or(0.0),
            key,
            decimals: written_decimals,
            percent,
            decimal_comma,
            written: text[start..end].to_string(),
            start,
            end,
        });
    }
    out
}

/// A date as a date: the parts the text gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Date {
    pub day: Option<u32>,
    pub month: Option<u32>,
    pub year: Option<u32>,
    /// Written in digits only ("05/12/2023"), in the text's own order of
    /// day and month; a date in words says which is which.
    pub numeric: bool,
    /// Byte span in the text.
    pub start: usize,
    pub end: usize,
}

impl Date {
    /// The parts this date gives that `other` gives too all agree, and at
    /// least the month or the day is among them. Two dates in digits are
    /// compared as written (one convention); a date in digits whose day
    /// and month could be either (both at most 12) against one in words
    /// may be read either way ("05/12/2023" in an American text is May 12).
    pub fn agrees_with(&self, other: &Date) -> bool {
        let same = |a: &Date, b: &Date| {
            let parts = [(a.day, b.day), (a.month, b.month), (a.year, b.year)];
            let shared = parts.iter().filter(|(x, y)| x.is_some() && y.is_some()).count();
            parts.iter().all(|(x, y)| x.is_none() || y.is_none() || x == y) && shared >= 1 && (a.month.is_none() || b.month.is_some())
        };
        if same(self, other) {
            return true;
        }
        let swappable = |d: &Date| d.numeric && d.day.is_some_and(|x| x <= 12) && d.month.is_some_and(|x| x <= 12);
        if self.numeric != other.numeric && (swappable(self) || swappable(other)) {
            let swapped = |d: &Date| if swappable(d) { Date { day: d.month, month: d.day, ..*d } } else { *d };
            return same(&swapped(self), &swapped(other));
        }
        false
    }
}

/// Month names (English, and the two Vietnamese months with names of
/// their own) and their numbers.
const MONTHS: &[(&str, u32)] = &[
    ("january", 1),
    ("jan", 1),
    ("february", 2),
    ("feb", 2),
    ("march", 3),
    ("mar", 3),
    ("april", 4),
    ("apr", 4),
    ("may", 5),
    ("june", 6),
    ("jun", 6),
    ("july", 7),
    ("jul", 7),
    ("august", 8),
    ("aug", 8),
    ("september", 9),
    ("sep", 9),
    ("sept", 9),
    ("october", 10),
    ("oct", 10),
    ("november", 11),
    ("nov", 11),
    ("december", 12),
    ("dec", 12),
    ("gieng", 1),
    ("chap", 12),
];

/// The month `word` names (folded, lower case).
pub(crate) fn month_named(word: &str) -> Option<u32> {
    MONTHS.iter().find(|(name, _)| *name == word).map(|(_, n)| *n)
}

#[derive(Debug, Clone)]
enum Token {
    /// Digits with the separators between them ("12/05/2023", "1.245,6").
    Digits(String),
    /// A word, folded and lower-cased.
    Word(String),
}

/// Words and runs of digits of `text`, each with its byte span.
fn tokens(text: &str) -> Vec<(Token, usize, usize)> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let byte_at = |i: usize| chars.get(i).map_or(text.len(), |(b, _)| *b);
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i].1;
        let begin = i;
        if c.is_ascii_digit() {
            while i < chars.len()
                && (chars[i].1.is_ascii_digit()
                    || (matches!(chars[i].1, '/' | '-' | '.' | ',') && chars.get(i + 1).is_some_and(|(_, n)| n.is_ascii_digit())))
            {
                i += 1;
            }
            out.push((Token::Digits(text[byte_at(begin)..byte_at(i)].to_string()), byte_at(begin), byte_at(i)));
        } else if c.is_alphabetic() {
            while i < chars.len() && chars[i].1.is_alphabetic() {
                i += 1;
            }
            let word = rag_lexical::fold(&text[byte_at(begin)..byte_at(i)].to_lowercase());
            out.push((Token::Word(word), byte_at(begin), byte_at(i)));
        } else {
            i += 1;
        }
    }
    out
}

fn small(t: Option<&(Token, usize, usize)>, max: u32) -> Option<u32> {
    match t {
        Some((Token::Digits(d), _, _)) if d.len() <= 2 && d.chars().all(|c| c.is_ascii_digit()) => {
            d.parse().ok().filter(|n| (1..=max).contains(n))
        }
        _ => None,
    }
}

fn year(t: Option<&(Token, usize, usize)>) -> Option<u32> {
    match t {
        Some((Token::Digits(d), _, _)) if d.len() == 4 && d.chars().all(|c| c.is_ascii_digit()) => d.parse().ok(),
        _ => None,
    }
}

fn word_is(t: Option<&(Token, usize, usize)>, w: &str) -> bool {
    matches!(t, Some((Token::Word(x), _, _)) if x == w)
}

/// Day, month and year as a text gives them.
type Parts = (Option<u32>, Option<u32>, Option<u32>);

/// A date found: its parts, whether in digits, and its last token.
type Found = (Option<u32>, Option<u32>, Option<u32>, bool, usize);

/// A date written in digits alone: "12/05/2023", "12/5", "5/2023",
/// "2023-05-12", "12-05-2023", "12.05.2023".
fn numeric_date(d: &str) -> Option<Parts> {
    let sep = ['/', '-', '.'].into_iter().find(|s| d.contains(*s))?;
    let parts: Vec<&str> = d.split(sep).collect();
    let num = |s: &str| s.parse::<u32>().ok();
    let day_month = |a: &str, b: &str| Some((num(a).filter(|x| (1..=31).contains(x))?, num(b).filter(|x| (1..=12).contains(x))?));
    match (sep, parts.as_slice()) {
        ('-', [y, m, dd]) if y.len() == 4 => {
            let (day, month) = day_month(dd, m)?;
            Some((Some(day), Some(month), num(y)))
        }
        (_, [a, b, y]) if y.len() == 4 && a.len() <= 2 && b.len() <= 2 => {
            let (day, month) = day_month(a, b)?;
            Some((Some(day), Some(month), num(y)))
        }
        ('/', [m, y]) if y.len() == 4 && m.len() <= 2 => Some((None, num(m).filter(|x| (1..=12).contains(x)), num(y))),
        ('/', [a, b]) if a.len() <= 2 && b.len() <= 2 => {
            let (day, month) = day_month(a, b)?;
            Some((Some(day), Some(month), None))
        }
        _ => None,
    }
}

/// The dates of `text` that give at least two of day, month and year:
/// in digits ("12/05/2023"), in Vietnamese ("ngày 12 tháng 5 năm 2023",
/// "tháng 5 năm 2023", "12 tháng 5") and in English ("May 12, 2023",
/// "12 May 2023", "May 2023"). A year alone is a number, not a date.
pub(crate) fn dates(text: &str) -> Vec<Date> {
    let toks = tokens(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let at = |k: usize| toks.get(k);
        let start = toks[i].1;
        let mut found: Option<Found> = None;
        if let (Token::Digits(d), _, _) = &toks[i] {
            if let Some((day, month, y)) = numeric_date(d) {
                found = Some((day, month, y, true, i));
            }
        }
        // ngày 12 tháng 5 [năm 2023] / 12 tháng 5 [năm 2023]
        let day_at = if word_is(at(i), "ngay") { i + 1 } else { i };
        if found.is_none() {
            if let (Some(day), true, Some(month)) = (small(at(day_at), 31), word_is(at(day_at + 1), "thang"), small(at(day_at + 2), 12)) {
                let y = if word_is(at(day_at + 3), "nam") { year(at(day_at + 4)) } else { None };
                found = Some((Some(day), Some(month), y, false, day_at + 2 + if y.is_some() { 2 } else { 0 }));
            }
        }
        // tháng 5 năm 2023
        if found.is_none() && word_is(at(i), "thang") {
            if let (Some(month), true, Some(y)) = (small(at(i + 1), 12), word_is(at(i + 2), "nam"), year(at(i + 3))) {
                found = Some((None, Some(month), Some(y), false, i + 3));
            }
        }
        // May 12[, 2023] / May 2023
        if found.is_none() {
            if let Some((Token::Word(w), _, _)) = at(i) {
                if let Some(month) = month_named(w) {
                    if let Some(day) = small(at(i + 1), 31) {
                        let y = year(at(i + 2));
                        found = Some((Some(day), Some(month), y, false, i + 1 + usize::from(y.is_some())));
                    } else if let Some(y) = year(at(i + 1)) {
                        found = Some((None, Some(month), Some(y), false, i + 1));
                    }
                }
            }
        }
        // 12 May [2023]
        if found.is_none() {
            if let (Some(day), Some((Token::Word(w), _, _))) = (small(at(i), 31), at(i + 1)) {
                if let Some(month) = month_named(w) {
                    let y = year(at(i + 2));
                    found = Some((Some(day), Some(month), y, false, i + 1 + usize::from(y.is_some())));
                }
            }
        }
        match found {
            Some((day, month, year, numeric, last)) => {
                out.push(Date { day, month, year, numeric, start, end: toks[last].2 });
                i = last + 1;
            }
            None => i += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<String> {
        numbers(text).into_iter().map(|f| f.key).collect()
    }

    #[test]
    fn numbers_compare_by_their_digits() {
        assert_eq!(keys("đạt 1.245,6 tỷ, tăng 12,4%; năm 2023"), vec!["1245.6", "12.4", "2023"]);
        assert_eq!(keys("1,245.6 and 05 and 1 245 and 2023 12 and 1,5 and 0.50"), vec!["1245.6", "5", "1245", "2023", "12", "1.5", "0.5"]);
        assert_eq!(keys("năm 2023 150 người, 1.234.567 đồng"), vec!["2023", "150", "1234567"]);
        let f = numbers("tăng 12,4 % và 3 phần trăm, 2023");
        assert_eq!(
            f.iter().map(|f| (f.percent, f.decimals, f.decimal_comma, f.written.as_str())).collect::<Vec<_>>(),
            [(true, 1, true, "12,4"), (true, 0, false, "3"), (false, 0, false, "2023")]
        );
        assert!(f[2].is_year() && !f[1].is_year());
        // Hours of the afternoon as hours of the day.
        assert_eq!(keys("from 8 AM to 5 PM, 12 p.m., 3 p.m. and 5 pmx"), vec!["8", "17", "12", "15", "5"]);
        assert_eq!(&"tăng 12,4 %"[f[0].start..f[0].end], "12,4");
    }

    fn parts(text: &str) -> Vec<(Option<u32>, Option<u32>, Option<u32>)> {
        dates(text).into_iter().map(|d| (d.day, d.month, d.year)).collect()
    }

    #[test]
    fn dates_in_digits_and_in_words_of_both_languages() {
        assert_eq!(parts("Hạn chót là 12/05/2023, họp ngày 5/12."), [(Some(12), Some(5), Some(2023)), (Some(5), Some(12), None)]);
        assert_eq!(parts("ngày 12 tháng 5 năm 1705 và tháng 6 năm 2020"), [(Some(12), Some(5), Some(1705)), (None, Some(6), Some(2020))]);
        assert_eq!(
            parts("naturalized on May 12, 1705; in June 2020; on 3 March"),
            [(Some(12), Some(5), Some(1705)), (None, Some(6), Some(2020)), (Some(3), Some(3), None)]
        );
        assert_eq!(
            parts("2023-05-12 and 12.05.2023 and 5/2023"),
            [(Some(12), Some(5), Some(2023)), (Some(12), Some(5), Some(2023)), (None, Some(5), Some(2023))]
        );
        // Not dates: a year alone, a decimal, a fraction of thousands, "may" as a verb.
        assert!(parts("năm 2023 đạt 1.245,6 tỷ; it may rain; 12,5%").is_empty());
    }

    #[test]
    fn dates_agree_as_dates_not_as_digits() {
        let one = |t: &str| dates(t)[0];
        assert!(!one("ngày 05/12").agrees_with(&one("ngày 12/05")), "day and month swapped");
        assert!(one("12 tháng 5 năm 1705").agrees_with(&one("May 12, 1705")));
        assert!(one("tháng 5 năm 1705").agrees_with(&one("May 12, 1705")), "less precise, the same month");
        assert!(!one("tháng 6 năm 1705").agrees_with(&one("May 12, 1705")));
        assert!(!one("12 May 1706").agrees_with(&one("May 12, 1705")));
        // An American text's 05/12/2023 is May 12 read in words.
        assert!(one("May 12, 2023").agrees_with(&one("05/12/2023")));
        assert!(!one("13/05/2023").agrees_with(&one("05/12/2023")));
    }
}

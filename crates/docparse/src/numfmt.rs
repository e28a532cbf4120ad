//! A cell's number format, where the row text keeps it: percentages and
//! dates written as the sheet shows them.
//!
//! What is kept, and why only that:
//!
//! - **Percentages** (`0%`, `0.0%`, `#,##0.00%`): a rate stored as `0.124`
//!   and shown as `12.4%` is read, asked about and quoted as `12.4%`; the
//!   bare `0.124` is a different number to a reader and to a search. The
//!   digits after the point are the format's; the point is `.`, as every
//!   other number of the raw text (the file does not say which separator
//!   its reader's locale shows).
//! - **Dates with a format of the file's own** (`dd/mm/yyyy`,
//!   `d "tháng" m "năm" yyyy`, `yyyy-mm-dd hh:mm`): the day, month and year
//!   in the sheet's order with its separators and words. The built-in date
//!   formats (ids 14 to 22, 45 to 47) are not the file's choice but the
//!   reader's locale's short date (id 14 is `m/d/yy` in an American Excel and
//!   `dd/mm/yyyy` in a Vietnamese one), so they stay ISO 8601, as do
//!   formats that name days or months (`ddd`, `mmm`: in which language?),
//!   use AM/PM, eras, fractions of seconds or elapsed time.
//! - **Everything else** (thousands separators, fixed decimals, currencies,
//!   fractions, scientific notation) stays the plain value: a separator
//!   the reader's locale would show differently (`1,245.6` or `1.245,6`)
//!   makes a number ambiguous in text that is searched and quoted, and the
//!   value itself is what a question about it needs.

/// How a cell's value is written, from its number format.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Shown {
    /// The plain value (numbers to 15 digits, dates ISO 8601).
    #[default]
    Plain,
    /// A percentage with this many digits after the point.
    Percent(usize),
    /// A date or time in the format's own layout.
    Date(Vec<Part>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    Text(String),
    Year2,
    Year4,
    Month(bool),
    Day(bool),
    Hour(bool),
    Minute(bool),
    Second(bool),
}

/// The date formats Excel defines by id, shown in the reader's locale.
fn builtin_date(id: u32) -> bool {
    matches!(id, 14..=22 | 27..=36 | 45..=47 | 50..=58)
}

/// The first section of a format code (the one for positive numbers), its
/// quoted text and escapes kept as literal pieces, its bracketed parts
/// (colours, conditions, locales) dropped. None for elapsed-time brackets.
fn tokens(code: &str) -> Option<Vec<(bool, String)>> {
    let mut out: Vec<(bool, String)> = Vec::new();
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ';' => break,
            '"' => {
                let mut lit = String::new();
                for q in chars.by_ref() {
                    if q == '"' {
                        break;
                    }
                    lit.push(q);
                }
                out.push((true, lit));
            }
            '\\' => {
                if let Some(n) = chars.next() {
                    out.push((true, n.to_string()));
                }
            }
            '[' => {
                let mut inner = String::new();
                for b in chars.by_ref() {
                    if b == ']' {
                        break;
                    }
                    inner.push(b);
                }
                let lower = inner.to_ascii_lowercase();
                if !lower.is_empty() && lower.chars().all(|c| matches!(c, 'h' | 'm' | 's')) {
                    return None;
                }
            }
            // Padding: `_x` is a space as wide as x, `*x` repeats x.
            '_' => {
                chars.next();
                out.push((true, " ".into()));
            }
            '*' => {
                chars.next();
            }
            other => out.push((false, other.to_string())),
        }
    }
    Some(out)
}

/// What the number format `code` (with its id, when built in) asks of a
/// cell's value.
pub(crate) fn shown(code: &str, id: Option<u32>) -> Shown {
    if id.is_some_and(builtin_date) {
        return Shown::Plain;
    }
    let Some(tokens) = tokens(code) else { return Shown::Plain };
    let bare: String = tokens.iter().filter(|(lit, _)| !lit).map(|(_, s)| s.as_str()).collect();
    if bare.contains('%') {
        let placeholders = |s: &str| s.chars().filter(|c| matches!(c, '0' | '#' | '?')).count();
        let digits = bare.split_once('.').map_or(0, |(_, after)| placeholders(after.split('%').next().unwrap_or("")));
        let numeric = bare.chars().all(|c| matches!(c, '0' | '#' | '?' | '.' | ',' | '%' | ' ' | '-' | '+' | '(' | ')'));
        return if numeric && placeholders(&bare) > 0 { Shown::Percent(digits.min(15)) } else { Shown::Plain };
    }
    date_parts(&tokens).map_or(Shown::Plain, Shown::Date)
}

/// The parts of a date format, or None when it is no date format this
/// module writes (see the module's documentation).
fn date_parts(tokens: &[(bool, String)]) -> Option<Vec<Part>> {
    // Runs of one letter (`yyyy`, `mm`), literals and separators.
    let mut runs: Vec<(Option<char>, usize, String)> = Vec::new();
    for (lit, s) in tokens {
        if *lit {
            runs.push((None, 0, s.clone()));
            continue;
        }
        let c = s.chars().next()?;
        let lower = c.to_ascii_lowercase();
        match lower {
            'y' | 'm' | 'd' | 'h' | 's' => match runs.last_mut() {
                Some((Some(l), n, _)) if *l == lower => *n += 1,
                _ => runs.push((Some(lower), 1, String::new())),
            },
            '/' | '-' | '.' | ' ' | ',' | ':' | '(' | ')' | '\'' => runs.push((None, 0, s.clone())),
            // AM/PM, eras, digits of fractions, text, anything else.
            _ => return None,
        }
    }
    let letters: Vec<(usize, char, usize)> = runs.iter().enumerate().filter_map(|(i, (l, n, _))| l.map(|l| (i, l, *n))).collect();
    if !letters.iter().any(|(_, l, _)| matches!(l, 'y' | 'd')) && !letters.iter().any(|(_, l, _)| *l == 'h') {
        return None;
    }
    let mut parts = Vec::new();
    for (i, (letter, n, text)) in runs.iter().enumerate() {
        let Some(letter) = letter else {
            parts.push(Part::Text(text.clone()));
            continue;
        };
        let at = letters.iter().position(|(j, _, _)| *j == i)?;
        let part = match (letter, n) {
            ('y', 1 | 2) => Part::Year2,
            ('y', 3 | 4) => Part::Year4,
            ('d', 1 | 2) => Part::Day(*n == 2),
            ('h', 1 | 2) => Part::Hour(*n == 2),
            ('s', 1 | 2) => Part::Second(*n == 2),
            // `m` is minutes after an hour or before seconds, else the month.
            ('m', 1 | 2) => {
                let after_hour = at > 0 && letters[at - 1].1 == 'h';
                let before_second = letters.get(at + 1).is_some_and(|l| l.1 == 's');
                if after_hour || before_second {
                    Part::Minute(*n == 2)
                } else {
                    Part::Month(*n == 2)
                }
            }
            // Day and month names, and anything longer.
            _ => return None,
        };
        parts.push(part);
    }
    Some(parts)
}

/// `value` (a fraction: 0.124) as a percentage with `digits` decimals.
pub(crate) fn percent(value: f64, digits: usize) -> String {
    // To 15 significant digits first (0.08125 * 100 is 8.125000000000002),
    // then half away from zero, as a spreadsheet rounds what it shows.
    let scaled: f64 = format!("{:.14e}", value * 100.0).parse().unwrap_or(value * 100.0);
    let unit = 10f64.powi(digits as i32);
    let rounded = if scaled.is_finite() && (scaled * unit).abs() < 1e15 { (scaled * unit).round() / unit } else { scaled };
    let text = format!("{rounded:.digits$}");
    // No "-0%" for a tiny negative rate.
    let text =
        if text.trim_start_matches('-').chars().all(|c| c == '0' || c == '.') { text.trim_start_matches('-').to_string() } else { text };
    format!("{text}%")
}

/// The date and time `(year, month, day, hour, minute, second)` in the
/// format's layout.
pub(crate) fn date(parts: &[Part], (y, mo, d, h, mi, s): (u16, u8, u8, u8, u8, u8)) -> String {
    let two = |v: u8, pad: bool| if pad { format!("{v:02}") } else { v.to_string() };
    parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => t.clone(),
            Part::Year2 => format!("{:02}", y % 100),
            Part::Year4 => format!("{y:04}"),
            Part::Month(pad) => two(mo, *pad),
            Part::Day(pad) => two(d, *pad),
            Part::Hour(pad) => two(h, *pad),
            Part::Minute(pad) => two(mi, *pad),
            Part::Second(pad) => two(s, *pad),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show_date(code: &str, when: (u16, u8, u8, u8, u8, u8)) -> Option<String> {
        match shown(code, Some(164)) {
            Shown::Date(parts) => Some(date(&parts, when)),
            _ => None,
        }
    }

    #[test]
    fn percentages_keep_their_digits() {
        assert_eq!(shown("0%", Some(9)), Shown::Percent(0));
        assert_eq!(shown("0.00%", Some(10)), Shown::Percent(2));
        assert_eq!(shown("#,##0.0%;[Red]-#,##0.0%", Some(164)), Shown::Percent(1));
        assert_eq!(percent(0.124, 1), "12.4%");
        assert_eq!(percent(0.124, 0), "12%");
        assert_eq!(percent(0.08125, 2), "8.13%");
        assert_eq!(percent(1.5, 0), "150%");
        assert_eq!(percent(-0.031, 1), "-3.1%");
        assert_eq!(percent(-0.00001, 1), "0.0%");
        // A percent sign in quoted text is no percentage.
        assert_eq!(shown("0\" %\"", Some(164)), Shown::Plain);
    }

    #[test]
    fn dates_in_the_files_own_format_are_written_in_it() {
        let day = (2024, 3, 5, 14, 7, 9);
        assert_eq!(show_date("dd/mm/yyyy", day).as_deref(), Some("05/03/2024"));
        assert_eq!(show_date("d/m/yy", day).as_deref(), Some("5/3/24"));
        assert_eq!(show_date("d \"tháng\" m \"năm\" yyyy", day).as_deref(), Some("5 tháng 3 năm 2024"));
        assert_eq!(show_date("[$-42A]dd/mm/yyyy;@", day).as_deref(), Some("05/03/2024"));
        assert_eq!(show_date("yyyy-mm-dd hh:mm", day).as_deref(), Some("2024-03-05 14:07"));
        assert_eq!(show_date("dd\\.mm\\.yyyy", day).as_deref(), Some("05.03.2024"));
        assert_eq!(show_date("hh:mm:ss", day).as_deref(), Some("14:07:09"));
        // m after h, or before s, is minutes.
        assert_eq!(show_date("h:m", day).as_deref(), Some("14:7"));
    }

    #[test]
    fn locale_dependent_and_unwritable_formats_stay_plain() {
        // Built-in short dates follow the reader's locale: ISO.
        assert_eq!(shown("mm-dd-yy", Some(14)), Shown::Plain);
        assert_eq!(shown("m/d/yy h:mm", Some(22)), Shown::Plain);
        // Names (which language?), AM/PM, fractions, elapsed time, numbers.
        for code in ["dd mmm yyyy", "dddd, d/m/yyyy", "h:mm AM/PM", "mm:ss.0", "[h]:mm:ss", "#,##0.00", "0.00", "General", "@"] {
            assert_eq!(shown(code, Some(164)), Shown::Plain, "{code}");
        }
    }
}

//! A cell's value as the row text writes it.

use calamine::Data;

use super::Kind;
use crate::numfmt::{self, Shown};

/// A cell's text on one line, whitespace runs as single spaces, already
/// as the raw text keeps it (NFC, no control characters: see
/// [`crate::segments::normalize`]), so the offsets of its value in its row
/// are the offsets in the document's text.
pub(super) fn one_line(text: &str) -> String {
    crate::segments::normalize(text).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A cell's text and kind; None for an empty cell. `format` is what its
/// number format asks (XLSX: percentages and the file's own date layouts,
/// see [`numfmt`]); plain for the other formats.
pub(super) fn value(data: &Data, format: &Shown) -> Option<(String, Kind)> {
    let (text, kind) = match (data, format) {
        (Data::Empty, _) => return None,
        (Data::String(s), _) => (one_line(s), Kind::Text),
        (Data::Int(i), Shown::Percent(digits)) => (numfmt::percent(*i as f64, *digits), Kind::Other),
        (Data::Float(f), Shown::Percent(digits)) if f.is_finite() => (numfmt::percent(*f, *digits), Kind::Other),
        (Data::Int(i), _) => (i.to_string(), Kind::Whole),
        (Data::Float(f), _) => {
            let whole = f.is_finite() && f.fract() == 0.0 && f.abs() < 1e15;
            (number(*f), if whole { Kind::Whole } else { Kind::Other })
        }
        (Data::Bool(b), _) => ((if *b { "TRUE" } else { "FALSE" }).to_string(), Kind::Other),
        (Data::DateTime(d), Shown::Date(parts)) if !d.is_duration() && d.as_f64() >= 0.0 => {
            let (y, mo, day, h, mi, s, _) = d.to_ymd_hms_milli();
            (numfmt::date(parts, (y, mo, day, h, mi, s)), Kind::Other)
        }
        (Data::DateTime(d), _) => (date(d), Kind::Other),
        (Data::DateTimeIso(s) | Data::DurationIso(s), _) => (s.clone(), Kind::Other),
        (Data::Error(e), _) => (e.to_string(), Kind::Other),
    };
    (!text.is_empty()).then_some((text, kind))
}

/// A number as a spreadsheet shows it unformatted: 15 significant digits,
/// no exponent, no trailing `.0`.
fn number(f: f64) -> String {
    if !f.is_finite() {
        return f.to_string();
    }
    let rounded: f64 = format!("{f:.14e}").parse().unwrap_or(f);
    rounded.to_string()
}

/// A date `2024-03-31`, a date and time `2024-03-31 14:05:00`, a time of
/// day `14:05:00`, a duration `36:00:00`.
fn date(d: &calamine::ExcelDateTime) -> String {
    if d.is_duration() {
        let secs = (d.as_f64() * 86_400.0).round() as i64;
        let sign = if secs < 0 { "-" } else { "" };
        let secs = secs.abs();
        return format!("{sign}{}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    }
    let (y, mo, day, h, mi, s, _) = d.to_ymd_hms_milli();
    let time = format!("{h:02}:{mi:02}:{s:02}");
    if d.as_f64() < 1.0 && d.as_f64() >= 0.0 {
        time
    } else if (h, mi, s) == (0, 0, 0) {
        format!("{y:04}-{mo:02}-{day:02}")
    } else {
        format!("{y:04}-{mo:02}-{day:02} {time}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_fifteen_digits_and_dates_read_iso() {
        assert_eq!(number(0.1 + 0.2), "0.3");
        assert_eq!(number(312.5), "312.5");
        assert_eq!(number(1245.0), "1245");
        assert_eq!(number(-0.000125), "-0.000125");
        let day = |v: f64| date(&calamine::ExcelDateTime::new(v, calamine::ExcelDateTimeType::DateTime, false));
        assert_eq!(day(45382.0), "2024-03-31");
        assert_eq!(day(45382.5), "2024-03-31 12:00:00");
        assert_eq!(day(0.25), "06:00:00");
        let span = calamine::ExcelDateTime::new(1.5, calamine::ExcelDateTimeType::TimeDelta, false);
        assert_eq!(date(&span), "36:00:00");
    }
}

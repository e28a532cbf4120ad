//! Spreadsheets: CSV and TSV (the `csv` crate), XLSX, XLS and ODS
//! (`calamine`), read into the blocks every format becomes.
//!
//! **Sections and rows.** Each sheet is a page of the document (`page_idx`
//! is its position in the workbook; a CSV is one sheet), and each non-empty
//! row one block, so one segment (two or more only for a row longer than
//! `max_segment_chars`), carrying its [`CellRange`]: `Doanh thu!A5:D5`.
//!
//! **A row's text.** A data row is written as its cells, each after its
//! column's name from the header row, in the sheet's column order:
//!
//! ```text
//! Chỉ tiêu | 2023 | 2024
//!
//! Chỉ tiêu: Doanh thu; 2023: 312.5; 2024: 351.9
//! ```
//!
//! Why this form: a row is retrieved, embedded, shown to the model and cited
//! on its own, far from the header row, and "312.5 | 351.9" says nothing
//! without its columns; `name: value` keeps each number next to what it is,
//! so the raw text itself (and so every chunk and every exact citation of a
//! row) carries the header, with no context added outside the text a
//! citation slices. Cells are joined by `; `, the form the answerer already
//! gives a Markdown or HTML table row labelled with its header
//! (`rag_answer::evidence::labelled_row`), and not by ` | `, which marks a
//! bare table row that needs a header row above it to mean anything (the
//! extractive answerer never answers with one). The header row itself is
//! kept as such (` | `), a segment of its own marked `header` in its range,
//! so the raw text is the whole table and a viewer can draw it; rows are
//! separate paragraphs, so no data row is ever taken for a header. A column
//! without a name in the header row, and every column of a sheet without
//! one, is named by its letter (`B: 312.5`), which is what the spreadsheet
//! itself calls it.
//!
//! **Values.** A formula contributes the value the file cached for it (what
//! the spreadsheet last showed); calamine does not apply number formats, so a
//! number is written as its value, to Excel's 15 significant digits (a cached
//! `0.30000000000000004` is `0.3`), and dates in ISO 8601 (`2024-03-31`),
//! which neither a Vietnamese (31/03) nor an English (3/31) reader misreads;
//! but an XLSX cell's format (calamine gives it for XLSX only) keeps a
//! percentage as shown (`12.4%`) and a date in a layout of the file's own
//! (`31/03/2024` for `dd/mm/yyyy`): see [`crate::numfmt`].
//! Text cells are kept as typed (a CSV's `312,5` stays `312,5`), their line
//! breaks and tabs turned into spaces so a row stays one line.
//!
//! **Bounds.** Zip-based workbooks (XLSX, ODS) are inflated once into
//! nothing, each entry bounded by its compressed size times the allowed
//! ratio and all together by `max_unzipped_bytes`, before calamine reads
//! them: a zip bomb is refused before it costs memory. XLSX sheets are
//! streamed cell by cell, and a sheet past `max_sheet_cells` non-empty
//! cells is refused as soon as the count passes the limit. XLS and ODS
//! sheets are materialised by calamine (its ODS reader caps cell expansion;
//! an XLS grid is bounded by the format's 65,536 × 256) and counted after;
//! the parse worker's address-space limit is what bounds them in memory.

use std::io::{Cursor, Read};
use std::panic::{catch_unwind, AssertUnwindSafe};

use calamine::{Data, Reader, SheetType};

use crate::cells::{column_name, CellRange, CellText};
use crate::numfmt::{self, Shown};
use crate::{Block, Format, Limits, OutputBudget, ParseError, OLE_MAGIC};

/// What a cell holds, for telling a header row from a data row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    /// A whole number: a count, or a year in a header ("2023").
    Whole,
    /// A fraction, a date, a boolean, an error.
    Other,
}

#[derive(Debug)]
struct SheetCell {
    row: u32,
    col: u32,
    text: String,
    kind: Kind,
}

/// One sheet as read: its name and its non-empty cells.
#[derive(Debug)]
struct SheetCells {
    name: String,
    cells: Vec<SheetCell>,
}

/// Counts a sheet's non-empty cells against the limit while they are read.
struct CellCount<'a> {
    sheet: &'a str,
    seen: u64,
    limit: u64,
}

impl CellCount<'_> {
    fn one_more(&mut self) -> Result<(), ParseError> {
        self.seen += 1;
        if self.seen > self.limit {
            return Err(ParseError::TooManyCells { sheet: self.sheet.to_string(), cells: self.seen, limit: self.limit });
        }
        Ok(())
    }
}

/// The blocks of a spreadsheet (one per non-empty row, in sheet order) and
/// its number of sheets.
pub(crate) fn blocks(
    format: Format,
    bytes: &[u8],
    filename: &str,
    limits: &Limits,
    budget: &mut OutputBudget,
) -> Result<(Vec<Block>, u32), ParseError> {
    let sheets = match format {
        Format::Csv => vec![delimited(bytes, None, filename, limits)?],
        Format::Tsv => vec![delimited(bytes, Some(b'\t'), filename, limits)?],
        Format::Xlsx if bytes.starts_with(OLE_MAGIC) => ole_as_xlsx(bytes, limits)?,
        Format::Xlsx => {
            check_archive(bytes, limits)?;
            contained(|| xlsx(bytes, limits))?
        }
        Format::Xls => contained(|| workbook::<calamine::Xls<_>>(bytes, limits, xls_error))?,
        Format::Ods => {
            check_archive(bytes, limits)?;
            contained(|| workbook::<calamine::Ods<_>>(bytes, limits, ods_error))?
        }
        other => return Err(ParseError::UnsupportedContentType { content_type: other.content_type().into(), filename: filename.into() }),
    };
    let mut blocks = Vec::new();
    for (idx, sheet) in sheets.iter().enumerate() {
        rows(idx as u32, sheet, budget, &mut blocks)?;
    }
    Ok((blocks, sheets.len().max(1) as u32))
}

/// calamine on a hostile file may panic (its own tests found such cases in
/// earlier releases): contained, the document fails instead of the worker.
fn contained<T>(read: impl FnOnce() -> Result<T, ParseError>) -> Result<T, ParseError> {
    catch_unwind(AssertUnwindSafe(read))
        .unwrap_or_else(|_| Err(ParseError::CorruptSpreadsheet("the workbook's structure could not be read".into())))
}

/// An OLE compound file sent as XLSX: a password-protected workbook (Office
/// stores the encrypted package in one), or an XLS with the wrong name,
/// which is read as what it is.
fn ole_as_xlsx(bytes: &[u8], limits: &Limits) -> Result<Vec<SheetCells>, ParseError> {
    contained(|| match calamine::Xlsx::new(Cursor::new(bytes)) {
        Err(calamine::XlsxError::Password) => Err(ParseError::EncryptedSpreadsheet),
        _ => workbook::<calamine::Xls<_>>(bytes, limits, xls_error),
    })
}

/// Inflates every entry of a zip-based workbook into nothing, bounded: each
/// entry by `max_compression_ratio` times its compressed size (plus 1 MiB
/// for small entries), all of them by `max_unzipped_bytes`. The sizes the
/// archive declares are not trusted: what is counted is what inflates.
fn check_archive(bytes: &[u8], limits: &Limits) -> Result<(), ParseError> {
    let corrupt = |e: &dyn std::fmt::Display| ParseError::CorruptSpreadsheet(format!("not a readable zip archive: {e}"));
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| corrupt(&e))?;
    let mut total: u64 = 0;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| corrupt(&e))?;
        let left = limits.max_unzipped_bytes.saturating_sub(total);
        let allowed = entry.compressed_size().saturating_mul(limits.max_compression_ratio).saturating_add(1024 * 1024).min(left);
        let inflated = std::io::copy(&mut (&mut entry).take(allowed + 1), &mut std::io::sink()).map_err(|e| corrupt(&e))?;
        if inflated > allowed {
            let why = if allowed == left {
                format!("the archive inflates past {} bytes (at {})", limits.max_unzipped_bytes, entry.name())
            } else {
                format!("{} inflates past {allowed} bytes from {} compressed", entry.name(), entry.compressed_size())
            };
            return Err(ParseError::DecompressionBomb(why));
        }
        total += inflated;
    }
    Ok(())
}

fn xlsx_error(e: calamine::XlsxError) -> ParseError {
    match e {
        calamine::XlsxError::Password => ParseError::EncryptedSpreadsheet,
        other => ParseError::CorruptSpreadsheet(other.to_string()),
    }
}

fn xls_error(e: calamine::XlsError) -> ParseError {
    match e {
        calamine::XlsError::Password => ParseError::EncryptedSpreadsheet,
        other => ParseError::CorruptSpreadsheet(other.to_string()),
    }
}

fn ods_error(e: calamine::OdsError) -> ParseError {
    match e {
        calamine::OdsError::Password => ParseError::EncryptedSpreadsheet,
        other => ParseError::CorruptSpreadsheet(other.to_string()),
    }
}

/// XLSX, streamed: a sheet's cells are read one by one (never the dense
/// grid calamine's ranges allocate, rows × columns of the cells' bounding
/// box), so only non-empty cells cost memory, and they are counted.
fn xlsx(bytes: &[u8], limits: &Limits) -> Result<Vec<SheetCells>, ParseError> {
    let mut book = calamine::Xlsx::new(Cursor::new(bytes)).map_err(xlsx_error)?;
    let sheets = book.sheets_metadata().to_vec();
    let mut out = Vec::with_capacity(sheets.len());
    for sheet in sheets {
        let mut cells = Vec::new();
        if sheet.typ == SheetType::WorkSheet {
            let mut count = CellCount { sheet: &sheet.name, seen: 0, limit: limits.max_sheet_cells };
            let mut reader = book.worksheet_cells_reader(&sheet.name).map_err(xlsx_error)?;
            // Each style's number format, as the row text keeps it.
            let shown: Vec<Shown> = reader
                .styles()
                .iter()
                .map(|s| s.number_format.as_ref().map_or(Shown::Plain, |f| numfmt::shown(&f.format_code, f.format_id)))
                .collect();
            while let Some((cell, style)) = reader.next_cell_with_style_id().map_err(xlsx_error)? {
                let (row, col) = cell.get_position();
                let format = shown.get(style).unwrap_or(&Shown::Plain);
                if let Some((text, kind)) = value(&Data::from(cell.get_value().clone()), format) {
                    count.one_more()?;
                    cells.push(SheetCell { row, col, text, kind });
                }
            }
        }
        out.push(SheetCells { name: sheet.name, cells });
    }
    Ok(out)
}

/// XLS and ODS: each sheet as calamine's range, its non-empty cells counted.
fn workbook<'b, R>(bytes: &'b [u8], limits: &Limits, error: fn(R::Error) -> ParseError) -> Result<Vec<SheetCells>, ParseError>
where
    R: Reader<Cursor<&'b [u8]>>,
{
    let mut book = R::new(Cursor::new(bytes)).map_err(error)?;
    let sheets = book.sheets_metadata().to_vec();
    let mut out = Vec::with_capacity(sheets.len());
    for sheet in sheets {
        let mut cells = Vec::new();
        if sheet.typ == SheetType::WorkSheet {
            let range = book.worksheet_range(&sheet.name).map_err(error)?;
            let (row0, col0) = range.start().unwrap_or((0, 0));
            let mut count = CellCount { sheet: &sheet.name, seen: 0, limit: limits.max_sheet_cells };
            for (r, c, data) in range.used_cells() {
                if let Some((text, kind)) = value(data, &Shown::Plain) {
                    count.one_more()?;
                    cells.push(SheetCell { row: row0 + r as u32, col: col0 + c as u32, text, kind });
                }
            }
        }
        out.push(SheetCells { name: sheet.name, cells });
    }
    Ok(out)
}

/// CSV (the delimiter guessed from the first line) or TSV. Invalid UTF-8 is
/// refused (`invalid_utf8`), not decoded lossily: replacement characters
/// would put text into the raw text, and so into citations, that the file
/// does not hold, and a file in a legacy code page (Excel's "CSV" on a
/// Vietnamese Windows is Windows-1258) would lose every diacritic without a
/// word. The reason names the first bad byte; "CSV UTF-8" is the fix.
fn delimited(bytes: &[u8], delimiter: Option<u8>, filename: &str, limits: &Limits) -> Result<SheetCells, ParseError> {
    let text = crate::utf8(bytes)?;
    let delimiter = delimiter.unwrap_or_else(|| guess_delimiter(text));
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        // A TSV has no quoting: a field may start with a quote mark.
        .quoting(delimiter != b'\t')
        .delimiter(delimiter)
        .from_reader(text.as_bytes());
    let name = sheet_name_of(filename);
    let mut count = CellCount { sheet: &name, seen: 0, limit: limits.max_sheet_cells };
    let mut cells = Vec::new();
    let mut record = csv::StringRecord::new();
    let mut row: u32 = 0;
    loop {
        match reader.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(ParseError::CorruptSpreadsheet(format!("row {}: {e}", row + 1))),
        }
        for (col, field) in record.iter().enumerate() {
            let text = one_line(field);
            if !text.is_empty() {
                count.one_more()?;
                cells.push(SheetCell { row, col: col as u32, text, kind: Kind::Text });
            }
        }
        row = row.saturating_add(1);
    }
    Ok(SheetCells { name, cells })
}

/// `,` unless the first line has more `;` (what Excel writes where the
/// decimal separator is a comma, as in Vietnamese) or tabs.
fn guess_delimiter(text: &str) -> u8 {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let count = |c: char| first.matches(c).count();
    [(b',', count(',')), (b';', count(';')), (b'\t', count('\t'))]
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .filter(|(_, n)| *n > 0)
        .map_or(b',', |(d, _)| d)
}

/// A CSV's one sheet is named as a spreadsheet program names it when it
/// opens the file: after the file, without its extension.
fn sheet_name_of(filename: &str) -> String {
    let base = filename.rsplit(['/', '\\']).next().unwrap_or(filename);
    let stem = base.rsplit_once('.').map_or(base, |(s, _)| s);
    if stem.trim().is_empty() {
        "Sheet1".to_string()
    } else {
        stem.to_string()
    }
}

/// A cell's text on one line, whitespace runs as single spaces, already
/// as the raw text keeps it (NFC, no control characters: see
/// [`crate::segments::normalize`]), so the offsets of its value in its row
/// are the offsets in the document's text.
fn one_line(text: &str) -> String {
    crate::segments::normalize(text).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A cell's text and kind; None for an empty cell. `format` is what its
/// number format asks (XLSX: percentages and the file's own date layouts,
/// see [`numfmt`]); plain for the other formats.
fn value(data: &Data, format: &Shown) -> Option<(String, Kind)> {
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

/// Whether the first non-empty row heads the table: names (at least one
/// text cell) and whole numbers only, the years of a financial table
/// ("Chỉ tiêu | 2023 | 2024"), with rows under it. A first row holding a
/// fraction, a date or a boolean is data. Every cell of a CSV is text, so
/// its first row is always the header, the format's convention. The rule can take a first row
/// of names and counts for a header; that costs its numbers their column
/// names, where missing a header would cost every other row's.
fn is_header(row: &[&SheetCell], more_rows: bool) -> bool {
    more_rows && row.iter().any(|c| c.kind == Kind::Text) && row.iter().all(|c| c.kind != Kind::Other)
}

/// A row's text as it is written, with where each cell's value is in it.
#[derive(Default)]
struct RowText {
    text: String,
    chars: u64,
    values: Vec<CellText>,
}

impl RowText {
    fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.chars += s.chars().count() as u64;
    }

    fn push_value(&mut self, col: u32, value: &str) {
        let char_start = self.chars;
        self.push(value);
        self.values.push(CellText { col, char_start, char_end: self.chars });
    }
}

/// The blocks of one sheet: its header row, then each data row labelled
/// with the header's names.
fn rows(page_idx: u32, sheet: &SheetCells, budget: &mut OutputBudget, out: &mut Vec<Block>) -> Result<(), ParseError> {
    let mut cells: Vec<&SheetCell> = sheet.cells.iter().collect();
    cells.sort_by_key(|c| (c.row, c.col));
    let (Some(first_col), Some(last_col)) = (cells.iter().map(|c| c.col).min(), cells.iter().map(|c| c.col).max()) else {
        return Ok(());
    };
    let mut by_row: Vec<&[&SheetCell]> = cells.chunk_by(|a, b| a.row == b.row).collect();
    let mut names: std::collections::HashMap<u32, &str> = std::collections::HashMap::new();
    if let Some(first) = by_row.first().copied() {
        if is_header(first, by_row.len() > 1) {
            let mut text = RowText::default();
            for (i, c) in first.iter().enumerate() {
                if i > 0 {
                    text.push(" | ");
                }
                text.push_value(c.col, &c.text);
            }
            push_row(out, budget, page_idx, sheet, first[0].row, (first_col, last_col), true, text)?;
            names = first.iter().map(|c| (c.col, c.text.trim_end_matches(':').trim())).collect();
            by_row.remove(0);
        }
    }
    for row in by_row {
        let mut text = RowText::default();
        for (i, c) in row.iter().enumerate() {
            if i > 0 {
                text.push("; ");
            }
            match names.get(&c.col).filter(|n| !n.is_empty()) {
                Some(name) => text.push(name),
                None => text.push(&column_name(c.col)),
            }
            text.push(": ");
            text.push_value(c.col, &c.text);
        }
        push_row(out, budget, page_idx, sheet, row[0].row, (first_col, last_col), false, text)?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn push_row(
    out: &mut Vec<Block>,
    budget: &mut OutputBudget,
    page_idx: u32,
    sheet: &SheetCells,
    row: u32,
    (first_col, last_col): (u32, u32),
    header: bool,
    text: RowText,
) -> Result<(), ParseError> {
    budget.take(text.chars as usize + 2)?;
    let cells = CellRange { sheet: sheet.name.clone(), first_row: row, first_col, last_row: row, last_col, header, values: text.values };
    out.push(Block { page_idx, text: text.text, glyphs: Vec::new(), cells: Some(cells) });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_named_as_spreadsheets_name_them() {
        let names: Vec<String> = [0, 1, 25, 26, 27, 51, 52, 701, 702, 16_383].into_iter().map(column_name).collect();
        assert_eq!(names, ["A", "B", "Z", "AA", "AB", "AZ", "BA", "ZZ", "AAA", "XFD"]);
    }

    #[test]
    fn a_range_is_labelled_sheet_bang_a1_and_spans_merge_on_one_sheet() {
        let row = |r: u32| CellRange {
            sheet: "Doanh thu".into(),
            first_row: r,
            first_col: 0,
            last_row: r,
            last_col: 3,
            header: false,
            values: vec![CellText { col: 0, char_start: 0, char_end: 4 }],
        };
        assert_eq!(row(4).label(), "Doanh thu!A5:D5");
        let one = CellRange { sheet: "S".into(), first_row: 1, first_col: 1, last_row: 1, last_col: 1, header: false, values: Vec::new() };
        assert_eq!(one.label(), "S!B2");
        let other = CellRange { sheet: "Khác".into(), ..row(9) };
        let span = CellRange::spanning([&row(4), &row(6), &other]);
        assert_eq!(span.as_ref().map(|r| r.label()), Some("Doanh thu!A5:D7".into()));
        assert_eq!(span.map(|r| r.values), Some(Vec::new()), "a span of rows has no cells of its own");
        assert_eq!(CellRange::spanning([]), None);
    }

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

    #[test]
    fn the_delimiter_is_guessed_from_the_first_line() {
        assert_eq!(guess_delimiter("a,b,c\n1;2"), b',');
        assert_eq!(guess_delimiter("\nChỉ tiêu;2023;2024\nDoanh thu;312,5;351,9"), b';');
        assert_eq!(guess_delimiter("a\tb\n"), b'\t');
        assert_eq!(guess_delimiter("one column"), b',');
        assert_eq!(sheet_name_of("reports/doanh-thu.2023.csv"), "doanh-thu.2023");
        assert_eq!(sheet_name_of(".csv"), "Sheet1");
    }
}

//! Reading a workbook into its sheets' non-empty cells: CSV and TSV with
//! the `csv` crate, XLSX streamed, XLS and ODS through calamine's ranges,
//! zip-based workbooks inflated under the bounds first.

use std::io::{Cursor, Read};
use std::panic::{catch_unwind, AssertUnwindSafe};

use calamine::{Data, Reader, SheetType};

use super::value::{one_line, value};
use super::{CellCount, Kind, SheetCell, SheetCells};
use crate::numfmt::{self, Shown};
use crate::{Limits, ParseError};

/// calamine on a hostile file may panic (its own tests found such cases in
/// earlier releases): contained, the document fails instead of the worker.
pub(super) fn contained<T>(read: impl FnOnce() -> Result<T, ParseError>) -> Result<T, ParseError> {
    catch_unwind(AssertUnwindSafe(read))
        .unwrap_or_else(|_| Err(ParseError::CorruptSpreadsheet("the workbook's structure could not be read".into())))
}

/// An OLE compound file sent as XLSX: a password-protected workbook (Office
/// stores the encrypted package in one), or an XLS with the wrong name,
/// which is read as what it is.
pub(super) fn ole_as_xlsx(bytes: &[u8], limits: &Limits) -> Result<Vec<SheetCells>, ParseError> {
    contained(|| match calamine::Xlsx::new(Cursor::new(bytes)) {
        Err(calamine::XlsxError::Password) => Err(ParseError::EncryptedSpreadsheet),
        _ => workbook::<calamine::Xls<_>>(bytes, limits, xls_error),
    })
}

/// Inflates every entry of a zip-based workbook into nothing, bounded: each
/// entry by `max_compression_ratio` times its compressed size (plus 1 MiB
/// for small entries), all of them by `max_unzipped_bytes`. The sizes the
/// archive declares are not trusted: what is counted is what inflates.
pub(super) fn check_archive(bytes: &[u8], limits: &Limits) -> Result<(), ParseError> {
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

pub(super) fn xls_error(e: calamine::XlsError) -> ParseError {
    match e {
        calamine::XlsError::Password => ParseError::EncryptedSpreadsheet,
        other => ParseError::CorruptSpreadsheet(other.to_string()),
    }
}

pub(super) fn ods_error(e: calamine::OdsError) -> ParseError {
    match e {
        calamine::OdsError::Password => ParseError::EncryptedSpreadsheet,
        other => ParseError::CorruptSpreadsheet(other.to_string()),
    }
}

/// XLSX, streamed: a sheet's cells are read one by one (never the dense
/// grid calamine's ranges allocate, rows × columns of the cells' bounding
/// box), so only non-empty cells cost memory, and they are counted.
pub(super) fn xlsx(bytes: &[u8], limits: &Limits) -> Result<Vec<SheetCells>, ParseError> {
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
pub(super) fn workbook<'b, R>(bytes: &'b [u8], limits: &Limits, error: fn(R::Error) -> ParseError) -> Result<Vec<SheetCells>, ParseError>
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
pub(super) fn delimited(bytes: &[u8], delimiter: Option<u8>, filename: &str, limits: &Limits) -> Result<SheetCells, ParseError> {
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

#[cfg(test)]
mod tests {
    use super::*;

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

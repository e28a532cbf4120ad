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

use crate::{Block, Format, Limits, OutputBudget, ParseError, OLE_MAGIC};

mod read;
mod rows;
#[cfg(test)]
mod tests;
mod value;

use read::{check_archive, contained, delimited, ods_error, ole_as_xlsx, workbook, xls_error, xlsx};
use rows::rows;

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

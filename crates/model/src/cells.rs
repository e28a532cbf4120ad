//! Where a spreadsheet row's cells are: the sheet rectangle a segment (or
//! a cited span) holds and each cell's characters in the text. A data type
//! of segments and citations, apart from the spreadsheet parser that makes
//! it (so segments do not depend on the parser).

use serde::{Deserialize, Serialize};

/// The cells a segment (or a cited span) holds: a rectangle of one sheet,
/// zero-based and inclusive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellRange {
    /// The sheet's name as the workbook has it (a CSV's: its file name
    /// without the extension).
    pub sheet: String,
    pub first_row: u32,
    pub first_col: u32,
    pub last_row: u32,
    pub last_col: u32,
    /// The sheet's header row: column names, no data.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub header: bool,
    /// Where each non-empty cell's value is in the text, in column order,
    /// so a viewer can draw the row as a table without reading the text
    /// back: in a segment, characters of the document's full text (the
    /// segment's own cells, cut to it when a long row is split); in a
    /// parser's block (`rag_docparse::Block`), characters of the block's
    /// text. Empty for a span of rows ([`CellRange::spanning`]) and in
    /// segments written before cells were recorded (serialised as
    /// `[col, char_start, char_end]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<CellText>,
}

/// One cell's value in a text: its zero-based column and its characters
/// `[char_start, char_end)` (Unicode scalar values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "(u32, u64, u64)", into = "(u32, u64, u64)")]
pub struct CellText {
    pub col: u32,
    pub char_start: u64,
    pub char_end: u64,
}

impl From<(u32, u64, u64)> for CellText {
    fn from((col, char_start, char_end): (u32, u64, u64)) -> Self {
        CellText { col, char_start, char_end }
    }
}

impl From<CellText> for (u32, u64, u64) {
    fn from(c: CellText) -> Self {
        (c.col, c.char_start, c.char_end)
    }
}

impl CellRange {
    /// The range in A1 notation: `A5:D5`, or `B2` for one cell.
    pub fn a1(&self) -> String {
        let first = format!("{}{}", column_name(self.first_col), self.first_row + 1);
        if (self.first_row, self.first_col) == (self.last_row, self.last_col) {
            return first;
        }
        format!("{first}:{}{}", column_name(self.last_col), self.last_row + 1)
    }

    /// `Doanh thu!A5:D5`: what a citation shows. The sheet name is not
    /// quoted as Excel quotes names with spaces; the range is what follows
    /// the last `!`, so the label reads back unambiguously.
    pub fn label(&self) -> String {
        format!("{}!{}", self.sheet, self.a1())
    }

    /// The smallest range holding every range of `ranges` that is on the
    /// first one's sheet (a span that reaches into another sheet is
    /// labelled by the sheet it starts on); None without ranges.
    pub fn spanning<'a>(ranges: impl IntoIterator<Item = &'a CellRange>) -> Option<CellRange> {
        let mut out: Option<CellRange> = None;
        for r in ranges {
            match &mut out {
                None => out = Some(CellRange { values: Vec::new(), ..r.clone() }),
                Some(o) if o.sheet == r.sheet => {
                    o.first_row = o.first_row.min(r.first_row);
                    o.first_col = o.first_col.min(r.first_col);
                    o.last_row = o.last_row.max(r.last_row);
                    o.last_col = o.last_col.max(r.last_col);
                    o.header &= r.header;
                }
                Some(_) => {}
            }
        }
        out
    }
}

/// The letters of zero-based column `col`: 0 is `A`, 25 `Z`, 26 `AA`.
pub fn column_name(col: u32) -> String {
    let mut n = col as u64 + 1;
    let mut letters = Vec::new();
    while n > 0 {
        let rem = ((n - 1) % 26) as u8;
        letters.push(b'A' + rem);
        n = (n - 1) / 26;
    }
    letters.iter().rev().map(|b| *b as char).collect()
}

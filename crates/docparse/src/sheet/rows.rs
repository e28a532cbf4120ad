//! A sheet's rows as blocks: the header row, then each data row labelled
//! with the header's names.

use super::{Kind, SheetCell, SheetCells};
use crate::cells::{column_name, CellRange, CellText};
use crate::{Block, OutputBudget, ParseError};

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
pub(super) fn rows(page_idx: u32, sheet: &SheetCells, budget: &mut OutputBudget, out: &mut Vec<Block>) -> Result<(), ParseError> {
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

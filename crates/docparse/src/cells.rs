//! Where a spreadsheet row's cells are: the sheet rectangle a segment (or
//! a cited span) holds and each cell's characters in the text. Data types
//! of segments and citations (`rag-model`'s), apart from the spreadsheet
//! parser that makes them.

pub use rag_model::cells::{column_name, CellRange, CellText};

-- Where a spreadsheet segment is: its sheet and cell range (one row, or the
-- header row), as rag_docparse::CellRange's JSON
-- {"sheet", "first_row", "first_col", "last_row", "last_col", "header"?},
-- zero-based and inclusive. NULL for every other format and for segments
-- projected before spreadsheets were read (those formats were refused).
ALTER TABLE segments ADD COLUMN cells JSONB;

//! Spreadsheet rows: chunks stay within one sheet, and each row carries
//! its header's column names in the text a citation slices.

use crate::{chunk, profile, WordCounter};
use rag_docparse::{char_slice, parse, Limits};
use sheet_inputs::{xlsx, Value::*};

#[path = "../../../docparse/src/tests/sheet_inputs.rs"]
mod sheet_inputs;

fn two_sheet_workbook() -> rag_docparse::ParsedDocument {
    let book = xlsx(&[
        (
            "Doanh thu",
            vec![vec![Text("Chỉ tiêu"), Number(2023.0)], vec![Text("Doanh thu"), Number(312.5)], vec![Text("Chi phí"), Number(20.0)]],
        ),
        ("Nhân sự", vec![vec![Text("Phòng"), Text("Số người")], vec![Text("Kế toán"), Number(12.0)]]),
    ]);
    parse(&book, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "bao-cao.xlsx", &Limits::default()).unwrap()
}

#[test]
fn a_chunk_never_holds_rows_of_two_sheets() {
    let doc = two_sheet_workbook();
    for spec in ["default@1", "fine@1"] {
        let p = profile(spec).unwrap();
        let chunks = chunk("doc-1", &doc.segments, &p, &WordCounter);
        // Everything fits one chunk's budget, but the sheets split it.
        assert_eq!(chunks.len(), 2, "{spec}: {chunks:?}");
        for c in &chunks {
            let rows = &doc.segments[c.segment_start_index as usize..=c.segment_end_index as usize];
            let sheets: std::collections::HashSet<_> = rows.iter().map(|s| s.cells.as_ref().unwrap().sheet.as_str()).collect();
            assert_eq!(sheets.len(), 1, "{spec}: {sheets:?}");
            assert_eq!(c.text, char_slice(&doc.full_text, c.char_start, c.char_end));
        }
        assert!(chunks[0].text.contains("Chỉ tiêu: Doanh thu; 2023: 312.5"), "{}", chunks[0].text);
        assert!(chunks[1].text.starts_with("Phòng | Số người"), "no overlap into the sheet before: {}", chunks[1].text);
    }
}

#[test]
fn rows_of_one_sheet_pack_under_the_budget_with_their_overlap() {
    let mut csv = String::from("Mã,Tên,Số lượng\n");
    for i in 0..40 {
        csv.push_str(&format!("SP{i},Sản phẩm {i},{i}\n"));
    }
    let doc = parse(csv.as_bytes(), "text/csv", "kho.csv", &Limits::default()).unwrap();
    let p = profile("fine@1").unwrap();
    let chunks = chunk("doc-1", &doc.segments, &p, &WordCounter);
    assert!(chunks.len() > 2);
    for pair in chunks.windows(2) {
        assert_eq!(pair[1].segment_start_index, pair[0].segment_end_index, "one row of overlap within a sheet");
    }
}

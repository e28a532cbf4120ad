//! The cell types a sheet's blocks carry (`crate::cells`), as a sheet
//! names them.

use crate::cells::{column_name, CellRange, CellText};

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

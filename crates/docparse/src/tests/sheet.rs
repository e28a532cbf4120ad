//! Spreadsheets: each sheet a page, each non-empty row a segment labelled
//! with its header's column names and carrying its sheet!range; poison
//! workbooks refused with their codes.

use super::sheet_inputs::*;
use crate::segments::{char_slice, span_geometry};
use crate::{detect_format, parse, sniff, Format, Limits, ParsedDocument};

const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const ODS: &str = "application/vnd.oasis.opendocument.spreadsheet";
const XLS: &str = "application/vnd.ms-excel";

/// The tiling every parser keeps: each segment is exactly its slice of the
/// full text, and they cover it end to end.
fn assert_tiles(doc: &ParsedDocument) {
    let mut at = 0;
    for s in &doc.segments {
        assert_eq!(s.char_start, at);
        assert_eq!(char_slice(&doc.full_text, s.char_start, s.char_end), s.text);
        at = s.char_end;
    }
    assert_eq!(at, doc.full_text.chars().count() as u64);
}

/// Each segment's text (without its paragraph separator) and its label.
fn rows(doc: &ParsedDocument) -> Vec<(String, String, u32)> {
    doc.segments
        .iter()
        .map(|s| (s.text.trim_end().to_string(), s.cells.as_ref().map(|c| c.label()).unwrap_or_default(), s.page_idx))
        .collect()
}

fn finance_book() -> Vec<Sheet<'static>> {
    vec![
        ("Doanh thu", finance_rows()),
        ("Nhân sự", vec![vec![Value::Text("Phòng"), Value::Text("Số người")], vec![Value::Text("Kế toán"), Value::Number(12.0)]]),
    ]
}

#[test]
fn xlsx_rows_carry_their_header_names_and_sheet_ranges() {
    let doc = parse(&xlsx(&finance_book()), XLSX, "bao-cao.xlsx", &Limits::default()).unwrap();
    assert_eq!(doc.format, Format::Xlsx);
    assert_eq!(doc.page_count, 2);
    assert_tiles(&doc);
    assert_eq!(
        rows(&doc),
        [
            ("Chỉ tiêu | 2023 | 2024 | Tổng | Ngày chốt".into(), "Doanh thu!A1:E1".into(), 0),
            // The formula contributes its cached value, the date reads ISO;
            // the empty row 3 is no segment.
            ("Chỉ tiêu: Doanh thu; 2023: 312.5; 2024: 351.9; Tổng: 664.4; Ngày chốt: 2024-03-31".into(), "Doanh thu!A2:E2".into(), 0),
            ("Chỉ tiêu: Lợi nhuận gộp; 2023: 87.25; 2024: 96.4; Tổng: 183.65; Ngày chốt: 2024-03-31".into(), "Doanh thu!A4:E4".into(), 0),
            ("Phòng | Số người".into(), "Nhân sự!A1:B1".into(), 1),
            ("Phòng: Kế toán; Số người: 12".into(), "Nhân sự!A2:B2".into(), 1),
        ]
    );
    assert!(doc.segments[0].cells.as_ref().unwrap().header);
    assert!(!doc.segments[1].cells.as_ref().unwrap().header);
    // A span inside a row is located by its row; one across rows by both.
    let row = &doc.segments[1];
    let g = span_geometry(&doc.segments, row.char_start + 12, row.char_start + 20);
    assert_eq!(g.cells.map(|c| c.label()).as_deref(), Some("Doanh thu!A2:E2"));
    let g = span_geometry(&doc.segments, row.char_start, doc.segments[2].char_end);
    assert_eq!(g.cells.map(|c| c.label()).as_deref(), Some("Doanh thu!A2:E4"));
}

#[test]
fn the_segments_json_keeps_the_range_and_old_segments_still_read() {
    let doc = parse(&xlsx(&finance_book()), XLSX, "bao-cao.xlsx", &Limits::default()).unwrap();
    let json = serde_json::to_value(&doc.segments[1]).unwrap();
    let at = doc.segments[1].char_start;
    let v = |col: u64, from: u64, to: u64| serde_json::json!([col, at + from, at + to]);
    assert_eq!(
        json["cells"],
        serde_json::json!({"sheet": "Doanh thu", "first_row": 1, "first_col": 0, "last_row": 1, "last_col": 4,
            "values": [v(0, 10, 19), v(1, 27, 32), v(2, 40, 45), v(3, 53, 58), v(4, 71, 81)]})
    );
    let old: crate::Segment =
        serde_json::from_str(r#"{"segment_index":0,"page_idx":0,"char_start":0,"char_end":5,"text":"Hello"}"#).unwrap();
    assert_eq!(old.cells, None);
    // Formats without cells write no `cells` at all.
    let text = parse(b"Hello", "text/plain", "a.txt", &Limits::default()).unwrap();
    assert!(serde_json::to_value(&text.segments[0]).unwrap().get("cells").is_none());
}

#[test]
fn ods_and_xls_read_like_xlsx() {
    let doc = parse(&ods(&finance_book()), ODS, "bao-cao.ods", &Limits::default()).unwrap();
    assert_tiles(&doc);
    let got = rows(&doc);
    assert_eq!(got.len(), 5, "{got:?}");
    assert_eq!(got[1].0, "Chỉ tiêu: Doanh thu; 2023: 312.5; 2024: 351.9; Tổng: 664.4; Ngày chốt: 2024-03-31");
    assert_eq!((got[1].1.as_str(), got[4].1.as_str()), ("Doanh thu!A2:E2", "Nhân sự!A2:B2"));

    let doc = parse(&xls(&finance_book()), XLS, "bao-cao.xls", &Limits::default()).unwrap();
    assert_eq!(doc.format, Format::Xls);
    assert_tiles(&doc);
    let got = rows(&doc);
    // The XLS writer of the test writes dates as plain numbers (no formats).
    assert_eq!(got[1].0, "Chỉ tiêu: Doanh thu; 2023: 312.5; 2024: 351.9; Tổng: 664.4; Ngày chốt: 45382");
    assert_eq!((got[3].1.as_str(), got[4].0.as_str()), ("Nhân sự!A1:B1", "Phòng: Kế toán; Số người: 12"));
    // An XLS sent under the XLSX name is read as what it is.
    let doc = parse(&xls(&finance_book()), XLSX, "bao-cao.xlsx", &Limits::default()).unwrap();
    assert_eq!(rows(&doc)[4].0, "Phòng: Kế toán; Số người: 12");
}

#[test]
fn csv_and_tsv_are_one_sheet_named_after_the_file() {
    // Vietnamese Excel writes `;` between cells and `,` in numbers.
    let csv = "\u{feff}Chỉ tiêu;2023;2024\r\nDoanh thu;312,5;351,9\r\n;;\r\n\"Lợi nhuận\r\ngộp\";87,25;\r\n";
    let doc = parse(csv.as_bytes(), "text/csv", "ket-qua.csv", &Limits::default()).unwrap();
    assert_eq!((doc.format, doc.page_count), (Format::Csv, 1));
    assert_tiles(&doc);
    assert_eq!(
        rows(&doc),
        [
            ("Chỉ tiêu | 2023 | 2024".into(), "ket-qua!A1:C1".into(), 0),
            ("Chỉ tiêu: Doanh thu; 2023: 312,5; 2024: 351,9".into(), "ket-qua!A2:C2".into(), 0),
            // A quoted line break stays in its cell, as a space.
            ("Chỉ tiêu: Lợi nhuận gộp; 2023: 87,25".into(), "ket-qua!A4:C4".into(), 0),
        ]
    );
    let tsv = "Tên\tGhi chú\nAn\t\"trích dẫn\" giữ nguyên\n";
    let doc = parse(tsv.as_bytes(), "text/tab-separated-values", "ds.tsv", &Limits::default()).unwrap();
    assert_eq!(rows(&doc)[1].0, "Tên: An; Ghi chú: \"trích dẫn\" giữ nguyên");
}

#[test]
fn a_sheet_without_a_header_row_names_columns_by_letter() {
    let book = [("Số liệu", vec![vec![Value::Text("Doanh thu"), Value::Number(312.5)], vec![Value::Text("Chi phí"), Value::Number(20.0)]])];
    let doc = parse(&xlsx(&book), XLSX, "a.xlsx", &Limits::default()).unwrap();
    assert_eq!(rows(&doc)[0].0, "A: Doanh thu; B: 312.5");
    assert_eq!(rows(&doc)[1], ("A: Chi phí; B: 20".into(), "Số liệu!A2:B2".into(), 0));
}

#[test]
fn spreadsheet_types_and_names_are_detected_and_sniffed() {
    assert_eq!(detect_format("text/csv; charset=utf-8", "a.csv"), Some(Format::Csv));
    assert_eq!(detect_format("text/tab-separated-values", "a.tsv"), Some(Format::Tsv));
    assert_eq!(detect_format(XLSX, "a.xlsx"), Some(Format::Xlsx));
    assert_eq!(detect_format(XLS, "a.xls"), Some(Format::Xls));
    assert_eq!(detect_format(ODS, "a.ods"), Some(Format::Ods));
    // Windows browsers send a CSV as Excel's type; curl as octet-stream.
    assert_eq!(detect_format(XLS, "a.csv"), Some(Format::Csv));
    assert_eq!(detect_format("text/plain", "a.tsv"), Some(Format::Tsv));
    assert_eq!(detect_format("application/octet-stream", "B.XLSX"), Some(Format::Xlsx));
    assert_eq!(detect_format("", "a.ods"), Some(Format::Ods));
    assert_eq!(detect_format("", "a.xls"), Some(Format::Xls));
    assert_eq!(detect_format("", "a.csv"), Some(Format::Csv));

    assert!(sniff(Format::Xlsx, "a.xlsx", &xlsx(&finance_book())[..64]).is_ok());
    assert!(sniff(Format::Xlsx, "a.xlsx", &encrypted_xlsx()[..64]).is_ok(), "the parser says it is encrypted");
    assert!(sniff(Format::Xlsx, "a.xlsx", b"Chi tieu,2023").is_err());
    assert!(sniff(Format::Xls, "a.xls", &xls(&finance_book())[..64]).is_ok());
    assert!(sniff(Format::Xls, "a.xls", &xlsx(&finance_book())[..64]).is_err());
    assert!(sniff(Format::Ods, "a.ods", &ods(&finance_book())[..64]).is_ok());
    assert!(sniff(Format::Csv, "a.csv", b"a,b\n1,2\n").is_ok());
    assert!(sniff(Format::Csv, "a.csv", &xlsx(&finance_book())[..64]).is_err());
}

#[test]
fn poison_workbooks_are_refused_with_their_codes() {
    let limits = Limits::default();
    let code = |bytes: &[u8], ct: &str, name: &str| parse(bytes, ct, name, &limits).unwrap_err().code();
    assert_eq!(code(&encrypted_xlsx(), XLSX, "khoa.xlsx"), "encrypted_spreadsheet");
    assert_eq!(code(&truncated_xlsx(), XLSX, "cut.xlsx"), "corrupt_spreadsheet");
    assert_eq!(code(b"PK\x03\x04 not really a zip", XLSX, "fake.xlsx"), "corrupt_spreadsheet");
    assert_eq!(code(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1 broken", XLS, "fake.xls"), "corrupt_spreadsheet");
    assert_eq!(code(&truncated_xlsx(), ODS, "cut.ods"), "corrupt_spreadsheet");
    // An archive without a workbook.
    assert_eq!(code(&ods(&finance_book()), XLSX, "odd.xlsx"), "corrupt_spreadsheet");
    // Invalid UTF-8 past the first rows: refused, not decoded lossily.
    let mut csv = b"Ten,Gia\nA,1\n".to_vec();
    csv.extend_from_slice(b"B\xe0\xff,2\n");
    let err = parse(&csv, "text/csv", "bad.csv", &limits).unwrap_err();
    assert_eq!(err.code(), "invalid_utf8");
    assert!(err.to_string().contains("at 13"), "{err}");
    // Nothing but empty cells.
    assert_eq!(code(b";;\n;;\n", "text/csv", "empty.csv"), "no_text");
}

#[test]
fn an_xlsx_zip_bomb_is_refused_before_it_inflates() {
    let limits = Limits { max_unzipped_bytes: 32 << 20, ..Limits::default() };
    let bomb = xlsx_bomb(64 << 20);
    assert!(bomb.len() < 256 * 1024, "{} bytes", bomb.len());
    let err = parse(&bomb, XLSX, "bomb.xlsx", &limits).unwrap_err();
    assert_eq!(err.code(), "decompression_bomb", "{err}");
    // All entries together are bounded too, whatever each one's ratio.
    let total = Limits { max_unzipped_bytes: 1 << 20, max_compression_ratio: 100_000, ..Limits::default() };
    let err = parse(&xlsx_bomb(4 << 20), XLSX, "bomb.xlsx", &total).unwrap_err();
    assert!(err.to_string().contains("the archive inflates past"), "{err}");
    // Under the limits the same padding is only a sheet.
    let doc = parse(&xlsx_bomb(1 << 20), XLSX, "ok.xlsx", &Limits::default()).unwrap();
    assert_eq!(rows(&doc)[1].0, "Chỉ tiêu: Doanh thu; 2023: 1");
}

#[test]
fn a_sheet_past_the_cell_limit_is_refused_by_its_count() {
    let limits = Limits { max_sheet_cells: 1_000, ..Limits::default() };
    // 251 rows of 4 cells = 1,004 cells.
    let err = parse(&long_csv(250), "text/csv", "big.csv", &limits).unwrap_err();
    assert_eq!(err.code(), "too_many_cells");
    assert!(err.to_string().contains("sheet \"big\""), "{err}");
    let rows: Vec<Vec<Value<'_>>> =
        (0..400).map(|i| vec![Value::Number(i as f64), Value::Text("x"), Value::Empty, Value::Number(1.0)]).collect();
    let err = parse(&xlsx(&[("Lớn", rows)]), XLSX, "big.xlsx", &limits).map(|d| d.segments.len()).unwrap_err();
    assert_eq!(err.code(), "too_many_cells");
    assert!(err.to_string().contains("1001"), "counted as they stream, stopped at the first over: {err}");
    // Empty cells do not count.
    assert!(parse(&long_csv(200), "text/csv", "ok.csv", &limits).is_ok());
}

#[test]
fn a_ten_thousand_row_sheet_parses_in_bounded_time() {
    let rows: Vec<Vec<Value<'_>>> =
        std::iter::once(vec![Value::Text("Mã"), Value::Text("Tên"), Value::Text("Số lượng"), Value::Text("Đơn giá")])
            .chain(
                (0..10_000)
                    .map(|i| vec![Value::Number(i as f64), Value::Text("Sản phẩm"), Value::Number((i % 97) as f64), Value::Number(1000.5)]),
            )
            .collect();
    let book = xlsx(&[("Kho", rows)]);
    let csv = long_csv(10_000);
    let started = std::time::Instant::now();
    let doc = parse(&book, XLSX, "kho.xlsx", &Limits::default()).unwrap();
    let xlsx_took = started.elapsed();
    let started = std::time::Instant::now();
    let from_csv = parse(&csv, "text/csv", "kho.csv", &Limits::default()).unwrap();
    let csv_took = started.elapsed();
    assert_eq!((doc.segments.len(), from_csv.segments.len()), (10_001, 10_001));
    assert_eq!(doc.segments[10_000].cells.as_ref().map(|c| c.label()).as_deref(), Some("Kho!A10001:D10001"));
    eprintln!("10,000 rows x 4 columns: XLSX ({} KiB) {xlsx_took:?}, CSV ({} KiB) {csv_took:?}", book.len() / 1024, csv.len() / 1024);
    // Generous: a debug build on a busy 2-core machine.
    assert!(xlsx_took.as_secs() < 30 && csv_took.as_secs() < 30);
}

/// Each cell's value as the segments place it: `(column, text)` per row.
fn cell_values(doc: &ParsedDocument) -> Vec<Vec<(u32, String)>> {
    doc.segments
        .iter()
        .map(|s| {
            let cells = s.cells.as_ref().unwrap();
            cells.values.iter().map(|v| (v.col, char_slice(&doc.full_text, v.char_start, v.char_end))).collect()
        })
        .collect()
}

#[test]
fn each_cell_is_placed_in_the_raw_text_so_a_viewer_can_draw_the_table() {
    let doc = parse(&xlsx(&finance_book()), XLSX, "bao-cao.xlsx", &Limits::default()).unwrap();
    let got = cell_values(&doc);
    let want = |cells: &[(u32, &str)]| cells.iter().map(|(c, t)| (*c, t.to_string())).collect::<Vec<_>>();
    assert_eq!(got[0], want(&[(0, "Chỉ tiêu"), (1, "2023"), (2, "2024"), (3, "Tổng"), (4, "Ngày chốt")]));
    assert_eq!(got[1], want(&[(0, "Doanh thu"), (1, "312.5"), (2, "351.9"), (3, "664.4"), (4, "2024-03-31")]));
    assert_eq!(got[4], want(&[(0, "Kế toán"), (1, "12")]));

    // Decomposed Vietnamese (as macOS writes it), a control character and
    // a skipped column: the values are placed in the text as it is kept.
    let csv = "Tên,,Ghi chú\nCa\u{0300} phe\u{302},,\u{7}đã  giao\n";
    let doc = parse(csv.as_bytes(), "text/csv", "don.csv", &Limits::default()).unwrap();
    assert_tiles(&doc);
    assert_eq!(rows(&doc)[1].0, "Tên: Cà phê; Ghi chú: đã giao");
    assert_eq!(cell_values(&doc)[1], want(&[(0, "Cà phê"), (2, "đã giao")]));

    // A row longer than a segment: each piece carries the cells in it, cut to it.
    let long = "x ".repeat(400);
    let csv = format!("A,B,C\nmột,{long},ba\n");
    let doc = parse(csv.as_bytes(), "text/csv", "dai.csv", &Limits::default()).unwrap();
    assert_tiles(&doc);
    let pieces: Vec<&crate::Segment> = doc.segments.iter().filter(|s| s.cells.as_ref().is_some_and(|c| c.first_row == 1)).collect();
    assert!(pieces.len() > 1, "the long row is split");
    let mut by_col: std::collections::BTreeMap<u32, String> = Default::default();
    for s in &pieces {
        for v in &s.cells.as_ref().unwrap().values {
            assert!(s.char_start <= v.char_start && v.char_end <= s.char_end, "{v:?} inside its segment");
            by_col.entry(v.col).or_default().push_str(&char_slice(&doc.full_text, v.char_start, v.char_end));
        }
    }
    assert_eq!(by_col.get(&0).map(String::as_str), Some("một"));
    assert_eq!(by_col.get(&1).map(String::as_str), Some(long.trim_end()));
    assert_eq!(by_col.get(&2).map(String::as_str), Some("ba"));
}

#[test]
fn xlsx_percentages_and_the_files_own_date_formats_are_kept_in_the_row_text() {
    let book = vec![(
        "Chi nhánh",
        vec![
            vec![Value::Text("Chi nhánh"), Value::Text("Tăng trưởng"), Value::Text("Ngày mở"), Value::Text("Ngày chốt")],
            // 0.124 shown `0.0%`; 45382 shown `dd/mm/yyyy` (the file's own
            // format) and with the built-in short date (the reader's locale: ISO).
            vec![Value::Text("Đà Nẵng"), Value::Percent(0.124), Value::DayFirst(45382.0), Value::Date(45382.0)],
            vec![Value::Text("Huế"), Value::Percent(-0.0305), Value::DayFirst(43101.0), Value::Number(0.5)],
        ],
    )];
    let doc = parse(&xlsx(&book), XLSX, "tang-truong.xlsx", &Limits::default()).unwrap();
    assert_tiles(&doc);
    let got: Vec<String> = rows(&doc).into_iter().map(|r| r.0).collect();
    assert_eq!(got[1], "Chi nhánh: Đà Nẵng; Tăng trưởng: 12.4%; Ngày mở: 31/03/2024; Ngày chốt: 2024-03-31");
    assert_eq!(got[2], "Chi nhánh: Huế; Tăng trưởng: -3.1%; Ngày mở: 01/01/2018; Ngày chốt: 0.5");
    // The table's cells are the formatted values.
    assert_eq!(cell_values(&doc)[1][1], (1, "12.4%".to_string()));
    // ODS and XLS have no formats through calamine: the values as they are.
    let doc = parse(&ods(&book), ODS, "tang-truong.ods", &Limits::default()).unwrap();
    assert_eq!(rows(&doc)[1].0, "Chi nhánh: Đà Nẵng; Tăng trưởng: 0.124; Ngày mở: 2024-03-31; Ngày chốt: 2024-03-31");
}

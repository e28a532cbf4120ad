//! Spreadsheets through the whole pipeline: XLSX, XLS, ODS and CSV uploaded
//! through the API reach `ingested`, a search finds a row, and an answer to
//! a question about a fact in a row cites it with its exact raw text and its
//! `Sheet!A2:E2`; their poison versions end `failed` with their code while
//! the others go through. The workbooks are written by the tests
//! (`crates/docparse/src/tests/sheet_inputs.rs`, shared with the parser's
//! unit tests).

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::api_client::*;
use crate::app::TestApp;
use crate::common::*;

#[path = "../../../docparse/src/tests/sheet_inputs.rs"]
pub(crate) mod sheet_inputs;
use sheet_inputs::{encrypted_xlsx, finance_rows, long_csv, ods, truncated_xlsx, xls, xlsx, xlsx_bomb, Value as Cell};

const WAIT: Duration = Duration::from_secs(120);
const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

/// A Vietnamese branch table as Excel writes CSV there: `;` between cells,
/// `,` in numbers, a byte-order mark.
const BRANCHES: &str = "\u{feff}Chi nhánh;Nhân viên;Doanh số quý 1\r\nHà Nội;42;1.250,5\r\nĐà Nẵng;17;640,2\r\nCần Thơ;9;310,75\r\n";

/// Every citation slices the raw text exactly, and carries the cell range
/// of the row it is in as the raw-text viewer shows it. Returns the ranges.
async fn check_citations(api: &Api, ws: &str, token: &str, answer: &Value) -> Vec<String> {
    let citations = answer["metadata"]["citations"].as_array().unwrap();
    assert!(!citations.is_empty(), "the answer cites: {answer}");
    let mut ranges = Vec::new();
    for c in citations {
        let doc = c["document_id"].as_str().unwrap();
        let (s, raw) = api.get(&format!("/v1/workspaces/{ws}/documents/{doc}/raw-text"), token).await;
        assert_eq!(s, StatusCode::OK, "{raw}");
        let segments = raw["segments"].as_array().unwrap();
        let full: String = segments.iter().map(|s| s["text"].as_str().unwrap()).collect();
        let (start, end) = (c["char_start"].as_u64().unwrap() as usize, c["char_end"].as_u64().unwrap() as usize);
        let slice: String = full.chars().skip(start).take(end - start).collect();
        assert!(start < end, "{c}");
        assert_eq!(slice, c["text"].as_str().unwrap(), "the citation is exactly the raw text at its range");
        let seg = &segments[c["segment_index"].as_u64().unwrap() as usize];
        assert!(seg["char_start"].as_u64().unwrap() as usize <= start && end <= seg["char_end"].as_u64().unwrap() as usize, "{c} in {seg}");
        assert_eq!(c["cell_range"], seg["cell_range"], "the citation's range is its row's: {c}");
        ranges.push(c["cell_range"].as_str().unwrap().to_string());
    }
    ranges
}

#[tokio::test(flavor = "multi_thread")]
async fn spreadsheets_are_ingested_and_cited_by_sheet_and_range_and_poison_ones_fail_with_their_code() {
    let t = TestEnv::new().await;
    // Lexical retrieval and extractive answers: no model needed. A small
    // cell limit, so the oversized sheet below stays small.
    let app = TestApp::spawn(&t, &[("EMBEDDER", "none"), ("PARSE_MAX_SHEET_CELLS", "2000")]).await;
    let api = Api::new(app.api_port);
    api.wait_ready().await;
    let alice = token(&t, "alice").await;
    let (s, ws) = api.post("/v1/workspaces", &alice, json!({"name": "Bảng tính"})).await;
    assert_eq!(s, StatusCode::CREATED, "{ws}");
    let ws = ws["id"].as_str().unwrap().to_string();

    // Invalid UTF-8 in the first 8 KiB is refused at the door, like any text.
    let (s, v) = api.upload(&ws, &alice, "latin.csv", "text/csv", b"Ten,Gia\nC\xe0 ph\xea,25\n".to_vec()).await;
    assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{v}");
    // Past it, the parser refuses it: no lossy decoding.
    let mut late_bad_byte = long_csv(400);
    late_bad_byte.extend_from_slice(b"SP99999,C\xe0 ph\xea,1,2\n");
    assert!(late_bad_byte.len() > 8192);
    let book = vec![
        ("Doanh thu", finance_rows()),
        ("Nhân sự", vec![vec![Cell::Text("Phòng"), Cell::Text("Số người")], vec![Cell::Text("Kế toán"), Cell::Number(12.0)]]),
    ];
    let cases: Vec<(&str, &str, Vec<u8>, &str)> = vec![
        ("khoa.xlsx", XLSX, encrypted_xlsx(), "encrypted_spreadsheet"),
        ("cut.xlsx", XLSX, truncated_xlsx(), "corrupt_spreadsheet"),
        // 64 MiB of the sheet from some 64 KiB: over the 200:1 ratio.
        ("bomb.xlsx", XLSX, xlsx_bomb(64 << 20), "decompression_bomb"),
        ("late.csv", "text/csv", late_bad_byte, "invalid_utf8"),
        ("kho.csv", "text/csv", long_csv(600), "too_many_cells"),
        ("bao-cao.xlsx", XLSX, xlsx(&book), "ingested"),
        ("chi-nhanh.csv", "application/vnd.ms-excel", BRANCHES.as_bytes().to_vec(), "ingested"),
        ("bao-cao.ods", "application/vnd.oasis.opendocument.spreadsheet", ods(&book), "ingested"),
        ("bao-cao.xls", "application/octet-stream", xls(&book), "ingested"),
    ];
    let mut ids = Vec::new();
    for (name, ct, bytes, _) in &cases {
        ids.push(api.upload_accepted(&ws, &alice, name, ct, bytes.clone()).await);
    }
    for ((name, _, _, want), id) in cases.iter().zip(&ids) {
        let d = api.settled(&ws, &alice, id, WAIT).await;
        match *want {
            "ingested" => assert_eq!(d["status"], "ingested", "{name}: {d}"),
            code => {
                assert_eq!((d["status"].as_str(), d["failure_code"].as_str()), (Some("failed"), Some(code)), "{name}: {d}");
                assert!(d["failure_reason"].as_str().is_some_and(|r| r.len() > 10), "{name}: {d}");
            }
        }
    }
    let id_of = |name: &str| ids[cases.iter().position(|c| c.0 == name).unwrap()].clone();
    let (xlsx_id, csv_id) = (id_of("bao-cao.xlsx"), id_of("chi-nhanh.csv"));
    // The CSV sent with Excel's type (as browsers on Windows send it) is a CSV.
    let (_, d) = api.get(&format!("/v1/workspaces/{ws}/documents/{csv_id}"), &alice).await;
    assert_eq!(d["content_type"], "text/csv");

    // The viewer's segments: one per row, with the sheet and range.
    for name in ["bao-cao.xlsx", "bao-cao.ods", "bao-cao.xls"] {
        let (_, raw) = api.get(&format!("/v1/workspaces/{ws}/documents/{}/raw-text", id_of(name)), &alice).await;
        let rows: Vec<(&str, &str, i64)> = raw["segments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["cell_range"].as_str().unwrap(), s["text"].as_str().unwrap().trim_end(), s["page_idx"].as_i64().unwrap()))
            .collect();
        assert_eq!(rows.len(), 5, "{name}: {rows:?}");
        assert_eq!(rows[0].0, "Doanh thu!A1:E1", "{name}");
        assert!(rows[1].1.starts_with("Chỉ tiêu: Doanh thu; 2023: 312.5; 2024: 351.9; Tổng: 664.4"), "{name}: {rows:?}");
        assert_eq!((rows[4].0, rows[4].1, rows[4].2), ("Nhân sự!A2:B2", "Phòng: Kế toán; Số người: 12", 1), "{name}");
        assert_eq!(raw["segments"][0]["header_row"], true);
        // And its cells, for the viewer's table: each value is its slice of
        // the raw text, in its column.
        let full: Vec<char> = raw["segments"].as_array().unwrap().iter().flat_map(|s| s["text"].as_str().unwrap().chars()).collect();
        let cells = |i: usize| -> Vec<(u64, String)> {
            let c = &raw["segments"][i]["cells"];
            c["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| {
                    let (a, b) = (v["char_start"].as_u64().unwrap() as usize, v["char_end"].as_u64().unwrap() as usize);
                    (v["col"].as_u64().unwrap(), full[a..b].iter().collect())
                })
                .collect()
        };
        let c = &raw["segments"][1]["cells"];
        assert_eq!(
            (c["sheet"].as_str(), c["first_row"].as_u64(), c["first_col"].as_u64(), c["last_col"].as_u64()),
            (Some("Doanh thu"), Some(1), Some(0), Some(4)),
            "{name}: {c}"
        );
        assert_eq!(cells(0)[..3], [(0, "Chỉ tiêu".into()), (1, "2023".into()), (2, "2024".into())], "{name}");
        assert_eq!(cells(1)[..3], [(0, "Doanh thu".into()), (1, "312.5".into()), (2, "351.9".into())], "{name}");
        assert_eq!(cells(4), [(0, "Kế toán".into()), (1, "12".into())], "{name}");
    }
    // The OpenAPI document describes them.
    let (_, spec, _) = api.call(reqwest::Method::GET, "/openapi.json", None, None).await;
    let schemas = &spec["components"]["schemas"];
    let cells = schemas["Segment"]["properties"]["cells"].to_string();
    assert!(cells.contains(r##""$ref":"#/components/schemas/SheetCells""##), "{cells}");
    assert!(schemas["CellValue"]["properties"]["char_start"].is_object(), "{}", schemas["CellValue"]);

    // A search finds the row, by its column's name and value.
    let (ok, out, err) = t.run(&["search", "Đà Nẵng nhân viên", "--workspace", &ws, "--mode", "lexical", "--json"]).await;
    assert!(ok, "{err}");
    let found: Value = serde_json::from_str(&out).unwrap();
    let top = &found["chunks"][0];
    assert_eq!(top["document_id"], csv_id.as_str(), "{found}");
    assert!(top["content"].as_str().unwrap().contains("Chi nhánh: Đà Nẵng; Nhân viên: 17; Doanh số quý 1: 640,2"), "{top}");

    // Answers cite the row with its sheet and range.
    let answer = api.ask_about(&ws, &alice, "Chi nhánh Đà Nẵng có bao nhiêu nhân viên?", &csv_id, WAIT).await;
    assert!(answer["content"].as_str().unwrap().contains("Nhân viên: 17"), "{answer}");
    let ranges = check_citations(&api, &ws, &alice, &answer).await;
    assert!(ranges.contains(&"chi-nhanh!A3:C3".to_string()), "{ranges:?}");

    let answer = api.ask_about(&ws, &alice, "Tổng doanh thu năm 2023 và 2024 là bao nhiêu?", &xlsx_id, WAIT).await;
    assert!(answer["content"].as_str().unwrap().contains("Tổng: 664.4"), "{answer}");
    let ranges = check_citations(&api, &ws, &alice, &answer).await;
    assert!(ranges.contains(&"Doanh thu!A2:E2".to_string()), "{ranges:?}");

    // The CLI's citation label is the range.
    let (ok, human, err) = t.run(&["ask", "Chi nhánh Đà Nẵng có bao nhiêu nhân viên?", "--workspace", &ws]).await;
    assert!(ok, "{err}");
    assert!(human.contains("chi-nhanh.csv chi-nhanh!A3:C3 segment 2 chars "), "{human}");
    assert!(human.contains("✓ exactly the raw text"), "{human}");
    t.cleanup().await;
}

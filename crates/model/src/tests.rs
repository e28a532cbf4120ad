use super::*;

#[test]
fn a_status_reads_back_from_its_name_and_its_rank_only_grows_along_the_pipeline() {
    use DocumentStatus::*;
    let all = [Uploaded, Parsed, Chunked, Ingested, Failed, Deleted];
    for s in all {
        assert_eq!(s.as_str().parse::<DocumentStatus>(), Ok(s));
        assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
    }
    assert!(all.windows(2).all(|w| w[0].rank() < w[1].rank()));
    assert_eq!("archived".parse::<DocumentStatus>().unwrap_err().to_string(), "unknown document status \"archived\"");
    assert_eq!(all.iter().filter(|s| s.in_progress()).count(), 3);
}

#[test]
fn a_cell_range_is_labelled_in_a1_notation() {
    let r = CellRange { sheet: "Doanh thu".into(), first_row: 4, first_col: 0, last_row: 4, last_col: 3, header: false, values: vec![] };
    assert_eq!(r.label(), "Doanh thu!A5:D5");
    assert_eq!([0, 25, 26, 701, 702].map(column_name), ["A", "Z", "AA", "ZZ", "AAA"]);
}

#[test]
fn the_wire_shape_is_the_one_blobs_and_rows_hold() {
    let f = LineFragment {
        page_idx: 0,
        char_start: 3,
        char_end: 5,
        rect: Rect { x0: 1., y0: 2., x1: 3., y1: 4. },
        axis: Axis::X,
        edges: vec![1., 2., 3.],
    };
    let v = serde_json::to_value(&f).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"page_idx": 0, "char_start": 3, "char_end": 5, "x0": 1.0, "y0": 2.0, "x1": 3.0, "y1": 4.0, "axis": "x", "edges": [1.0, 2.0, 3.0]})
    );
    let c = CellText { col: 2, char_start: 7, char_end: 9 };
    assert_eq!(serde_json::to_value(c).unwrap(), serde_json::json!([2, 7, 9]));
    // Absent optional parts are left out, and read back as absent.
    let s = Segment::new(0, 0, 0, "Title\n\n");
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v, serde_json::json!({"segment_index": 0, "page_idx": 0, "char_start": 0, "char_end": 7, "text": "Title\n\n"}));
    assert_eq!(serde_json::from_value::<Segment>(v).unwrap(), s);
}

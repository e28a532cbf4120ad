use std::io::Write;

use crate::geometry::Glyph;
use crate::segments::{assemble, Block};
use crate::{char_slice, parse, Axis, Format, Limits, ParseError, ParsedDocument, Rect};
use proptest::prelude::*;

fn check_tiling(doc: &ParsedDocument) {
    let mut expected_start = 0;
    let mut rebuilt = String::new();
    for (i, s) in doc.segments.iter().enumerate() {
        assert_eq!(s.segment_index as usize, i);
        assert_eq!(s.char_start, expected_start, "segments are contiguous");
        assert!(s.char_end > s.char_start, "no empty segment");
        assert_eq!(char_slice(&doc.full_text, s.char_start, s.char_end), s.text);
        expected_start = s.char_end;
        rebuilt.push_str(&s.text);
    }
    assert_eq!(rebuilt, doc.full_text, "segments tile the full text");
    assert_eq!(doc.char_count(), doc.full_text.chars().count() as u64);
    let pages: Vec<u32> = doc.segments.iter().map(|s| s.page_idx).collect();
    assert!(pages.windows(2).all(|w| w[0] <= w[1]), "pages in order");
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn page_of(doc: &ParsedDocument, needle: &str) -> u32 {
    doc.segments.iter().find(|s| s.text.contains(needle)).unwrap_or_else(|| panic!("{needle:?} not found in {:?}", doc.full_text)).page_idx
}

#[test]
fn plain_text_and_markdown_paragraphs() {
    let text = "Tiêu đề\r\n\r\nĐoạn một, dòng một.\nDòng hai.\n\n\n  \nĐoạn hai.";
    let doc = parse(text.as_bytes(), "text/plain", "a.txt", &Limits::default()).unwrap();
    check_tiling(&doc);
    assert_eq!(doc.format, Format::Text);
    assert_eq!(doc.segments.len(), 3);
    assert_eq!(doc.segments[1].text, "Đoạn một, dòng một.\nDòng hai.\n\n");
    assert_eq!(doc.segments[2].text, "Đoạn hai.");
    let md = parse(b"# Title\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", "text/markdown", "a.md", &Limits::default()).unwrap();
    check_tiling(&md);
    assert_eq!(md.segments.len(), 2, "a table without blank lines is one block");
    // Detection by extension when the type is generic.
    let by_ext = parse(b"hello", "application/octet-stream", "notes.md", &Limits::default()).unwrap();
    assert_eq!(by_ext.format, Format::Markdown);
}

#[test]
fn text_is_nfc_normalised() {
    // "ệ" written as e + combining circumflex + combining dot below.
    let decomposed = "Vi\u{0065}\u{0323}\u{0302}t Nam";
    let doc = parse(decomposed.as_bytes(), "text/plain", "a.txt", &Limits::default()).unwrap();
    assert_eq!(doc.full_text, "Việt Nam");
    assert_eq!(doc.full_text.chars().count(), 8);
}

#[test]
fn overlong_paragraphs_split_at_sentences() {
    let sentence_vi = "Doanh thu năm nay tăng mạnh nhờ xuất khẩu. ";
    let sentence_en = "Revenue grew on exports! ";
    let para: String = (0..40).map(|i| if i % 2 == 0 { sentence_vi } else { sentence_en }).collect();
    let limits = Limits { max_segment_chars: 200, ..Limits::default() };
    let doc = parse(para.as_bytes(), "text/plain", "a.txt", &limits).unwrap();
    check_tiling(&doc);
    assert!(doc.segments.len() > 5);
    for s in &doc.segments {
        assert!(s.text.chars().count() <= 200);
        let t = s.text.trim_end();
        assert!(t.ends_with('.') || t.ends_with('!'), "split at a sentence end: {t:?}");
    }
    // A single giant word still splits.
    let word = "x".repeat(1000);
    let doc = parse(word.as_bytes(), "text/plain", "a.txt", &limits).unwrap();
    check_tiling(&doc);
    assert!(doc.segments.iter().all(|s| s.text.chars().count() <= 200));
}

#[test]
fn html_visible_text_with_block_structure() {
    let html = r#"<html><head><title>T</title><style>p{color:red}</style><script>var x = "hidden";</script></head>
        <body><h1>Hướng   dẫn</h1><p>Đoạn <b>một</b> có
        chữ đậm.</p><ul><li>Mục 1</li><li>Mục 2</li></ul><noscript>no</noscript>
        <table><tr><td>Doanh thu</td><td>1.245,6</td></tr></table><p>A<br>B</p></body></html>"#;
    let doc = parse(html.as_bytes(), "text/html; charset=utf-8", "a.html", &Limits::default()).unwrap();
    check_tiling(&doc);
    let texts: Vec<&str> = doc.segments.iter().map(|s| s.text.trim_end()).collect();
    assert_eq!(texts, ["Hướng dẫn", "Đoạn một có chữ đậm.", "Mục 1", "Mục 2", "Doanh thu | 1.245,6", "A\nB"]);
    assert!(!doc.full_text.contains("hidden") && !doc.full_text.contains("color"));
}

#[test]
fn vietnamese_financial_report_pdf_keeps_pages() {
    let doc = parse(&fixture("bao-cao-tai-chinh-2023.pdf"), "application/pdf", "bc.pdf", &Limits::default()).unwrap();
    check_tiling(&doc);
    assert_eq!(doc.format, Format::Pdf);
    assert_eq!(doc.page_count, 3);
    assert!(doc.pages_without_text.is_empty());
    assert_eq!(page_of(&doc, "1.245,6 tỷ đồng"), 0);
    assert_eq!(page_of(&doc, "Vốn chủ sở hữu"), 1);
    assert_eq!(page_of(&doc, "Rủi ro tỷ giá"), 2);
    assert!(doc.full_text.contains("Lợi nhuận sau thuế"));
}

#[test]
fn a_page_without_text_layer_is_reported() {
    let doc = parse(&fixture("scanned-second-page.pdf"), "application/pdf", "s.pdf", &Limits::default()).unwrap();
    check_tiling(&doc);
    assert_eq!(doc.page_count, 2);
    assert_eq!(doc.pages_without_text, vec![1]);
    assert!(doc.full_text.contains("Trang một"));
}

struct FakeOcr(Result<&'static str, &'static str>);

impl crate::PageOcr for FakeOcr {
    fn recognize(&self, pdf: &[u8], page_idx: u32, _size: Option<&crate::PageSize>) -> Result<crate::OcrPage, crate::OcrError> {
        assert!(pdf.starts_with(b"%PDF"));
        assert_eq!(page_idx, 1, "only the page without a text layer goes to OCR");
        self.0.map(crate::OcrPage::from_text).map_err(|program| crate::OcrError::TimedOut { program: program.to_string() })
    }
}

#[test]
fn pages_without_text_layer_go_through_ocr_in_page_order() {
    let bytes = fixture("scanned-text-page.pdf");
    let ocr = FakeOcr(Ok("Lợi nhuận gộp đạt 312 tỷ đồng.\n\nRevenue grew in every region.\n"));
    let doc = crate::parse_with_ocr(&bytes, "application/pdf", "s.pdf", &Limits::default(), Some(&ocr)).unwrap();
    check_tiling(&doc);
    assert_eq!((doc.ocr_pages.clone(), doc.pages_without_text.clone()), (vec![1], vec![]));
    assert_eq!(page_of(&doc, "Trang một"), 0);
    assert_eq!(page_of(&doc, "Lợi nhuận gộp"), 1);
    assert_eq!(page_of(&doc, "Revenue grew"), 1);
    assert!(doc.full_text.find("Trang một").unwrap() < doc.full_text.find("Lợi nhuận").unwrap());

    // OCR that fails or reads nothing leaves the page marked, never silent.
    for ocr in [FakeOcr(Err("tesseract")), FakeOcr(Ok("  \n"))] {
        let doc = crate::parse_with_ocr(&bytes, "application/pdf", "s.pdf", &Limits::default(), Some(&ocr)).unwrap();
        assert_eq!((doc.ocr_pages.clone(), doc.pages_without_text.clone()), (vec![], vec![1]));
        let expected: Vec<(u32, String)> = ocr.0.err().map(|_| (1, "tesseract timed out".to_string())).into_iter().collect();
        assert_eq!(doc.ocr_failures, expected, "the failure is kept as its message");
    }
    // Without OCR the picture page is marked too.
    let doc = parse(&bytes, "application/pdf", "s.pdf", &Limits::default()).unwrap();
    assert_eq!(doc.pages_without_text, vec![1]);
}

#[test]
fn bad_pdfs_fail_with_codes() {
    let l = Limits::default();
    assert_eq!(parse(&fixture("encrypted.pdf"), "application/pdf", "e.pdf", &l).unwrap_err(), ParseError::EncryptedPdf);
    let err = parse(b"%PDF-1.7\n garbage garbage", "application/pdf", "c.pdf", &l).unwrap_err();
    assert_eq!(err.code(), "corrupt_pdf");
    let real = fixture("bao-cao-tai-chinh-2023.pdf");
    let err = parse(&real[..real.len() / 3], "application/pdf", "t.pdf", &l).unwrap_err();
    assert!(matches!(err.code(), "corrupt_pdf" | "no_text"), "{err}");
    assert_eq!(parse(b"not a pdf", "application/pdf", "x.pdf", &l).unwrap_err().code(), "corrupt_pdf");
}

#[test]
fn generic_failures_have_codes() {
    let l = Limits::default();
    assert_eq!(parse(b"", "text/plain", "a.txt", &l).unwrap_err(), ParseError::Empty);
    assert_eq!(parse(b"   \n\n ", "text/plain", "a.txt", &l).unwrap_err().code(), "no_text");
    assert_eq!(parse(b"\xff\xfe\x00bad", "text/plain", "a.txt", &l).unwrap_err().code(), "invalid_utf8");
    assert_eq!(parse(b"MZ\x90", "application/x-msdownload", "a.exe", &l).unwrap_err().code(), "unsupported_content_type");
    assert_eq!(parse(b"???", "application/octet-stream", "a.bin", &l).unwrap_err().code(), "unsupported_content_type");
    let small = Limits { max_bytes: 4, ..Limits::default() };
    assert_eq!(parse(b"hello", "text/plain", "a.txt", &small).unwrap_err().code(), "too_large");
}

fn docx(document_xml: &str, extra: Option<(&str, Vec<u8>)>) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        z.start_file("[Content_Types].xml", opts).unwrap();
        z.write_all(b"<Types/>").unwrap();
        z.start_file("word/document.xml", opts).unwrap();
        z.write_all(document_xml.as_bytes()).unwrap();
        if let Some((name, bytes)) = extra {
            z.start_file(name, opts).unwrap();
            z.write_all(&bytes).unwrap();
        }
        z.finish().unwrap();
    }
    buf.into_inner()
}

const W: &str = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;
const DOCX_TYPE: &str = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";

#[test]
fn docx_paragraphs_and_page_breaks() {
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><w:document {W}><w:body>
        <w:p><w:r><w:t>Báo cáo </w:t></w:r><w:r><w:t xml:space="preserve">thường niên &amp; kế hoạch</w:t></w:r></w:p>
        <w:p><w:r><w:t>Cột A</w:t><w:tab/><w:t>Cột B</w:t></w:r></w:p>
        <w:p><w:r><w:br w:type="page"/><w:t>Trang hai</w:t></w:r></w:p>
        <w:p></w:p>
        <w:p><w:r><w:t>Vẫn trang hai</w:t></w:r></w:p>
        </w:body></w:document>"#
    );
    let doc = parse(&docx(&xml, None), DOCX_TYPE, "a.docx", &Limits::default()).unwrap();
    check_tiling(&doc);
    let texts: Vec<&str> = doc.segments.iter().map(|s| s.text.trim_end()).collect();
    assert_eq!(texts, ["Báo cáo thường niên & kế hoạch", "Cột A\tCột B", "Trang hai", "Vẫn trang hai"]);
    let pages: Vec<u32> = doc.segments.iter().map(|s| s.page_idx).collect();
    assert_eq!(pages, [0, 0, 1, 1]);
    assert_eq!(doc.page_count, 2);
}

#[test]
fn docx_failures() {
    let l = Limits::default();
    assert_eq!(parse(b"PK\x03\x04 not really", DOCX_TYPE, "a.docx", &l).unwrap_err().code(), "corrupt_docx");
    let no_body = docx("<w:document/>", None);
    assert!(matches!(parse(&no_body, DOCX_TYPE, "a.docx", &l).unwrap_err().code(), "no_text"));
    // 20 MB of zeros compress ~1000x: refused before being inflated.
    let bomb = docx(
        &format!("<w:document {W}><w:body><w:p><w:r><w:t>x</w:t></w:r></w:p></w:body></w:document>"),
        Some(("word/media/bomb.bin", vec![0u8; 20 * 1024 * 1024])),
    );
    assert_eq!(parse(&bomb, DOCX_TYPE, "a.docx", &l).unwrap_err().code(), "decompression_bomb");
    let small = Limits { max_unzipped_bytes: 1000, ..Limits::default() };
    let big_xml = format!("<w:document {W}><w:body><w:p><w:r><w:t>{}</w:t></w:r></w:p></w:body></w:document>", "y ".repeat(2000));
    assert_eq!(parse(&docx(&big_xml, None), DOCX_TYPE, "a.docx", &small).unwrap_err().code(), "decompression_bomb");
}

#[test]
fn document_ai_json() {
    let text = "Trang 1: Doanh thu tăng.\nĐoạn hai.\nTrang 2: Lợi nhuận giảm.\n";
    // Indices count code points; proto3 JSON writes them as strings and omits 0.
    let json = serde_json::json!({
        "text": text,
        "pages": [
            {"pageNumber": 1, "paragraphs": [
                {"layout": {"textAnchor": {"textSegments": [{"endIndex": "25"}]}}},
                {"layout": {"textAnchor": {"textSegments": [{"startIndex": "25", "endIndex": "35"}]}}}
            ]},
            {"pageNumber": 2, "paragraphs": [
                {"layout": {"textAnchor": {"textSegments": [{"startIndex": 35, "endIndex": 60}]}}}
            ]}
        ]
    });
    let doc = parse(json.to_string().as_bytes(), "application/json", "ocr.json", &Limits::default()).unwrap();
    check_tiling(&doc);
    assert_eq!(doc.format, Format::DocAi);
    let texts: Vec<(&str, u32)> = doc.segments.iter().map(|s| (s.text.trim_end(), s.page_idx)).collect();
    assert_eq!(texts, [("Trang 1: Doanh thu tăng.", 0), ("Đoạn hai.", 0), ("Trang 2: Lợi nhuận giảm.", 1)]);
    let bad =
        serde_json::json!({"text": "abc", "pages": [{"paragraphs": [{"layout": {"textAnchor": {"textSegments": [{"endIndex": "99"}]}}}]}]});
    assert_eq!(parse(bad.to_string().as_bytes(), "application/json", "o.json", &Limits::default()).unwrap_err().code(), "invalid_docai");
    assert_eq!(parse(b"{\"foo\": 1}", "application/json", "o.json", &Limits::default()).unwrap_err().code(), "invalid_docai");
}

fn arb_text() -> impl Strategy<Value = String> {
    // Vietnamese letters (precomposed and combining), ASCII, digits,
    // punctuation, spaces, newlines and blank lines.
    let pieces = prop::sample::select(vec![
        "Việt",
        "Nam",
        "đồng",
        "ướ",
        "e\u{0323}\u{0302}",
        "ạ",
        "The",
        "revenue",
        "1.245,6",
        "%",
        ". ",
        "! ",
        "? ",
        " ",
        "  ",
        "\n",
        "\n\n",
        "\r\n",
        "\t",
        "x",
        "…",
        "“quote”",
        "中文",
        "🙂",
    ]);
    prop::collection::vec(pieces, 0..120).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn segments_always_tile_the_text(blocks in prop::collection::vec((0u32..4, arb_text()), 0..8), max in 16usize..300) {
        // Every character has a box of its own (x = its index in the block).
        let mut blocks: Vec<Block> = blocks
            .into_iter()
            .map(|(page_idx, text): (u32, String)| {
                let glyphs = (0..text.chars().count())
                    .map(|i| Some(Glyph::new(Rect { x0: i as f32, y0: 0.0, x1: i as f32 + 1.0, y1: 1.0 }, Axis::X)))
                    .collect();
                Block { page_idx, text, glyphs, cells: None }
            })
            .collect();
        blocks.sort_by_key(|b| b.page_idx);
        let (full, segments) = assemble(&blocks, max);
        let doc = ParsedDocument { format: Format::Text, full_text: full, segments, page_count: 4, pages_without_text: vec![], ocr_pages: vec![], ocr_failures: vec![], pages: vec![] };
        check_tiling(&doc);
        // Normalisation never loses the geometry: each visible character
        // lies in a fragment of its own segment, on its segment's page.
        for s in &doc.segments {
            for (i, c) in s.text.chars().enumerate() {
                let at = s.char_start + i as u64;
                if !c.is_whitespace() {
                    prop_assert!(s.boxes.iter().any(|f| f.char_start <= at && at < f.char_end && f.page_idx == s.page_idx), "{c:?} at {at} has no box");
                }
            }
        }
        for s in &doc.segments {
            // The separator may follow a piece that fills the budget.
            prop_assert!(s.text.trim().chars().count() <= max.max(16), "whitespace aside, a segment fits the budget");
            prop_assert!(!s.text.trim().is_empty());
        }
    }
}

#[test]
fn uploads_are_sniffed_by_their_bytes_and_names() {
    use crate::{sniff, Format};
    assert!(sniff(Format::Pdf, "a.pdf", b"%PDF-1.7\n...").is_ok());
    assert!(sniff(Format::Pdf, "a.pdf", b"<html>").unwrap_err().to_string().contains("PDF"));
    assert!(sniff(Format::Docx, "a.docx", b"PK\x03\x04rest").is_ok());
    assert!(sniff(Format::Docx, "a.docx", b"%PDF").is_err());
    assert!(sniff(Format::Text, "notes.txt", "Xin chào thế giới".as_bytes()).is_ok());
    // A head cut inside a character is still text.
    assert!(sniff(Format::Text, "notes.txt", &"thế".as_bytes()[..3]).is_ok());
    assert!(sniff(Format::Text, "a.txt", b"MZ\x90\x00").unwrap_err().to_string().contains("binary"));
    assert!(sniff(Format::Text, "a.txt", b"abc\0def").unwrap_err().to_string().contains("NUL"));
    assert!(sniff(Format::Text, "a.txt", b"\xff\xfe\x00b").is_err());
    assert!(sniff(Format::Text, "setup.exe", b"hello").unwrap_err().to_string().contains(".exe"));
    assert!(sniff(Format::Html, "x.SVG", b"<svg/>").is_err());
    assert!(sniff(Format::Text, "app.js", b"alert(1)").is_err());
    assert!(sniff(Format::DocAi, "ocr.json", b"  {\"text\": \"\"}").is_ok());
    assert!(sniff(Format::DocAi, "ocr.json", b"[1, 2]").is_err());
    assert!(sniff(Format::Html, "page.html", b"\xEF\xBB\xBF<html></html>").is_ok());
}

#[test]
fn a_sniff_refusal_is_a_type_whose_text_is_the_reason_given() {
    use crate::{sniff, Format, SniffError};
    let refusals: [(Format, &str, &[u8], SniffError, &str); 5] = [
        (Format::Text, "Setup.EXE", b"hello", SniffError::NeverADocument("exe".into()), "files ending in .exe are not documents"),
        (
            Format::Odp,
            "a.odp",
            b"%PDF",
            SniffError::NotZip("an ODP presentation"),
            "the file is not a zip archive, as an ODP presentation is",
        ),
        (
            Format::Csv,
            "a.csv",
            b"\x7fELF",
            SniffError::BinaryMagic("\x7fELF".into()),
            "the file is binary (it starts with \"\\u{7f}ELF\"), not text",
        ),
        (Format::Text, "a.txt", b"ab\xffc", SniffError::NotUtf8(2), "the file is not UTF-8 text (invalid byte at 2)"),
        (Format::DocAi, "a.json", b"[]", SniffError::NotJsonObject, "the file is not a JSON object, as Document AI output is"),
    ];
    for (format, filename, head, error, text) in refusals {
        assert_eq!(sniff(format, filename, head), Err(error.clone()));
        assert_eq!(error.to_string(), text);
    }
}

#[test]
fn every_format_is_listed_once_and_named() {
    let mut seen = Vec::new();
    for f in crate::Format::ALL {
        assert!(!seen.contains(f), "{f:?} twice");
        seen.push(*f);
        assert_eq!(crate::detect_format(f.content_type(), "x"), Some(*f), "{f:?}");
    }
    assert_eq!(seen.len(), 17, "a format missing from Format::ALL");
    let names = crate::Format::all_names();
    assert!(names.starts_with("PDF, DOCX, PPTX, ODP, HTML") && names.ends_with(", JPEG, TIFF or WebP"), "{names}");
}

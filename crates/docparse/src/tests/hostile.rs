//! Each hostile input parses in bounded stack, memory and time: refused
//! with its code, or read as far as it can be.

use super::hostile_inputs::*;
use crate::{parse, parse_with_ocr, Limits, OcrError, OcrPage, PageOcr, PageSize};

const DOCX_TYPE: &str = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";

/// On a thread with a small stack: a walk whose depth follows the input
/// overflows it long before 200,000 levels.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new().stack_size(256 * 1024).spawn(f).unwrap().join().unwrap()
}

#[test]
fn deeply_nested_html_is_walked_without_recursion() {
    let html = nested_html(200_000);
    // html5ever builds the tree with a stack of open elements; the walk
    // over it used to recurse once per level.
    let doc = on_small_stack(move || parse(&html, "text/html", "deep.html", &Limits::default())).unwrap();
    assert!(doc.full_text.contains("deep"), "{:?}", doc.full_text);
    assert!(doc.full_text.contains("after the nesting"));
}

#[test]
fn a_form_that_draws_itself_is_read_once() {
    let doc = on_small_stack(|| parse(&self_drawing_form_pdf(), "application/pdf", "form.pdf", &Limits::default())).unwrap();
    assert!(doc.full_text.contains("A page that draws a form"), "{:?}", doc.full_text);
    assert_eq!(doc.page_count, 1);
}

#[test]
fn inflating_past_the_limit_is_a_decompression_bomb() {
    let limits = Limits { max_unzipped_bytes: 4 << 20, ..Limits::default() };
    let bomb = flate_bomb_pdf(8 << 20);
    assert!(bomb.len() < 64 * 1024, "{} bytes", bomb.len());
    assert_eq!(parse(&bomb, "application/pdf", "bomb.pdf", &limits).unwrap_err().code(), "decompression_bomb");
    // All streams together are bounded too.
    let total = Limits { max_pdf_inflated_bytes: 4 << 20, ..Limits::default() };
    assert_eq!(parse(&bomb, "application/pdf", "bomb.pdf", &total).unwrap_err().code(), "decompression_bomb");
    // Spaces between `stream` and its line end (lopdf reads past them) do
    // not hide a stream from the count.
    let mut hidden = Vec::new();
    let at = bomb.windows(7).position(|w| w == b"stream\n").unwrap();
    hidden.extend_from_slice(&bomb[..at + 6]);
    hidden.extend_from_slice(b"   ");
    hidden.extend_from_slice(&bomb[at + 6..]);
    assert_eq!(parse(&hidden, "application/pdf", "bomb.pdf", &limits).unwrap_err().code(), "decompression_bomb");
    // Under the limits the same file is only blank.
    assert_eq!(parse(&flate_bomb_pdf(1 << 20), "application/pdf", "ok.pdf", &limits).unwrap_err().code(), "no_text");
}

#[test]
fn too_many_pages_are_refused_before_reading_them() {
    let limits = Limits { max_pages: 50, ..Limits::default() };
    let err = parse(&blank_pages_pdf(51), "application/pdf", "blank.pdf", &limits).unwrap_err();
    assert_eq!(err.code(), "too_many_pages");
    assert!(err.to_string().contains("51 pages"), "{err}");
}

/// Counts the pages it is asked for and finds nothing on them.
struct CountingOcr(std::sync::atomic::AtomicU32);

impl PageOcr for CountingOcr {
    fn recognize(&self, _pdf: &[u8], _page: u32, _size: Option<&PageSize>) -> Result<OcrPage, OcrError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(OcrPage::default())
    }
}

#[test]
fn ocr_reads_at_most_its_budget_of_pages() {
    let limits = Limits { ocr_max_pages: 5, ..Limits::default() };
    let ocr = CountingOcr(Default::default());
    let err = parse_with_ocr(&blank_pages_pdf(40), "application/pdf", "blank.pdf", &limits, Some(&ocr)).unwrap_err();
    assert_eq!(err.code(), "no_text");
    assert_eq!(ocr.0.load(std::sync::atomic::Ordering::SeqCst), 5);
    // Out of time: no page is read at all.
    let ocr = CountingOcr(Default::default());
    let spent = Limits { ocr_budget_secs: 0, ..Limits::default() };
    parse_with_ocr(&blank_pages_pdf(3), "application/pdf", "blank.pdf", &spent, Some(&ocr)).unwrap_err();
    assert_eq!(ocr.0.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[test]
fn overlapping_document_ai_anchors_are_refused_by_the_output_budget() {
    let json = docai_overlapping_anchors(2_000, 20_000);
    assert!(json.len() < 1 << 20, "{} bytes", json.len());
    let limits = Limits { min_output_chars: 1 << 20, ..Limits::default() };
    let err = parse(&json, "application/json", "ocr.json", &limits).unwrap_err();
    assert_eq!(err.code(), "output_too_large", "{err}");
    // A handful of overlapping paragraphs is still read.
    let fine = docai_overlapping_anchors(3, 2_000);
    assert!(!parse(&fine, "application/json", "ocr.json", &limits).unwrap().segments.is_empty());
}

#[test]
fn a_docx_that_lies_about_its_size_is_bounded_by_what_it_inflates() {
    let lying = lying_docx(8 << 20);
    let limits = Limits { max_unzipped_bytes: 2 << 20, ..Limits::default() };
    let err = parse(&lying, DOCX_TYPE, "lie.docx", &limits).unwrap_err();
    assert_eq!(err.code(), "decompression_bomb", "{err}");
    // The ratio is judged on the real compressed size too: 8 MiB from a
    // few KiB is over 200:1 even with the archive limit far away.
    let err = parse(&lying, DOCX_TYPE, "lie.docx", &Limits::default()).unwrap_err();
    assert_eq!(err.code(), "decompression_bomb", "{err}");
}

//! Slides: a chunk never holds the text of two slides, nor overlaps into
//! the slide before.

use crate::{chunk, profile, WordCounter};
use rag_docparse::{char_slice, parse, Limits};
use slide_inputs::{pptx, sales_deck, Shape, Slide, PPTX};

#[path = "../../../docparse/src/tests/slide_inputs.rs"]
mod slide_inputs;

#[test]
fn a_chunk_never_holds_two_slides() {
    let doc = parse(&pptx(&sales_deck()), PPTX, "ban-hang.pptx", &Limits::default()).unwrap();
    assert!(doc.segments.iter().all(|s| s.slide));
    for spec in ["default@1", "fine@1"] {
        let p = profile(spec).unwrap();
        let chunks = chunk("doc-1", &doc.segments, &p, &WordCounter);
        // The whole deck fits one chunk's budget, but its slides split it.
        assert_eq!(chunks.len(), 3, "{spec}: {chunks:?}");
        for (i, c) in chunks.iter().enumerate() {
            assert_eq!((c.page_start, c.page_end), (i as u32, i as u32), "{spec}");
            assert_eq!(c.text, char_slice(&doc.full_text, c.char_start, c.char_end));
        }
        assert!(chunks[1].text.starts_with("Doanh thu theo khu vực"), "no overlap into the slide before: {}", chunks[1].text);
    }
}

#[test]
fn a_long_slide_packs_under_the_budget_with_its_overlap() {
    let lines: Vec<String> = (0..60).map(|i| format!("Ý số {i}: doanh thu tăng đều qua từng quý của năm.")).collect();
    let body: Vec<&str> = lines.iter().map(String::as_str).collect();
    let deck = vec![Slide { shapes: vec![Shape::Title("Dài"), Shape::Body(body)], notes: vec![] }];
    let doc = parse(&pptx(&deck), PPTX, "dai.pptx", &Limits::default()).unwrap();
    let chunks = chunk("doc-1", &doc.segments, &profile("fine@1").unwrap(), &WordCounter);
    assert!(chunks.len() > 2);
    for pair in chunks.windows(2) {
        assert_eq!(pair[1].segment_start_index, pair[0].segment_end_index, "one paragraph of overlap within a slide");
    }
}

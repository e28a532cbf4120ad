//! Images (PNG, JPEG, TIFF, WebP): detected by type and extension, judged
//! by their bytes, refused as bombs from their headers, turned as their
//! EXIF says before recognition, every page of a TIFF read. Recognition is
//! a fake here that reports the ink it is shown as one word; the real
//! tesseract is tested in the parser stage and end to end.

use std::sync::Mutex;
use std::time::Instant;

use super::image_inputs::*;
use crate::raster::GrayImage;
use crate::{detect_format, parse, parse_with_ocr, sniff, Format, Limits, OcrError, OcrPage, OcrWord, ParseError, Rect};

/// Reports the bounding box of the dark pixels of each image it is shown
/// as one word, `ink<W>x<H>` (the image's size), and remembers the sizes.
#[derive(Default)]
struct InkOcr {
    seen: Mutex<Vec<(u32, u32)>>,
}

impl crate::PageOcr for InkOcr {
    fn recognize(&self, _pdf: &[u8], _page: u32, _size: Option<&crate::PageSize>) -> Result<OcrPage, OcrError> {
        panic!("an image is not a PDF")
    }

    fn recognize_image(&self, img: &GrayImage) -> Result<OcrPage, OcrError> {
        self.seen.lock().unwrap().push((img.width, img.height));
        let mut found: Option<(u32, u32, u32, u32)> = None;
        for y in 0..img.height {
            for x in 0..img.width {
                if img.pixels[(y * img.width + x) as usize] < 128 {
                    let f = found.get_or_insert((x, y, x, y));
                    *f = (f.0.min(x), f.1.min(y), f.2.max(x), f.3.max(y));
                }
            }
        }
        Ok(OcrPage {
            words: found
                .map(|(x0, y0, x1, y1)| OcrWord {
                    text: format!("ink{}x{}", img.width, img.height),
                    paragraph: 1,
                    line: 1,
                    rect: Some(Rect { x0: x0 as f32, y0: y0 as f32, x1: (x1 + 1) as f32, y1: (y1 + 1) as f32 }),
                })
                .into_iter()
                .collect(),
        })
    }
}

/// 80 × 40, a black bar at x 8..24, y 8..16 (top left).
fn bar() -> image::GrayImage {
    gray(80, 40, |x, y| (8..24).contains(&x) && (8..16).contains(&y))
}

fn close(a: Rect, b: Rect, tolerance: f32) -> bool {
    [(a.x0, b.x0), (a.y0, b.y0), (a.x1, b.x1), (a.y1, b.y1)].iter().all(|(p, q)| (p - q).abs() <= tolerance)
}

fn first_box(doc: &crate::ParsedDocument) -> (u32, Rect) {
    let f = doc.segments.iter().flat_map(|s| &s.boxes).next().expect("a box");
    (f.page_idx, f.rect)
}

fn code(r: Result<crate::ParsedDocument, ParseError>) -> &'static str {
    r.err().map(|e| e.code()).unwrap_or("parsed")
}

#[test]
fn images_are_detected_by_content_type_and_extension_and_judged_by_their_bytes() {
    assert_eq!(detect_format("image/png", "scan.png"), Some(Format::Png));
    assert_eq!(detect_format("image/jpeg", "photo.jpg"), Some(Format::Jpeg));
    assert_eq!(detect_format("image/jpg", "photo"), Some(Format::Jpeg));
    assert_eq!(detect_format("image/tiff", "fax.tif"), Some(Format::Tiff));
    assert_eq!(detect_format("image/webp", "x.webp"), Some(Format::Webp));
    for (name, format) in [
        ("a.PNG", Format::Png),
        ("a.jpeg", Format::Jpeg),
        ("a.JPG", Format::Jpeg),
        ("a.tiff", Format::Tiff),
        ("a.tif", Format::Tiff),
        ("a.webp", Format::Webp),
    ] {
        assert_eq!(detect_format("application/octet-stream", name), Some(format), "{name}");
        assert_eq!(detect_format("", name), Some(format), "{name}");
        assert!(format.is_image());
        assert_eq!(detect_format(format.content_type(), "no-extension"), Some(format));
    }
    assert_eq!(detect_format("image/gif", "a.gif"), None);
    assert_eq!(detect_format("application/octet-stream", "a.gif"), None);

    let png_bytes = png(&bar());
    assert_eq!(sniff(Format::Png, "a.png", &png_bytes), Ok(()));
    // Judged by content: a PNG named .jpg is read as what it is.
    assert_eq!(sniff(Format::Jpeg, "a.jpg", &png_bytes), Ok(()));
    assert_eq!(sniff(Format::Tiff, "a.tif", &tiff(&[bar()], None)), Ok(()));
    assert_eq!(sniff(Format::Webp, "a.webp", &webp(&bar())), Ok(()));
    assert!(sniff(Format::Png, "a.png", b"hello, I am text").unwrap_err().to_string().contains("not a PNG, JPEG, TIFF or WebP image"));
    assert!(sniff(Format::Png, "a.gif", b"GIF89a").is_err());
    // An image is not a text, whatever it is called.
    assert!(sniff(Format::Text, "a.txt", &png_bytes).is_err());
}

#[test]
fn a_decompression_bomb_is_refused_from_its_header_before_decoding() {
    let bomb = png_bomb(20_000);
    assert!(bomb.len() < 1 << 20, "a bomb is small: {} bytes", bomb.len());
    let ocr = InkOcr::default();
    let started = Instant::now();
    let err = parse_with_ocr(&bomb, "image/png", "bomb.png", &Limits::default(), Some(&ocr)).unwrap_err();
    assert!(started.elapsed().as_millis() < 500, "refused at once, not decoded: {:?}", started.elapsed());
    assert_eq!(err.code(), "image_too_large");
    let message = err.to_string();
    assert!(message.contains("20000 × 20000 pixels") && message.contains("50000000"), "{message}");
    assert!(ocr.seen.lock().unwrap().is_empty());
    // The header alone decides: this one's data would not even decode.
    let cut = png_header_only(30_000, 30_000);
    assert_eq!(code(parse_with_ocr(&cut, "image/png", "cut.png", &Limits::default(), Some(&ocr))), "image_too_large");
    // The limit is a setting.
    let small = Limits { max_image_pixels: 3_000, ..Limits::default() };
    assert_eq!(code(parse_with_ocr(&png(&bar()), "image/png", "bar.png", &small, Some(&ocr))), "image_too_large");
    // Every page of a TIFF is checked before any is read.
    let pages = tiff(&[bar(), gray(100, 100, |_, _| false)], None);
    let limits = Limits { max_image_pixels: 5_000, ..Limits::default() };
    match parse_with_ocr(&pages, "image/tiff", "two.tif", &limits, Some(&ocr)) {
        Err(ParseError::ImageTooLarge { page: 2, width: 100, height: 100, limit: 5_000 }) => {}
        other => panic!("{other:?}"),
    }
    assert!(ocr.seen.lock().unwrap().is_empty(), "nothing was decoded");
}

#[test]
fn a_bomb_in_a_png_s_metadata_inflates_no_more_than_the_header_allowance() {
    // 1 GiB of ICC profile in about 1 MiB: the decoder reads the profile
    // with the header, before the picture's 1 × 1 pixels could say
    // anything. It may inflate HEADER_ALLOC (64 MiB) of it, no more; the
    // png crate then drops the profile and reads the picture.
    let bomb = png_iccp_bomb(1024);
    assert!(bomb.len() < 2 << 20, "a bomb is small: {} bytes", bomb.len());
    let ocr = InkOcr::default();
    let (doc, peak) = super::peak::peak_bytes(|| parse_with_ocr(&bomb, "image/png", "icc.png", &Limits::default(), Some(&ocr)));
    assert_eq!(doc.unwrap().full_text.trim(), "ink1x1");
    let bound = crate::raster::HEADER_ALLOC + 2 * bomb.len() as u64 + (4 << 20);
    assert!(peak <= bound, "held {peak} bytes at once, over {bound}");
    assert!(peak >= 32 << 20, "the profile was inflated up to the allowance, so this test measures it: {peak}");
}

#[test]
fn an_image_is_bounded_in_bytes_and_greyed_before_it_is_turned() {
    // 16-bit RGBA: 8 bytes a pixel. 100 × 100 fits 10,000 pixels, but its
    // 80,000 bytes are over 4 bytes a pixel of the limit.
    let deep = image::ImageBuffer::<image::Rgba<u16>, _>::from_pixel(100, 100, image::Rgba([0, 0, 0, 65535]));
    let mut bytes = std::io::Cursor::new(Vec::new());
    deep.write_to(&mut bytes, image::ImageFormat::Png).unwrap();
    let limits = Limits { max_image_pixels: 10_000, ..Limits::default() };
    let ocr = InkOcr::default();
    match parse_with_ocr(bytes.get_ref(), "image/png", "deep.png", &limits, Some(&ocr)) {
        Err(e @ ParseError::ImageTooDeep { page: 1, width: 100, height: 100, bytes: 80_000, limit: 40_000, .. }) => {
            assert_eq!(e.code(), "image_too_large");
            assert!(e.to_string().contains("Rgba16"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    let roomy = Limits { max_image_pixels: 20_000, ..Limits::default() };
    assert_eq!(parse_with_ocr(bytes.get_ref(), "image/png", "deep.png", &roomy, Some(&ocr)).unwrap().full_text.trim(), "ink100x100");

    // A 1000 × 500 RGBA picture turned a quarter by its EXIF: decoded (2
    // MB), greyed (1 MB, then 0.5 MB) and only then turned (0.5 MB more);
    // turning it first would have held 4 MB.
    let rgba = image::RgbaImage::from_fn(500, 1000, |x, y| image::Rgba([((x + y) % 256) as u8, 0, 0, 255]));
    let mut png = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgba8(rgba).write_to(&mut png, image::ImageFormat::Png).unwrap();
    let png = with_exif(png.into_inner(), 6);
    let (grey, peak) = super::peak::peak_bytes(|| crate::raster::page_gray(&png, 0, &Limits::default()).unwrap());
    assert_eq!((grey.width, grey.height), (1000, 500), "turned");
    let decoded = 500 * 1000 * 4;
    assert!(peak <= decoded + 2 * 500_000 + (256 << 10), "held {peak} bytes at once");
}

#[test]
fn a_webp_chunk_longer_than_the_file_is_refused_before_it_is_allocated() {
    let mut bytes = webp(&bar());
    // An EXIF chunk declaring 3 GiB, at the end of the file.
    bytes.extend_from_slice(b"EXIF");
    bytes.extend_from_slice(&(3u32 << 30).to_le_bytes());
    let riff = (bytes.len() - 8) as u32;
    bytes[4..8].copy_from_slice(&riff.to_le_bytes());
    let err = parse_with_ocr(&bytes, "image/webp", "x.webp", &Limits::default(), Some(&InkOcr::default())).unwrap_err();
    assert_eq!(err.code(), "corrupt_image");
    assert!(err.to_string().contains("EXIF chunk of 3221225472 bytes runs past the end"), "{err}");
}

#[test]
fn exif_orientation_is_applied_before_ocr_and_the_boxes_are_on_the_turned_image() {
    // The phone stored the picture sideways and says "turn 90° clockwise".
    let jpeg = jpeg_with_orientation(&stored_for_orientation_6(&bar()), 6);
    let ocr = InkOcr::default();
    let doc = parse_with_ocr(&jpeg, "image/jpeg", "photo.jpg", &Limits::default(), Some(&ocr)).unwrap();
    assert_eq!(*ocr.seen.lock().unwrap(), vec![(80, 40)], "recognition saw the picture upright");
    assert_eq!(doc.format, Format::Jpeg);
    assert_eq!((doc.page_count, doc.ocr_pages.clone()), (1, vec![0]));
    let page = &doc.pages[0];
    assert_eq!((page.width, page.height, page.unit.as_str()), (80.0, 40.0, "px"));
    let (page_idx, rect) = first_box(&doc);
    assert_eq!(page_idx, 0);
    // JPEG blurs edges by a pixel or so.
    assert!(close(rect, Rect { x0: 8.0, y0: 8.0, x1: 24.0, y1: 16.0 }, 2.0), "{rect:?}");
    assert_eq!(doc.full_text.trim_end(), "ink80x40");

    // Without the tag, the same pixels are a portrait picture.
    let plain = jpeg_with_orientation(&stored_for_orientation_6(&bar()), 1);
    let doc = parse_with_ocr(&plain, "image/jpeg", "photo.jpg", &Limits::default(), Some(&ocr)).unwrap();
    assert_eq!((doc.pages[0].width, doc.pages[0].height), (40.0, 80.0));

    // What the page-image endpoint draws on is the turned picture too.
    let rgb = crate::raster::page_rgb(&jpeg, 0, &Limits::default(), 4_000, Some((80, 40))).unwrap();
    assert_eq!((rgb.width, rgb.height, rgb.rgb.len()), (80, 40, 80 * 40 * 3));
    assert!(rgb.rgb[(12 * 80 + 12) * 3] < 64, "the bar is at the top left");
    let half = crate::raster::page_rgb(&jpeg, 0, &Limits::default(), 40, None).unwrap();
    assert_eq!((half.width, half.height), (40, 20), "scaled down to the longest side allowed");
    assert!(half.rgb[(5 * 40 + 7) * 3] < 96, "shrunk, then turned: the bar is still at the top left");
    assert!(half.rgb[(15 * 40 + 30) * 3] > 160, "and the rest is white");
    // Its size as stored (before the turn) is not the size it was parsed as.
    let err = crate::raster::page_rgb(&jpeg, 0, &Limits::default(), 4_000, Some((40, 80))).unwrap_err();
    assert!(err.to_string().contains("says 80 × 40 pixels as displayed, not the 40 × 80 it was parsed as"), "{err}");
}

#[test]
fn every_page_of_a_multi_page_tiff_is_counted_and_read_each_turned_as_it_says() {
    let pages = [bar(), gray(50, 30, |x, y| (40..45).contains(&x) && (20..25).contains(&y)), gray(60, 60, |x, _| x == 30)];
    // The second page is stored sideways with orientation 6.
    let stored = [pages[0].clone(), stored_for_orientation_6(&pages[1]), pages[2].clone()];
    let bytes = tiff(&stored, Some((1, 6)));
    let ocr = InkOcr::default();
    let doc = parse_with_ocr(&bytes, "image/tiff", "fax.tif", &Limits::default(), Some(&ocr)).unwrap();
    assert_eq!(doc.format, Format::Tiff);
    assert_eq!(doc.page_count, 3);
    assert_eq!(doc.ocr_pages, vec![0, 1, 2]);
    let sizes: Vec<(u32, f32, f32)> = doc.pages.iter().map(|p| (p.page_idx, p.width, p.height)).collect();
    assert_eq!(sizes, vec![(0, 80.0, 40.0), (1, 50.0, 30.0), (2, 60.0, 60.0)]);
    assert_eq!(*ocr.seen.lock().unwrap(), vec![(80, 40), (50, 30), (60, 60)]);
    let want = [
        Rect { x0: 8.0, y0: 8.0, x1: 24.0, y1: 16.0 },
        Rect { x0: 40.0, y0: 20.0, x1: 45.0, y1: 25.0 },
        Rect { x0: 30.0, y0: 0.0, x1: 31.0, y1: 60.0 },
    ];
    for (page, want) in want.iter().enumerate() {
        let fragment = doc.segments.iter().flat_map(|s| &s.boxes).find(|b| b.page_idx == page as u32).expect("a box on every page");
        // Lossless: exact.
        assert!(close(fragment.rect, *want, 0.0), "page {page}: {:?}", fragment.rect);
    }
    assert!(doc.full_text.contains("ink80x40") && doc.full_text.contains("ink50x30") && doc.full_text.contains("ink60x60"));

    // OCR's page bound holds for TIFF pages as for PDF pages.
    let limits = Limits { ocr_max_pages: 2, ..Limits::default() };
    let doc = parse_with_ocr(&bytes, "image/tiff", "fax.tif", &limits, Some(&InkOcr::default())).unwrap();
    assert_eq!((doc.ocr_pages.clone(), doc.pages_without_text.clone()), (vec![0, 1], vec![2]));
    assert!(doc.ocr_failures[0].1.contains("at most 2 pages"), "{:?}", doc.ocr_failures);
    // And the page count bound.
    let limits = Limits { max_pages: 2, ..Limits::default() };
    assert_eq!(code(parse_with_ocr(&bytes, "image/tiff", "fax.tif", &limits, Some(&InkOcr::default()))), "too_many_pages");
}

#[test]
fn a_tiff_page_that_does_not_decode_leaves_that_page_without_text_not_the_document() {
    let pages = [bar(), gray(50, 30, |x, _| x == 10), gray(60, 60, |x, _| x == 30)];
    let mut bytes = tiff(&pages, None);
    // The second page's strip is said to start past the end of the file:
    // its header reads, its pixels do not.
    let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let first = word(&bytes, 4);
    let entries = |b: &[u8], ifd: usize| u16::from_le_bytes(b[ifd..ifd + 2].try_into().unwrap()) as usize;
    let second = word(&bytes, first + 2 + 12 * entries(&bytes, first));
    let offsets = (0..entries(&bytes, second))
        .map(|i| second + 2 + 12 * i)
        .find(|e| u16::from_le_bytes(bytes[*e..*e + 2].try_into().unwrap()) == 273)
        .expect("StripOffsets");
    assert_eq!(u32::from_le_bytes(bytes[offsets + 4..offsets + 8].try_into().unwrap()), 1, "one strip");
    let past = (bytes.len() + 4096) as u32;
    match u16::from_le_bytes(bytes[offsets + 2..offsets + 4].try_into().unwrap()) {
        3 => bytes[offsets + 8..offsets + 10].copy_from_slice(&(past as u16).to_le_bytes()),
        _ => bytes[offsets + 8..offsets + 12].copy_from_slice(&past.to_le_bytes()),
    }
    let ocr = InkOcr::default();
    let doc = parse_with_ocr(&bytes, "image/tiff", "fax.tif", &Limits::default(), Some(&ocr)).unwrap();
    assert_eq!(doc.page_count, 3);
    assert_eq!((doc.ocr_pages.clone(), doc.pages_without_text.clone()), (vec![0, 2], vec![1]));
    assert_eq!(doc.ocr_failures.len(), 1);
    let (page, why) = &doc.ocr_failures[0];
    assert!(*page == 1 && why.starts_with("corrupt image: page 2"), "{why}");
    assert!(doc.full_text.contains("ink80x40") && doc.full_text.contains("ink60x60"));
    // A lone broken page is the document's failure, with its reason.
    let one = tiff(&pages[1..2], None);
    let broken = truncated(one, 0.2);
    assert_eq!(code(parse_with_ocr(&broken, "image/tiff", "one.tif", &Limits::default(), Some(&ocr))), "corrupt_image");
}

#[test]
fn png_and_webp_are_read_with_boxes_in_pixels() {
    for (name, ct, bytes) in [("a.png", "image/png", png(&bar())), ("a.webp", "image/webp", webp(&bar()))] {
        let doc = parse_with_ocr(&bytes, ct, name, &Limits::default(), Some(&InkOcr::default())).unwrap();
        assert_eq!((doc.page_count, doc.pages[0].width, doc.pages[0].height), (1, 80.0, 40.0), "{name}");
        let (_, rect) = first_box(&doc);
        assert!(close(rect, Rect { x0: 8.0, y0: 8.0, x1: 24.0, y1: 16.0 }, 0.0), "{name}: {rect:?}");
        assert_eq!(doc.segments[0].line_start, Some(1));
    }
    // A PNG with transparency: black text on a transparent background is
    // read as black on white.
    let rgba = image::RgbaImage::from_fn(20, 10, |x, _| image::Rgba(if x < 5 { [0, 0, 0, 255] } else { [0, 0, 0, 0] }));
    let mut out = std::io::Cursor::new(Vec::new());
    rgba.write_to(&mut out, image::ImageFormat::Png).unwrap();
    let doc = parse_with_ocr(out.get_ref(), "image/png", "t.png", &Limits::default(), Some(&InkOcr::default())).unwrap();
    assert!(close(first_box(&doc).1, Rect { x0: 0.0, y0: 0.0, x1: 5.0, y1: 10.0 }, 0.0));
}

#[test]
fn a_corrupt_image_fails_with_a_clear_reason_and_its_code() {
    let ocr = InkOcr::default();
    let mut garbage = b"\x89PNG\r\n\x1a\n".to_vec();
    garbage.extend_from_slice(&[0x55; 200]);
    let err = parse_with_ocr(&garbage, "image/png", "g.png", &Limits::default(), Some(&ocr)).unwrap_err();
    assert_eq!(err.code(), "corrupt_image");
    assert!(err.to_string().starts_with("corrupt image: "), "{err}");
    // A download that broke off: the header reads, the pixels do not.
    let big = gray(300, 300, |x, y| (x * 7 + y * 13) % 11 == 0);
    let cut = truncated(png(&big), 0.5);
    assert_eq!(code(parse_with_ocr(&cut, "image/png", "cut.png", &Limits::default(), Some(&ocr))), "corrupt_image");
    let cut = truncated(tiff(&[big.clone(), big], None), 0.4);
    assert_eq!(code(parse_with_ocr(&cut, "image/tiff", "cut.tif", &Limits::default(), Some(&ocr))), "corrupt_image");
    assert_eq!(code(parse_with_ocr(b"II*\0\xff\xff\xff\x7f", "image/tiff", "x.tif", &Limits::default(), Some(&ocr))), "corrupt_image");
    // A TIFF whose directory chain loops back on itself ends, refused.
    let mut looped = tiff(&[bar()], None);
    let ifd = u32::from_le_bytes(looped[4..8].try_into().unwrap()) as usize;
    let entries = u16::from_le_bytes(looped[ifd..ifd + 2].try_into().unwrap()) as usize;
    let next = ifd + 2 + 12 * entries;
    looped[next..next + 4].copy_from_slice(&(ifd as u32).to_le_bytes());
    assert_eq!(code(parse_with_ocr(&looped, "image/tiff", "loop.tif", &Limits::default(), Some(&ocr))), "corrupt_image");
    // Not an image at all.
    let err = parse_with_ocr(b"plain words", "image/jpeg", "x.jpg", &Limits::default(), Some(&ocr)).unwrap_err();
    assert_eq!(err.code(), "corrupt_image");
    assert!(err.to_string().contains("does not start like a JPEG image"), "{err}");
}

#[test]
fn without_a_recogniser_an_image_has_no_text_and_says_why() {
    let err = parse(&png(&bar()), "image/png", "a.png", &Limits::default()).unwrap_err();
    assert_eq!(err.code(), "no_text");
    assert!(err.to_string().contains("OCR, which is not available"), "{err}");
}

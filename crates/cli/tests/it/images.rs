//! Images through the whole pipeline with the real tesseract (installed by
//! `scripts/stack`): a PNG of text, the same picture as a phone's sideways
//! JPEG (EXIF orientation 6) and a two-page TIFF are uploaded through the
//! API and reach `ingested`; their segments carry boxes in the image's
//! pixels that enclose the ink of their words; an answer cites the PNG with
//! the exact raw text and its boxes; the page-image endpoint returns the
//! picture as a PNG with the cited boxes drawn. A decompression bomb and a
//! truncated PNG fail with their codes while the others go through.
//!
//! The picture of text is the scanned page of the PDF fixtures
//! (`scanned-text-page.pdf`, page 2) cut out by pdftoppm at 300 dpi.

use std::process::Command;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::api_client::*;
use crate::app::TestApp;
use crate::common::*;
use crate::slides::slide_inputs;

#[path = "../../../docparse/src/tests/image_inputs.rs"]
mod image_inputs;
use image_inputs::{jpeg_with_orientation, png_bomb, stored_for_orientation_6, tiff, truncated};

const WAIT: Duration = Duration::from_secs(180);

/// Page 2 of the scan fixture at 300 dpi, its text (pixels 0..2480 ×
/// 0..1200 of the page), as a grey PNG.
fn scan_png() -> Vec<u8> {
    let dir_scratch = crate::common::scratch_dir("rag-it-images");
    let dir = dir_scratch.path().to_path_buf();
    let ok = Command::new("pdftoppm")
        .args(["-f", "2", "-l", "2", "-r", "300", "-x", "0", "-y", "0", "-W", "2480", "-H", "1200", "-gray", "-png", "-singlefile"])
        .arg(repo_root().join("crates/docparse/tests/fixtures/scanned-text-page.pdf"))
        .arg(dir.join("scan"))
        .status()
        .expect("pdftoppm (Debian poppler-utils)");
    assert!(ok.success());
    std::fs::read(dir.join("scan.png")).unwrap()
}

fn rect(b: &Value) -> [f32; 4] {
    ["x0", "y0", "x1", "y1"].map(|k| b[k].as_f64().unwrap() as f32)
}

/// The box (in the raw-text viewer's segments) of the first line fragment
/// holding `needle`, narrowed to it: the fragment's box is the whole
/// piece of line, so the needle must start the line.
fn line_box(raw: &Value, needle: &str) -> [f32; 4] {
    for seg in raw["segments"].as_array().unwrap() {
        let text = seg["text"].as_str().unwrap();
        let Some(at) = text.find(needle) else { continue };
        let start = seg["char_start"].as_u64().unwrap() + text[..at].chars().count() as u64;
        let b = seg["boxes"].as_array().unwrap().iter().find(|b| b["char_start"].as_u64().unwrap() == start);
        return rect(b.unwrap_or_else(|| panic!("no line fragment starts at {needle:?}: {seg}")));
    }
    panic!("no segment holds {needle:?}: {raw}")
}

/// The bounding box of the dark pixels of `img` inside `area` (pixels).
fn ink(img: &image::GrayImage, area: [f32; 4]) -> Option<[f32; 4]> {
    let (x0, y0) = (area[0].max(0.0) as u32, area[1].max(0.0) as u32);
    let (x1, y1) = ((area[2] as u32).min(img.width()), (area[3] as u32).min(img.height()));
    let mut found: Option<[u32; 4]> = None;
    for y in y0..y1 {
        for x in x0..x1 {
            if img.get_pixel(x, y).0[0] < 128 {
                let f = found.get_or_insert([x, y, x, y]);
                *f = [f[0].min(x), f[1].min(y), f[2].max(x), f[3].max(y)];
            }
        }
    }
    found.map(|f| [f[0] as f32, f[1] as f32, (f[2] + 1) as f32, (f[3] + 1) as f32])
}

fn close(a: [f32; 4], b: [f32; 4], tolerance: f32) -> bool {
    a.iter().zip(b).all(|(p, q)| (p - q).abs() <= tolerance)
}

async fn page_png(api: &Api, ws: &str, token: &str, id: &str, page: u32, highlight: Option<(u64, u64)>) -> (StatusCode, String, Vec<u8>) {
    let mut url = format!("{}/v1/workspaces/{ws}/documents/{id}/pages/{page}/image", api.base);
    if let Some((a, b)) = highlight {
        url.push_str(&format!("?highlight={a}-{b}"));
    }
    let resp = api.http.get(url).bearer_auth(token).send().await.unwrap();
    let status = resp.status();
    let ct = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    (status, ct, resp.bytes().await.unwrap().to_vec())
}

#[tokio::test(flavor = "multi_thread")]
async fn images_are_read_by_ocr_cited_with_pixel_boxes_and_shown_with_them_and_bombs_fail() {
    let t = TestEnv::new().await;
    let app = TestApp::spawn(&t, &[("EMBEDDER", "none"), ("OCR", "auto")]).await;
    let api = Api::new(app.api_port);
    api.wait_ready().await;
    let alice = token(&t, "alice").await;
    let (s, ws) = api.post("/v1/workspaces", &alice, json!({"name": "Ảnh"})).await;
    assert_eq!(s, StatusCode::CREATED, "{ws}");
    let ws = ws["id"].as_str().unwrap().to_string();

    let png = scan_png();
    let scan = image::load_from_memory(&png).unwrap().to_luma8();
    assert_eq!(scan.dimensions(), (2480, 1200));
    // A slide that is only the scan: read by the same OCR, text without boxes.
    let deck = slide_inputs::pptx(&[
        slide_inputs::Slide { shapes: vec![slide_inputs::Shape::Title("Báo cáo quý")], notes: vec![] },
        slide_inputs::Slide { shapes: vec![slide_inputs::Shape::Image(&png)], notes: vec!["Số liệu đã kiểm toán."] },
    ]);
    let cases: Vec<(&str, &str, Vec<u8>, &str)> = vec![
        ("scan.png", "image/png", png.clone(), "ingested"),
        ("anh-chup.pptx", slide_inputs::PPTX, deck, "ingested"),
        // A phone held sideways: the pixels stored turned, EXIF says turn back.
        ("photo.jpg", "application/octet-stream", jpeg_with_orientation(&stored_for_orientation_6(&scan), 6), "ingested"),
        ("fax.tif", "image/tiff", tiff(&[scan.clone(), scan.clone()], None), "ingested"),
        ("bomb.png", "image/png", png_bomb(20_000), "image_too_large"),
        ("cut.png", "image/png", truncated(png.clone(), 0.5), "corrupt_image"),
    ];
    let mut ids = Vec::new();
    for (name, ct, bytes, _) in &cases {
        let (s, v) = api.upload(&ws, &alice, name, ct, bytes.clone()).await;
        assert_eq!(s, StatusCode::ACCEPTED, "{name}: {v}");
        ids.push(v["document_id"].as_str().unwrap().to_string());
    }
    for ((name, _, _, want), id) in cases.iter().zip(&ids) {
        let d = api.settled(&ws, &alice, id, WAIT).await;
        match *want {
            "ingested" => assert_eq!(d["status"], "ingested", "{name}: {d}"),
            code => {
                assert_eq!((d["status"].as_str(), d["failure_code"].as_str()), (Some("failed"), Some(code)), "{name}: {d}");
                assert!(d["failure_reason"].as_str().is_some_and(|r| r.len() > 20), "{name}: {d}");
            }
        }
    }
    let id_of = |name: &str| ids[cases.iter().position(|c| c.0 == name).unwrap()].clone();
    let (png_id, jpg_id, tif_id) = (id_of("scan.png"), id_of("photo.jpg"), id_of("fax.tif"));
    let (_, bomb) = api.get(&format!("/v1/workspaces/{ws}/documents/{}", id_of("bomb.png")), &alice).await;
    assert!(bomb["failure_reason"].as_str().unwrap().contains("20000 × 20000 pixels"), "{bomb}");
    let (_, d) = api.get(&format!("/v1/workspaces/{ws}/documents/{jpg_id}"), &alice).await;
    assert_eq!(d["content_type"], "image/jpeg", "named by its extension: {d}");

    // The segments' boxes are in the image's pixels and enclose the ink of
    // their words; the sideways JPEG's are on the picture turned upright.
    let raw = |id: String| {
        let api = &api;
        let (ws, alice) = (&ws, &alice);
        async move {
            let (s, raw) = api.get(&format!("/v1/workspaces/{ws}/documents/{id}/raw-text"), alice).await;
            assert_eq!(s, StatusCode::OK, "{raw}");
            raw
        }
    };
    let png_raw = raw(png_id.clone()).await;
    assert_eq!(png_raw["pages"], json!([{"page_idx": 0, "width": 2480.0, "height": 1200.0, "unit": "px"}]));
    let full: String = png_raw["segments"].as_array().unwrap().iter().map(|s| s["text"].as_str().unwrap()).collect();
    for needle in ["Lợi nhuận gộp đạt 312 tỷ đồng", "Revenue grew in every region"] {
        assert!(full.contains(needle), "OCR text lacks {needle:?}: {full:?}");
    }
    let revenue = line_box(&png_raw, "Revenue grew");
    let found = ink(&scan, [revenue[0] - 6.0, revenue[1] - 6.0, revenue[2] + 6.0, revenue[3] + 6.0]).expect("ink in the box");
    assert!(close(revenue, found, 4.0), "the line's box {revenue:?} is its ink {found:?}");
    let jpg_raw = raw(jpg_id.clone()).await;
    assert_eq!(jpg_raw["pages"][0]["width"], 2480.0, "the turned picture's size: {}", jpg_raw["pages"]);
    let turned = line_box(&jpg_raw, "Revenue grew");
    assert!(close(turned, revenue, 6.0), "the JPEG's box {turned:?} is where the upright picture has it {revenue:?}");
    let tif_raw = raw(tif_id.clone()).await;
    let pages: Vec<i64> = tif_raw["segments"].as_array().unwrap().iter().map(|s| s["page_idx"].as_i64().unwrap()).collect();
    assert!(pages.contains(&0) && pages.contains(&1), "both TIFF pages read: {pages:?}");
    let (_, d) = api.get(&format!("/v1/workspaces/{ws}/documents/{tif_id}"), &alice).await;
    assert_eq!((d["page_count"].as_i64(), d["ocr_pages"].clone()), (Some(2), json!([0, 1])), "{d}");
    let deck_id = id_of("anh-chup.pptx");
    let (_, d) = api.get(&format!("/v1/workspaces/{ws}/documents/{deck_id}"), &alice).await;
    assert_eq!((d["page_count"].as_i64(), d["ocr_pages"].clone()), (Some(2), json!([1])), "{d}");
    let deck_raw = raw(deck_id).await;
    let slide2: Vec<&Value> = deck_raw["segments"].as_array().unwrap().iter().filter(|s| s["page_idx"] == 1).collect();
    let text: String = slide2.iter().map(|s| s["text"].as_str().unwrap()).collect();
    assert!(text.contains("Lợi nhuận gộp đạt 312 tỷ đồng"), "the slide's picture read: {text:?}");
    assert!(text.trim_end().ends_with("Số liệu đã kiểm toán."), "then the notes: {text:?}");
    assert!(slide2.iter().all(|s| s["boxes"].as_array().is_some_and(Vec::is_empty)), "text without boxes");

    // An answer cites the picture: the exact raw text, boxes in its pixels.
    let (s, conv) = api.post(&format!("/v1/workspaces/{ws}/conversations"), &alice, json!({})).await;
    assert_eq!(s, StatusCode::CREATED, "{conv}");
    let conv = conv["id"].as_str().unwrap().to_string();
    let (s, posted) = api
        .post(
            &format!("/v1/workspaces/{ws}/conversations/{conv}/messages"),
            &alice,
            json!({"content": "Lợi nhuận gộp đạt bao nhiêu tỷ đồng?", "document_ids": [png_id]}),
        )
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{posted}");
    let path = format!("/v1/workspaces/{ws}/conversations/{conv}/messages/{}", posted["assistant_message"]["id"].as_str().unwrap());
    let started = Instant::now();
    let answer = loop {
        let (_, m) = api.get(&path, &alice).await;
        if m["status"] != "pending" {
            assert_eq!(m["status"], "done", "{m}");
            break m;
        }
        assert!(started.elapsed() < WAIT, "no answer");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let citation = answer["metadata"]["citations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["text"].as_str().is_some_and(|t| t.contains("312")))
        .unwrap_or_else(|| panic!("a citation of the line with the number: {answer}"))
        .clone();
    let (start, end) = (citation["char_start"].as_u64().unwrap(), citation["char_end"].as_u64().unwrap());
    let slice: String = full.chars().skip(start as usize).take((end - start) as usize).collect();
    assert_eq!(slice, citation["text"].as_str().unwrap(), "the citation is exactly the raw text at its range");
    let boxes = citation["boxes"].as_array().unwrap();
    assert!(!boxes.is_empty(), "{citation}");
    for b in boxes {
        let r = rect(b);
        assert_eq!(b["page_idx"], 0);
        assert!(r[0] >= 0.0 && r[1] >= 0.0 && r[2] <= 2480.0 && r[3] <= 1200.0 && r[0] < r[2] && r[1] < r[3], "in the picture: {b}");
        assert!(ink(&scan, r).is_some(), "the cited box holds ink: {b}");
    }

    // The page-image endpoint: the picture itself, as a PNG, the cited
    // boxes drawn on it (yellow inside, the rest untouched).
    let (s, ct, body) = page_png(&api, &ws, &alice, &png_id, 1, Some((start, end))).await;
    assert_eq!((s, ct.as_str()), (StatusCode::OK, "image/png"), "{}", String::from_utf8_lossy(&body));
    let shown = image::load_from_memory_with_format(&body, image::ImageFormat::Png).unwrap().to_rgb8();
    assert_eq!(shown.dimensions(), (2480, 1200));
    let r = rect(&boxes[0]);
    let tinted = (r[0] as u32..r[2] as u32)
        .flat_map(|x| (r[1] as u32..r[3] as u32).map(move |y| (x, y)))
        .filter(|&(x, y)| {
            let p = shown.get_pixel(x, y).0;
            p[0] > 200 && p[2] < 80
        })
        .count();
    assert!(tinted > 100, "the cited box is highlighted ({tinted} yellow pixels)");
    assert_eq!(shown.get_pixel(5, 1195).0, [255, 255, 255], "outside any box the picture is unchanged");
    // The JPEG is shown upright; the TIFF's second page exists; a third does not.
    let (s, ct, body) = page_png(&api, &ws, &alice, &jpg_id, 1, None).await;
    assert_eq!((s, ct.as_str()), (StatusCode::OK, "image/png"));
    assert_eq!(image::load_from_memory(&body).unwrap().to_rgb8().dimensions(), (2480, 1200));
    let (s, ct, _) = page_png(&api, &ws, &alice, &tif_id, 2, None).await;
    assert_eq!((s, ct.as_str()), (StatusCode::OK, "image/png"));
    let (s, _, _) = page_png(&api, &ws, &alice, &tif_id, 3, None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    // Another user sees no page of it, through Alice's workspace or his own.
    let bob = token(&t, "bob").await;
    let (s, bws) = api.post("/v1/workspaces", &bob, json!({"name": "Của Bob"})).await;
    assert_eq!(s, StatusCode::CREATED, "{bws}");
    let bws = bws["id"].as_str().unwrap().to_string();
    for w in [&ws, &bws] {
        for highlight in [None, Some((start, end))] {
            let (s, ct, body) = page_png(&api, w, &bob, &png_id, 1, highlight).await;
            assert_eq!(s, StatusCode::NOT_FOUND, "bob in {w}: {}", String::from_utf8_lossy(&body));
            assert_ne!(ct, "image/png");
            let v: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(v["error"]["code"], "not_found", "{v}");
        }
    }
    t.cleanup().await;
}

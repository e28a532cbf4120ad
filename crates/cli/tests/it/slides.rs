//! Presentations through the whole pipeline: a PPTX (its slides stored out
//! of name order) and an ODP uploaded through the API reach `ingested`,
//! each slide a page of the raw text in reading order; a search finds a
//! slide's notes in a chunk of that slide alone; an answer to a question
//! about a fact on a slide cites it with its exact raw text on that slide
//! (`page_idx` N-1, "slide N" in the CLI); the poison versions end `failed` with their
//! code while the others go through. The presentations are written by the
//! tests (`crates/docparse/src/tests/slide_inputs.rs`, shared with the
//! parser's unit tests).

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::api_client::*;
use crate::app::TestApp;
use crate::common::*;

#[path = "../../../docparse/src/tests/slide_inputs.rs"]
pub(crate) mod slide_inputs;
use slide_inputs::{encrypted_pptx, odp, pictures_only_pptx, pptx_bomb, pptx_in_parts, sales_deck, truncated_pptx, ODP, PPTX};

const WAIT: Duration = Duration::from_secs(120);

/// Every citation slices the raw text exactly and is on the page (slide)
/// of the segment it is in. Returns each citation's slide number and text.
async fn cited_slides(api: &Api, ws: &str, token: &str, answer: &Value) -> Vec<(i64, String)> {
    let citations = answer["metadata"]["citations"].as_array().unwrap();
    assert!(!citations.is_empty(), "the answer cites: {answer}");
    let mut out = Vec::new();
    for c in citations {
        let doc = c["document_id"].as_str().unwrap();
        let (s, raw) = api.get(&format!("/v1/workspaces/{ws}/documents/{doc}/raw-text"), token).await;
        assert_eq!(s, StatusCode::OK, "{raw}");
        let segments = raw["segments"].as_array().unwrap();
        let full: String = segments.iter().map(|s| s["text"].as_str().unwrap()).collect();
        let (start, end) = (c["char_start"].as_u64().unwrap() as usize, c["char_end"].as_u64().unwrap() as usize);
        assert!(start < end, "{c}");
        let slice: String = full.chars().skip(start).take(end - start).collect();
        assert_eq!(slice, c["text"].as_str().unwrap(), "the citation is exactly the raw text at its range");
        let seg = &segments[c["segment_index"].as_u64().unwrap() as usize];
        assert_eq!(c["page_idx"], seg["page_idx"], "{c} in {seg}");
        out.push((c["page_idx"].as_i64().unwrap() + 1, slice));
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn presentations_are_ingested_slide_by_slide_and_cited_by_slide_and_poison_ones_fail_with_their_code() {
    let t = TestEnv::new().await;
    // Lexical retrieval and extractive answers: no model needed.
    let app = TestApp::spawn(&t, &[("EMBEDDER", "none")]).await;
    let api = Api::new(app.api_port);
    api.wait_ready().await;
    let alice = token(&t, "alice").await;
    let (s, ws) = api.post("/v1/workspaces", &alice, json!({"name": "Trình chiếu"})).await;
    assert_eq!(s, StatusCode::CREATED, "{ws}");
    let ws = ws["id"].as_str().unwrap().to_string();

    let cases: Vec<(&str, &str, Vec<u8>, &str)> = vec![
        ("khoa.pptx", PPTX, encrypted_pptx(), "encrypted_presentation"),
        ("cat.pptx", PPTX, truncated_pptx(), "corrupt_presentation"),
        // 64 MiB of one slide from some 64 KiB: over the 200:1 ratio.
        ("bom.pptx", PPTX, pptx_bomb(64 << 20), "decompression_bomb"),
        ("anh.pptx", PPTX, pictures_only_pptx(), "no_text"),
        // The slides stored as slide3.xml, slide1.xml, slide2.xml.
        ("ban-hang.pptx", "application/octet-stream", pptx_in_parts(&sales_deck(), &[3, 1, 2]), "ingested"),
        ("ban-hang.odp", ODP, odp(&sales_deck()), "ingested"),
    ];
    let mut ids = Vec::new();
    for (name, ct, bytes, _) in &cases {
        ids.push(api.upload_accepted(&ws, &alice, name, ct, bytes.clone()).await);
    }
    for ((name, _, _, want), id) in cases.iter().zip(&ids) {
        let d = api.settled(&ws, &alice, id, WAIT).await;
        match *want {
            "ingested" => {
                assert_eq!(d["status"], "ingested", "{name}: {d}");
                assert_eq!(d["page_count"], 3, "{name}: one page per slide: {d}");
            }
            code => {
                assert_eq!((d["status"].as_str(), d["failure_code"].as_str()), (Some("failed"), Some(code)), "{name}: {d}");
                assert!(d["failure_reason"].as_str().is_some_and(|r| r.len() > 10), "{name}: {d}");
            }
        }
    }
    let id_of = |name: &str| ids[cases.iter().position(|c| c.0 == name).unwrap()].clone();
    let pptx_id = id_of("ban-hang.pptx");
    // Sent as octet-stream, recorded as what its name says.
    let (_, d) = api.get(&format!("/v1/workspaces/{ws}/documents/{pptx_id}"), &alice).await;
    assert_eq!(d["content_type"], PPTX);

    // The viewer's segments: each slide a page, in the presentation's
    // order, titles first, the table's rows with the header's names, the
    // notes last.
    for name in ["ban-hang.pptx", "ban-hang.odp"] {
        let (_, raw) = api.get(&format!("/v1/workspaces/{ws}/documents/{}/raw-text", id_of(name)), &alice).await;
        let got: Vec<(i64, &str)> = raw["segments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["page_idx"].as_i64().unwrap(), s["text"].as_str().unwrap().trim_end()))
            .collect();
        assert_eq!(got.len(), 13, "{name}: {got:?}");
        assert_eq!(got[0], (0, "Kết quả kinh doanh quý 3"), "{name}");
        assert_eq!(got[3], (0, "Nhấn mạnh khách hàng doanh nghiệp ở miền Trung."), "{name}: the notes after the slide's body");
        assert_eq!(got[7], (1, "Khu vực: Miền Nam; Doanh thu (tỷ đồng): 538,1; Tăng trưởng: 21%"), "{name}");
        assert_eq!(got[8], (2, "Kế hoạch"), "{name}");
    }

    // A search finds the notes of slide 3, in a chunk of slide 3 alone
    // (a chunk never holds two slides), and the CLI says "slide 3".
    let (ok, out, err) = t.run(&["search", "ngân sách văn phòng Đà Nẵng", "--workspace", &ws, "--mode", "lexical", "--json"]).await;
    assert!(ok, "{err}");
    let found: Value = serde_json::from_str(&out).unwrap();
    let top = &found["chunks"][0];
    assert!(top["content"].as_str().unwrap().starts_with("Kế hoạch\n\n"), "{top}");
    assert!(top["content"].as_str().unwrap().contains("Ngân sách văn phòng Đà Nẵng: 3,2 tỷ đồng."), "{top}");
    assert_eq!((&top["page_start"], &top["page_end"]), (&json!(2), &json!(2)), "{top}");
    let (ok, human, err) = t.run(&["search", "ngân sách văn phòng Đà Nẵng", "--workspace", &ws, "--mode", "lexical"]).await;
    assert!(ok, "{err}");
    assert!(human.contains("ban-hang.pptx  slide 3  chars ") || human.contains("ban-hang.odp  slide 3  chars "), "{human}");

    // An answer about the table on slide 2 cites its row there.
    let answer = api.ask_about(&ws, &alice, "Doanh thu miền Nam là bao nhiêu tỷ đồng?", &pptx_id, WAIT).await;
    assert!(answer["content"].as_str().unwrap().contains("538,1"), "{answer}");
    let cited = cited_slides(&api, &ws, &alice, &answer).await;
    assert!(cited.iter().any(|(slide, text)| *slide == 2 && text.contains("Miền Nam")), "{cited:?}");

    // The CLI's citation label is the slide.
    let (ok, human, err) = t.run(&["ask", "Doanh thu miền Nam là bao nhiêu tỷ đồng?", "--workspace", &ws]).await;
    assert!(ok, "{err}");
    assert!(human.contains(".pptx slide 2 segment ") || human.contains(".odp slide 2 segment "), "{human}");
    assert!(human.contains("✓ exactly the raw text"), "{human}");
    t.cleanup().await;
}

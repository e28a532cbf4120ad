//! The reading view over real HTTP against the real stack: a Markdown and an
//! HTML document, uploaded as users write them (CRLF line ends, a script,
//! no-break spaces, decomposed Vietnamese), come back as their structure,
//! and every text that says where it is shows exactly the raw text's
//! characters there; other formats are told they have none; another
//! user's document is not found.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::api_client::*;
use crate::app::TestApp;
use crate::common::*;

const WAIT: Duration = Duration::from_secs(120);

const POLICY_MD: &str = "# Chính sách nhân sự\r\n\r\n\r\n## 1. Giờ làm việc   \r\n\r\nLàm việc từ **8 giờ** đến *17 giờ*, xem [quy chế](https://example.vn/quy-che) \\* [đây](javascript:alert(1)).\r\n\r\n- Nghỉ trưa 1 giờ\r\n- Thứ Bảy nghỉ\r\n\r\n<script>alert(1)</script>\r\n\r\n| Loại nghỉ | Số ngày |\r\n|---|---|\r\n| Kết hôn | 3 ngày |\r\n";

/// "Nội" and "giờ" decomposed (NFD), as some editors save them; a no-break space.
const RULES_HTML: &str = "<html><head><title>Nội quy</title><script>var x = 'bị chiếm';</script></head><body>\n<h1>No\u{302}\u{323}i quy</h1>\n<p>Giữ&nbsp;yên lặng sau <b>21 gio\u{300}\u{31b}</b>.</p>\n<ul><li>Tắt đèn</li><li>Khóa cửa</li></ul>\n<table><tr><th>Phòng</th><th>Tầng</th></tr><tr><td>Họp lớn</td><td>3</td></tr></table>\n<pre>dòng một\n  dòng hai</pre></body></html>";

/// Every text of the view with its offset, in order.
fn texts(nodes: &Value, out: &mut Vec<(String, Option<u64>)>) {
    for node in nodes.as_array().into_iter().flatten() {
        if let Some(text) = node["text"].as_str() {
            out.push((text.to_string(), node["at"].as_u64()));
        } else {
            texts(&node["children"], out);
        }
    }
}

fn tags(nodes: &Value, out: &mut Vec<String>) {
    for node in nodes.as_array().into_iter().flatten() {
        if let Some(tag) = node["tag"].as_str() {
            out.push(tag.to_string());
            tags(&node["children"], out);
        }
    }
}

async fn raw_text(api: &Api, ws: &str, token: &str, id: &str) -> String {
    let (s, raw) = api.get(&format!("/v1/workspaces/{ws}/documents/{id}/raw-text"), token).await;
    assert_eq!(s, StatusCode::OK, "{raw}");
    raw["segments"].as_array().unwrap().iter().map(|s| s["text"].as_str().unwrap()).collect()
}

/// Each placed text is the raw text's characters at its offset; returns the texts.
fn assert_placed(view: &Value, raw: &str) -> Vec<(String, Option<u64>)> {
    let mut shown = Vec::new();
    texts(&view["blocks"], &mut shown);
    for (text, at) in &shown {
        if let Some(at) = at {
            let there: String = raw.chars().skip(*at as usize).take(text.chars().count()).collect();
            assert_eq!(&there, text, "at {at} of {raw:?}");
        }
    }
    shown
}

#[tokio::test]
async fn markdown_and_html_read_as_their_structure_with_every_text_placed_in_the_raw_text() {
    let t = TestEnv::new().await;
    let run = TestApp::spawn(&t, &[]).await;
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let alice = token(&t, "alice").await;
    let (s, ws) = api.post("/v1/workspaces", &alice, json!({"name": "Nội quy"})).await;
    assert_eq!(s, StatusCode::CREATED, "{ws}");
    let ws = ws["id"].as_str().unwrap().to_string();
    let md = api.upload_accepted(&ws, &alice, "chinh-sach.md", "text/markdown", POLICY_MD.as_bytes().to_vec()).await;
    let html = api.upload_accepted(&ws, &alice, "noi-quy.html", "text/html", RULES_HTML.as_bytes().to_vec()).await;
    let txt = api.upload_accepted(&ws, &alice, "ghi-chu.txt", "text/plain", "# Không phải Markdown\n\nMột dòng.".into()).await;
    for id in [&md, &html, &txt] {
        assert_eq!(api.settled(&ws, &alice, id, WAIT).await["status"], "ingested");
    }

    // Markdown: its structure, each text where the raw text has it.
    let (s, view) = api.get(&format!("/v1/workspaces/{ws}/documents/{md}/reading"), &alice).await;
    assert_eq!(s, StatusCode::OK, "{view}");
    assert_eq!(view["format"], "markdown");
    assert_eq!(view["document_id"], md.as_str());
    assert_eq!(view["revision"], 1);
    let raw = raw_text(&api, &ws, &alice, &md).await;
    let shown = assert_placed(&view, &raw);
    let mut all = Vec::new();
    tags(&view["blocks"], &mut all);
    for tag in ["h1", "h2", "p", "strong", "em", "a", "ul", "li", "pre", "table", "thead", "th", "tbody", "td"] {
        assert!(all.iter().any(|t| t == tag), "{tag} in {all:?}");
    }
    for word in ["Chính sách nhân sự", "1. Giờ làm việc", "8 giờ", "Kết hôn", "3 ngày", "Nghỉ trưa 1 giờ"] {
        assert!(shown.iter().any(|(t, at)| t == word && at.is_some()), "{word} placed: {shown:?}");
    }
    // The cells of a row cited whole are the row's characters of the raw text.
    let row = raw.find("Kết hôn | 3 ngày").map(|b| raw[..b].chars().count() as u64).unwrap();
    assert!(shown.contains(&("3 ngày".to_string(), Some(row + 10))), "{shown:?}");
    let body = view["blocks"].to_string();
    assert!(body.contains(r#""href":"https://example.vn/quy-che""#) && !body.contains("javascript:"), "{body}");
    // The script is text in a <pre>, never an element.
    assert!(!all.iter().any(|t| t == "script"), "{all:?}");
    assert!(shown.iter().any(|(t, _)| t.contains("<script>alert(1)</script>")), "{shown:?}");

    // HTML: the visible text's structure, the head and script left out,
    // decomposed letters and no-break spaces as the raw text has them.
    let (s, view) = api.get(&format!("/v1/workspaces/{ws}/documents/{html}/reading"), &alice).await;
    assert_eq!(s, StatusCode::OK, "{view}");
    assert_eq!(view["format"], "html");
    let raw = raw_text(&api, &ws, &alice, &html).await;
    let shown = assert_placed(&view, &raw);
    for (text, at) in &shown {
        assert!(text.trim().is_empty() || at.is_some(), "every word of the page is placed: {text:?} in {raw:?}");
    }
    let all_text: String = shown.iter().map(|(t, _)| t.as_str()).collect();
    assert!(!all_text.contains("bị chiếm") && !all_text.contains("Nội quy\n"), "{all_text}");
    for word in ["Nội quy", "Giữ yên lặng sau", "21 giờ", "Họp lớn", "dòng hai"] {
        assert!(shown.iter().any(|(t, _)| t.contains(word)), "{word}: {shown:?}");
    }
    let mut all = Vec::new();
    tags(&view["blocks"], &mut all);
    for tag in ["h1", "p", "strong", "ul", "li", "table", "tr", "th", "td", "pre"] {
        assert!(all.iter().any(|t| t == tag), "{tag} in {all:?}");
    }

    // A page nested deeper than a view is drawn for (html5ever nests in
    // quadratic time, on every opening): its raw text, not seconds of CPU.
    let deep = format!("<html><body>{}sâu{}</body></html>", "<div>".repeat(4_100), "</div>".repeat(4_100));
    let deep = api.upload_accepted(&ws, &alice, "sau.html", "text/html", deep.into_bytes()).await;
    assert_eq!(api.settled(&ws, &alice, &deep, WAIT).await["status"], "ingested");
    let (s, v) = api.get(&format!("/v1/workspaces/{ws}/documents/{deep}/reading"), &alice).await;
    assert_eq!((s, v["error"]["code"].as_str()), (StatusCode::CONFLICT, Some("too_large_to_format")), "{v}");
    let (s, _) = api.get(&format!("/v1/workspaces/{ws}/documents/{deep}/raw-text"), &alice).await;
    assert_eq!(s, StatusCode::OK);

    // A text file has no reading view: its raw text is what it is.
    let (s, v) = api.get(&format!("/v1/workspaces/{ws}/documents/{txt}/reading"), &alice).await;
    assert_eq!((s, v["error"]["code"].as_str()), (StatusCode::CONFLICT, Some("no_reading_view")), "{v}");
    // Another user: not found, as for any document not theirs.
    let bob = token(&t, "bob").await;
    let (s, _) = api.get(&format!("/v1/workspaces/{ws}/documents/{md}/reading"), &bob).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    // A revision that never was.
    let (s, _) = api.get(&format!("/v1/workspaces/{ws}/documents/{md}/reading?revision=9"), &alice).await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // Replaced by a text file: the new revision has no reading view, the
    // first (which an earlier answer may quote) is still read as Markdown.
    let part = reqwest::multipart::Part::bytes(b"Quy che moi, van ban thuong.".to_vec())
        .file_name("chinh-sach.txt")
        .mime_str("text/plain")
        .unwrap();
    let resp = api
        .http
        .put(format!("{}/v1/workspaces/{ws}/documents/{md}", api.base))
        .bearer_auth(&alice)
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    wait_until("the text revision to be searched", WAIT, || async {
        api.get(&format!("/v1/workspaces/{ws}/documents/{md}"), &alice).await.1["revision"] == 2
    })
    .await;
    let (s, v) = api.get(&format!("/v1/workspaces/{ws}/documents/{md}/reading"), &alice).await;
    assert_eq!((s, v["error"]["code"].as_str()), (StatusCode::CONFLICT, Some("no_reading_view")), "{v}");
    let (s, v) = api.get(&format!("/v1/workspaces/{ws}/documents/{md}/reading?revision=1"), &alice).await;
    assert_eq!((s, v["format"].as_str(), v["revision"].as_i64()), (StatusCode::OK, Some("markdown"), Some(1)), "{v}");
}

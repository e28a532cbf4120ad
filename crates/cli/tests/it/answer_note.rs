//! A waiting door reads an answer when the projector says it is projected,
//! not at its next poll: with the poll set to ten minutes
//! (`API_ANSWER_POLL_MS`), the page's event stream, a chat completion and
//! a streamed one still get their answers (extractive, quick) well within
//! a minute. Without the projector's note each would wait its ten minutes.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::api_client::*;
use crate::app::TestApp;
use crate::common::*;

const REPORT: &str = "Doanh thu thuần năm 2023 đạt 1.245,6 tỷ đồng.\n\nLợi nhuận sau thuế năm 2023 đạt 187,3 tỷ đồng.";
const WITHIN: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread")]
async fn doors_read_an_answer_when_it_is_projected_not_at_their_next_poll() {
    let t = TestEnv::new().await;
    let all = TestApp::spawn(&t, &[("API_ANSWER_POLL_MS", "600000")]).await;
    let api = Api::new(all.api_port);
    api.wait_ready().await;
    let ReportWorkspace { alice, ws, .. } = report_workspace(&t, &api, REPORT).await;

    // The page: the conversation's event stream, opened before the question.
    let (s, conv) = api.post(&format!("/v1/workspaces/{ws}/conversations"), &alice, json!({})).await;
    assert_eq!(s, StatusCode::CREATED, "{conv}");
    let conv = conv["id"].as_str().unwrap().to_string();
    let mut events = open_events(&api, &format!("/v1/workspaces/{ws}/conversations/{conv}/events"), &alice, None).await;
    let (s, posted) =
        api.post(&format!("/v1/workspaces/{ws}/conversations/{conv}/messages"), &alice, json!({"content": "Doanh thu năm 2023?"})).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{posted}");
    let assistant = posted["assistant_message"]["id"].as_str().unwrap().to_string();
    let answered = loop {
        let e = next_event(&mut events, WITHIN).await;
        if e.event == "message.status_updated" && e.data["id"] == assistant.as_str() && e.data["status"] != "pending" {
            break e;
        }
    };
    assert_eq!(answered.data["status"], "done", "{:?}", answered.data);
    assert!(answered.data["content"].as_str().unwrap().contains("1.245,6"), "{:?}", answered.data);

    // Chat completions, plain and streamed.
    let (_, key) = api.post("/v1/keys", &alice, json!({"name": "note"})).await;
    let key = key["secret"].as_str().unwrap().to_string();
    let chat = |body: serde_json::Value| {
        let req = api.http.post(format!("{}/v1/chat/completions", api.base)).bearer_auth(&key).json(&body).timeout(WITHIN);
        async move { req.send().await.expect("a chat completion within a minute").text().await.expect("its whole body within a minute") }
    };
    let plain = chat(json!({"model": ws, "messages": [{"role": "user", "content": "Lợi nhuận sau thuế năm 2023?"}]})).await;
    let plain: serde_json::Value = serde_json::from_str(&plain).unwrap();
    assert!(plain["choices"][0]["message"]["content"].as_str().unwrap().contains("187,3"), "{plain}");
    let streamed = chat(json!({"model": ws, "stream": true, "messages": [{"role": "user", "content": "Doanh thu thuần năm 2023?"}]})).await;
    assert!(streamed.contains("1.245,6") && streamed.trim_end().ends_with("data: [DONE]"), "{streamed}");
    all.stop().await;
    t.cleanup().await;
}

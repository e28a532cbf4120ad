//! The OpenAI-compatible chat endpoints over real HTTP against the real
//! stack (extractive answers: the wire, not the model): models are the
//! caller's workspaces; a completion carries `[n]` markers and citations
//! whose text is the raw text at their range; a stream is
//! `chat.completion.chunk` events ending in `[DONE]` with the citations on
//! the last chunk; a follow-up that sends the conversation back joins it;
//! every request is a question in a conversation the page shows; and bad
//! input gets OpenAI-shaped 4xx errors and changes nothing.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::api_client::*;
use crate::app::TestApp;
use crate::common::*;

const REPORT: &str = "Doanh thu thuần năm 2023 đạt 1.245,6 tỷ đồng, tăng 12,4% so với năm trước.\n\nLợi nhuận sau thuế năm 2023 đạt 187,3 tỷ đồng.\n\nDoanh thu thuần năm 2022 đạt 1.108,2 tỷ đồng.";

async fn chat(api: &Api, key: &str, body: Value) -> reqwest::Response {
    api.http.post(format!("{}/v1/chat/completions", api.base)).bearer_auth(key).json(&body).send().await.unwrap()
}

/// The `data:` payloads of a server-sent event stream, in order.
async fn stream_data(resp: reqwest::Response) -> Vec<String> {
    let text = tokio::time::timeout(Duration::from_secs(60), resp.text()).await.expect("the stream ends").unwrap();
    text.split("\n\n").filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")).map(str::to_string)).collect()
}

async fn raw_text(api: &Api, key: &str, ws: &str, doc: &str) -> String {
    let (s, raw, headers) = api.call(reqwest::Method::GET, &format!("/v1/workspaces/{ws}/documents/{doc}/raw-text"), Some(key), None).await;
    assert_eq!(s, StatusCode::OK, "{raw}");
    // A user's text is never cached, and no answer is sniffed into another type.
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    raw["segments"].as_array().unwrap().iter().map(|s| s["text"].as_str().unwrap()).collect()
}

/// Every citation is numbered as its marker, names its document and is
/// the raw text at its range, and the text ends with the sources list
/// (`- [n] bao-cao.txt: “…” ([mở](url))`, one per citation); returns how
/// many there are.
async fn check_citations(api: &Api, key: &str, ws: &str, content: &str, citations: &Value) -> usize {
    let citations = citations.as_array().unwrap();
    let (answer, sources) = content.split_once("\n\n**Nguồn**\n\n").unwrap_or_else(|| panic!("a sources list in {content:?}"));
    assert_eq!(sources.lines().count(), citations.len(), "one source per citation: {sources}");
    for (line, c) in sources.lines().zip(citations) {
        let quote: String = c["text"].as_str().unwrap().split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(line, format!("- [{}] bao-cao.txt: “{quote}” ([mở]({}))", c["index"], c["url"].as_str().unwrap()));
    }
    let content = answer;
    for (i, c) in citations.iter().enumerate() {
        assert_eq!(c["index"], i + 1);
        assert!(content.contains(&format!("[{}]", i + 1)), "marker [{}] in {content:?}", i + 1);
        assert_eq!(c["filename"], "bao-cao.txt");
        let raw = raw_text(api, key, ws, c["document_id"].as_str().unwrap()).await;
        let (s, e) = (c["char_start"].as_u64().unwrap() as usize, c["char_end"].as_u64().unwrap() as usize);
        assert_eq!(raw.chars().skip(s).take(e - s).collect::<String>(), c["text"].as_str().unwrap());
        let url = c["url"].as_str().unwrap();
        assert!(url.starts_with(&api.base) && url.contains(&format!("ws={ws}")) && url.contains(&format!("span={s}-{e}")), "{url}");
        assert!(c.get("page").is_none(), "a text file has no pages: {c}");
    }
    citations.len()
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_clients_ask_stream_follow_up_and_get_cited_answers() {
    let t = TestEnv::new().await;
    let all = TestApp::spawn(&t, &[]).await;
    let api = Api::new(all.api_port);
    api.wait_ready().await;
    let ReportWorkspace { alice, ws, other, .. } = report_workspace(&t, &api, REPORT).await;
    let (_, key) = api.post("/v1/keys", &alice, json!({"name": "openai"})).await;
    let key = key["secret"].as_str().unwrap().to_string();

    // Models: the caller's workspaces.
    let (s, models) = api.get("/v1/models", &key).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(models["object"], "list");
    // Listed by name (a model picker shows ids), the id beside it.
    assert_eq!(models["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect::<Vec<_>>(), ["Báo cáo"]);
    assert_eq!(models["data"][0]["name"], "Báo cáo");
    assert_eq!(models["data"][0]["workspace_id"], ws.as_str());

    // A question, by the workspace's name.
    let resp =
        chat(&api, &key, json!({"model": "báo cáo", "messages": [{"role": "user", "content": "Doanh thu năm 2023 là bao nhiêu?"}]})).await;
    let resp_status = resp.status();
    let first: Value = resp.json().await.unwrap();
    assert_eq!(resp_status, StatusCode::OK, "{first}");
    assert_eq!(first["object"], "chat.completion");
    let message = &first["choices"][0]["message"];
    let content = message["content"].as_str().unwrap().to_string();
    assert!(content.contains("1.245,6"), "{content}");
    assert!(check_citations(&api, &key, &ws, &content, &message["citations"]).await >= 1);
    assert_eq!(first["choices"][0]["finish_reason"], "stop");
    assert!(first["usage"]["total_tokens"].is_u64());
    let conversation = message["rag"]["conversation_id"].as_str().unwrap().to_string();

    // Streamed: the role first, the text, the citations on the last chunk, [DONE].
    let resp = chat(
        &api,
        &key,
        json!({"model": ws, "stream": true, "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "Lợi nhuận sau thuế năm 2023?"}]}),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let data = stream_data(resp).await;
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"), "{data:?}");
    let chunks: Vec<Value> = data[..data.len() - 1].iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    assert!(chunks.iter().all(|c| c["object"] == "chat.completion.chunk"), "{chunks:?}");
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect();
    assert!(text.contains("187,3"), "{text}");
    let last = chunks.iter().rev().find(|c| !c["choices"].as_array().unwrap().is_empty()).unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert!(check_citations(&api, &key, &ws, &text, &last["choices"][0]["delta"]["citations"]).await >= 1);
    assert!(chunks.last().unwrap()["usage"]["total_tokens"].is_u64(), "include_usage: a last chunk with usage");

    // A client that reads the structured citations turns the list off:
    // per request, or for its key.
    let plain = chat(
        &api,
        &key,
        json!({"model": ws, "sources_in_content": false, "messages": [{"role": "user", "content": "Doanh thu năm 2022?"}]}),
    )
    .await;
    let plain: Value = plain.json().await.unwrap();
    let plain_text = plain["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(plain_text.contains("[1]") && !plain_text.contains("**Nguồn**"), "{plain_text}");
    assert!(!plain["choices"][0]["message"]["citations"].as_array().unwrap().is_empty(), "{plain}");
    let (s, quiet_key) = api.post("/v1/keys", &alice, json!({"name": "structured", "sources_in_content": false})).await;
    assert_eq!(s, StatusCode::CREATED, "{quiet_key}");
    assert_eq!(quiet_key["sources_in_content"], false);
    let quiet_key = quiet_key["secret"].as_str().unwrap().to_string();
    let resp = chat(
        &api,
        &quiet_key,
        json!({"model": ws, "stream": true, "messages": [{"role": "user", "content": "Doanh thu thuần năm 2022?"}]}),
    )
    .await;
    let quiet: String = stream_data(resp)
        .await
        .iter()
        .filter(|d| *d != "[DONE]")
        .filter_map(|d| serde_json::from_str::<Value>(d).ok()?["choices"][0]["delta"]["content"].as_str().map(str::to_string))
        .collect();
    assert!(quiet.contains("[1]") && !quiet.contains("**Nguồn**"), "{quiet}");

    // A follow-up sends the conversation back (its sources list too): it joins it.
    let resp = chat(
        &api,
        &key,
        json!({"model": ws, "messages": [
            {"role": "system", "content": "Answer like a pirate."},
            {"role": "user", "content": "Doanh thu năm 2023 là bao nhiêu?"},
            {"role": "assistant", "content": content},
            {"role": "user", "content": "Còn năm 2022 thì sao?"},
        ]}),
    )
    .await;
    let follow: Value = resp.json().await.unwrap();
    assert_eq!(follow["choices"][0]["message"]["rag"]["conversation_id"], conversation.as_str(), "{follow}");
    let (_, stored) = api.get(&format!("/v1/workspaces/{ws}/conversations/{conversation}"), &alice).await;
    assert_eq!(stored["messages"].as_array().unwrap().len(), 4, "the page shows one conversation of two turns: {stored}");
    // Its event carries the turns as stored: the answer without the [n]
    // markers and the sources list the client sent back.
    let events = read_all(&t.env["KAFKA_BROKERS"], &t.topics().of(rag_events::EventType::QuestionAsked)).await;
    let follow_up = events
        .iter()
        .map(|m| t.codec.decode::<rag_events::QuestionAsked>(rdkafka::Message::payload(m).unwrap()).unwrap())
        .find(|e| e.question == "Còn năm 2022 thì sao?" && e.conversation_id == conversation.as_str())
        .expect("the follow-up's QuestionAsked");
    let stored_answer = stored["messages"][1]["content"].as_str().unwrap();
    let turns: Vec<(&str, &str)> = follow_up.history.iter().map(|h| (h.role.as_str(), h.content.as_str())).collect();
    assert_eq!(turns, [("user", "Doanh thu năm 2023 là bao nhiêu?"), ("assistant", stored_answer)], "{follow_up:?}");
    assert!(!stored_answer.contains("[1]"), "{stored_answer}");
    // Turns the API never answered start a conversation of their own with
    // them as its history.
    let resp = chat(
        &api,
        &key,
        json!({"model": ws, "messages": [
            {"role": "user", "content": "Báo cáo nói gì về doanh thu?"},
            {"role": "assistant", "content": "Một câu trả lời từ nơi khác."},
            {"role": "user", "content": "Còn lợi nhuận?"},
        ]}),
    )
    .await;
    let elsewhere: Value = resp.json().await.unwrap();
    assert_ne!(elsewhere["choices"][0]["message"]["rag"]["conversation_id"], conversation.as_str());
    let (_, list) = api.get(&format!("/v1/workspaces/{ws}/conversations"), &alice).await;
    let asked = list["conversations"].as_array().unwrap().len();
    assert_eq!(asked, 5, "{list}");

    // Bad input: OpenAI-shaped errors, nothing asked.
    let error = |v: &Value| {
        (v["error"]["type"].as_str().unwrap_or_default().to_string(), v["error"]["code"].as_str().unwrap_or_default().to_string())
    };
    let cases: Vec<(Option<&str>, Value, StatusCode, &str)> = vec![
        (
            Some("rag_0123456789ab_0000000000000000000000000000000000000000000000000000000000000000"),
            json!({"model": ws, "messages": [{"role": "user", "content": "x"}]}),
            StatusCode::UNAUTHORIZED,
            "invalid_api_key",
        ),
        (None, json!({"model": ws, "messages": [{"role": "user", "content": "x"}]}), StatusCode::UNAUTHORIZED, "invalid_api_key"),
        (
            Some(&key),
            json!({"model": "no-such-model", "messages": [{"role": "user", "content": "x"}]}),
            StatusCode::NOT_FOUND,
            "model_not_found",
        ),
        (Some(&key), json!({"model": other, "messages": [{"role": "user", "content": "x"}]}), StatusCode::NOT_FOUND, "model_not_found"),
        (Some(&key), json!({"model": ws, "messages": []}), StatusCode::BAD_REQUEST, "empty_messages"),
        (Some(&key), json!({"model": ws}), StatusCode::BAD_REQUEST, "invalid_json"),
        (
            Some(&key),
            json!({"model": ws, "messages": (0..500).map(|_| json!({"role": "user", "content": "hỏi"})).collect::<Vec<_>>()}),
            StatusCode::BAD_REQUEST,
            "too_many_messages",
        ),
        (Some(&key), json!({"model": ws, "messages": [{"role": "assistant", "content": "x"}]}), StatusCode::BAD_REQUEST, "no_question"),
        // The question's rule is the page's and MCP's (rag_asking::question).
        (Some(&key), json!({"model": ws, "messages": [{"role": "user", "content": " \n "}]}), StatusCode::BAD_REQUEST, "invalid_question"),
        (
            Some(&key),
            json!({"model": ws, "messages": [{"role": "user", "content": "lương\u{7}?"}]}),
            StatusCode::BAD_REQUEST,
            "invalid_question",
        ),
        (
            Some(&key),
            json!({"model": ws, "messages": [{"role": "user", "content": "ố".repeat(8001)}]}),
            StatusCode::BAD_REQUEST,
            "invalid_question",
        ),
    ];
    for (auth, body, status, code) in cases {
        let mut req = api.http.post(format!("{}/v1/chat/completions", api.base)).json(&body);
        if let Some(k) = auth {
            req = req.bearer_auth(k);
        }
        let resp = req.send().await.unwrap();
        let got = resp.status();
        let v: Value = resp.json().await.unwrap();
        assert_eq!((got, error(&v).1.as_str()), (status, code), "{body}: {v}");
    }
    let resp = api
        .http
        .post(format!("{}/v1/chat/completions", api.base))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(error(&v).0, "invalid_request_error");
    let huge = || {
        api.http
            .post(format!("{}/v1/chat/completions", api.base))
            .bearer_auth(&key)
            .header("content-type", "application/json")
            .body(vec![b' '; 8 * 1024 * 1024])
    };
    let resp = send_refusable(huge, "an 8 MiB chat request").await;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    // The body was left unread: the connection ends, and the answer says
    // so, so the client's next request (below) goes on a new one.
    assert_eq!(resp.headers()["connection"], "close");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(error(&v), ("invalid_request_error".to_string(), "payload_too_large".to_string()), "as docs/api.md says: {v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("larger than 1048576 bytes"), "{v}");
    let (_, list) = api.get(&format!("/v1/workspaces/{ws}/conversations"), &alice).await;
    assert_eq!(list["conversations"].as_array().unwrap().len(), asked, "bad requests ask nothing");
    t.cleanup().await;
}

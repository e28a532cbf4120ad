//! The MCP server at `/mcp` on the wire (JSON-RPC over Streamable HTTP,
//! stateless, JSON answers) against the real stack: refused without a
//! key; initialize; the four tools listed with their schemas; each called,
//! passages and citations being the raw text at their ranges; a foreign
//! workspace and bad arguments are tool errors (`isError`), not transport
//! errors. The official Python client is tested in scripts/client-test.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::api_client::*;
use crate::app::TestApp;
use crate::common::*;

const REPORT: &str =
    "Doanh thu thuần năm 2023 đạt 1.245,6 tỷ đồng, tăng 12,4% so với năm trước.\n\nLợi nhuận sau thuế năm 2023 đạt 187,3 tỷ đồng.";
const PROTOCOL: &str = "2025-06-18";

struct Mcp<'a> {
    api: &'a Api,
    key: &'a str,
    id: u64,
}

impl Mcp<'_> {
    /// One JSON-RPC request; its HTTP status and body.
    async fn call(&mut self, method: &str, params: Value) -> (StatusCode, Value) {
        self.id += 1;
        let resp = self
            .api
            .http
            .post(format!("{}/mcp", self.api.base))
            .bearer_auth(self.key)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL)
            .json(&json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params}))
            .send()
            .await
            .unwrap();
        let status = resp.status();
        let text = resp.text().await.unwrap();
        // A JSON answer, or the one `data:` event of an SSE answer.
        let body = serde_json::from_str(&text)
            .or_else(|_| serde_json::from_str(text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or("null")))
            .unwrap_or(Value::String(text));
        (status, body)
    }

    async fn tool(&mut self, name: &str, arguments: Value) -> Value {
        let (status, body) = self.call("tools/call", json!({"name": name, "arguments": arguments})).await;
        assert_eq!(status, StatusCode::OK, "{name}: {body}");
        assert!(body.get("error").is_none(), "a tool's failure is not a transport error: {body}");
        body["result"].clone()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn agents_list_search_ask_and_read_through_mcp() {
    let t = TestEnv::new().await;
    let all = TestApp::spawn(&t, &[]).await;
    let api = Api::new(all.api_port);
    api.wait_ready().await;
    let ReportWorkspace { alice, ws, doc, other } = report_workspace(&t, &api, REPORT).await;
    let (_, key) = api.post("/v1/keys", &alice, json!({"name": "agent", "workspace_id": ws})).await;
    let key = key["secret"].as_str().unwrap().to_string();
    let raw: String = {
        let (_, raw) = api.get(&format!("/v1/workspaces/{ws}/documents/{doc}/raw-text"), &alice).await;
        raw["segments"].as_array().unwrap().iter().map(|s| s["text"].as_str().unwrap()).collect()
    };
    let slice = |s: u64, e: u64| raw.chars().skip(s as usize).take((e - s) as usize).collect::<String>();

    // No key, a wrong one: refused before the protocol runs, the reason in
    // a JSON-RPC error (which MCP clients show).
    for bad in ["", "rag_0123456789ab_0000000000000000000000000000000000000000000000000000000000000000"] {
        let (status, body) = Mcp { api: &api, key: bad, id: 0 }.call("tools/list", json!({})).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(body["error"]["code"], -32001, "{body}");
        assert!(body["error"]["message"].as_str().unwrap().starts_with("unauthorized: "), "{body}");
    }

    let mut mcp = Mcp { api: &api, key: &key, id: 0 };
    let (status, init) = mcp
        .call("initialize", json!({"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "it", "version": "0"}}))
        .await;
    assert_eq!(status, StatusCode::OK, "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "rag-engine", "{init}");
    assert!(init["result"]["capabilities"]["tools"].is_object(), "{init}");

    let (_, tools) = mcp.call("tools/list", json!({})).await;
    let tools = tools["result"]["tools"].as_array().unwrap().clone();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["ask", "list_workspaces", "read_passage", "search"]);
    let search_tool = tools.iter().find(|t| t["name"] == "search").unwrap();
    assert_eq!(search_tool["inputSchema"]["required"], json!(["workspace", "query"]), "{search_tool}");
    // Plain JSON Schema (no `uint64`, no type lists), an outputSchema each.
    for tool in &tools {
        let schemas = json!([tool["inputSchema"], tool["outputSchema"]]).to_string();
        assert!(!schemas.contains("\"format\"") && !schemas.contains("\"type\":["), "{schemas}");
        assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
    }

    let listed = mcp.tool("list_workspaces", json!({})).await;
    assert_eq!(listed["structuredContent"]["workspaces"], json!([{"id": ws, "name": "Báo cáo"}]), "a key for one workspace lists it alone");

    // A workspace by its name (case aside) as well as by its id.
    let found = mcp.tool("search", json!({"workspace": "báo cáo", "query": "lợi nhuận sau thuế", "top_k": 3})).await;
    let passages = found["structuredContent"]["passages"].as_array().unwrap().clone();
    assert!(!passages.is_empty(), "{found}");
    for p in &passages {
        assert_eq!(p["document_id"], doc.as_str());
        assert_eq!(slice(p["char_start"].as_u64().unwrap(), p["char_end"].as_u64().unwrap()), p["text"].as_str().unwrap());
        assert_eq!(p["page"], 1);
    }

    let answered = mcp.tool("ask", json!({"workspace": ws, "question": "Doanh thu năm 2023 là bao nhiêu?"})).await;
    assert_ne!(answered["isError"], true, "{answered}");
    let text = answered["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("1.245,6") && text.contains("[1]") && text.contains("**Nguồn**"), "{text}");
    let citations = answered["structuredContent"]["citations"].as_array().unwrap();
    assert!(!citations.is_empty());
    for c in citations {
        let (s, e) = (c["char_start"].as_u64().unwrap(), c["char_end"].as_u64().unwrap());
        assert_eq!(slice(s, e), c["text"].as_str().unwrap());
        let read = mcp
            .tool(
                "read_passage",
                json!({"workspace": ws, "document_id": c["document_id"], "char_start": s, "char_end": e, "context_chars": 20}),
            )
            .await;
        let r = &read["structuredContent"];
        assert_eq!(r["text"], c["text"], "{read}");
        assert_eq!(r["page"], 1);
        assert_eq!(r["before"].as_str().unwrap().chars().count(), (s as usize).min(20));
    }
    // The question is an ordinary one: a conversation on the page.
    let (_, list) = api.get(&format!("/v1/workspaces/{ws}/conversations"), &alice).await;
    assert_eq!(list["conversations"].as_array().unwrap().len(), 1);

    // Tool errors, not transport errors; another user's workspace is "not found".
    for (name, args, says) in [
        ("search", json!({"workspace": other, "query": "x"}), "workspace not found"),
        ("ask", json!({"workspace": other, "question": "x"}), "workspace not found"),
        // Bob's workspace by its name: not Alice's to reach.
        ("search", json!({"workspace": "Bob", "query": "x"}), "workspace not found"),
        ("search", json!({"workspace": ws, "query": "x", "top_k": 500}), "top_k"),
        ("search", json!({"workspace": ws, "query": "   "}), "query"),
        // The question's rule is the page's and the chat endpoint's (rag_api::question).
        ("ask", json!({"workspace": ws, "question": "  "}), "question must have 1-8000 characters (has 0)"),
        ("ask", json!({"workspace": ws, "question": "lương\u{7}?"}), "question contains control characters"),
        ("read_passage", json!({"workspace": ws, "document_id": doc, "char_start": 5, "char_end": 1_000_000}), "range"),
        ("read_passage", json!({"workspace": ws, "document_id": "not-a-uuid", "char_start": 0, "char_end": 1}), "document not found"),
    ] {
        let r = mcp.tool(name, args.clone()).await;
        assert_eq!(r["isError"], true, "{name} {args}: {r}");
        assert!(r["content"][0]["text"].as_str().unwrap().contains(says), "{name} {args}: {r}");
    }
    // Arguments that do not fit the schema are refused too.
    let (status, body) = mcp.call("tools/call", json!({"name": "search", "arguments": {"workspace": ws}})).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body["error"].is_object() || body["result"]["isError"] == true, "{body}");
    t.cleanup().await;
}

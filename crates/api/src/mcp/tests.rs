use serde_json::{json, Value};

use super::schema::STANDARD_FORMATS;
use super::*;

/// Every place in a schema a client would warn about.
fn unportable(schema: &Value, at: &str, found: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(f) = map.get("format").and_then(Value::as_str) {
                if !STANDARD_FORMATS.contains(&f) {
                    found.push(format!("{at}: format {f}"));
                }
            }
            if map.get("type").is_some_and(Value::is_array) {
                found.push(format!("{at}: type {}", map["type"]));
            }
            for (k, v) in map {
                if !matches!(k.as_str(), "default" | "const" | "enum" | "examples") {
                    unportable(v, &format!("{at}.{k}"), found);
                }
            }
        }
        Value::Array(items) => items.iter().enumerate().for_each(|(i, v)| unportable(v, &format!("{at}[{i}]"), found)),
        _ => {}
    }
}

#[test]
fn listed_tools_have_plain_schemas_and_declare_their_output() {
    let tools = portable_tools();
    let mut names: Vec<&str> = tools.keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(names, ["ask", "list_workspaces", "read_passage", "search"]);
    let mut found = Vec::new();
    for tool in tools.values() {
        unportable(&Value::Object(tool.input_schema.as_ref().clone()), &format!("{}.inputSchema", tool.name), &mut found);
        let output = tool.output_schema.as_ref().unwrap_or_else(|| panic!("{} declares no outputSchema", tool.name));
        assert_eq!(output.get("type"), Some(&json!("object")), "{}", tool.name);
        unportable(&Value::Object(output.as_ref().clone()), &format!("{}.outputSchema", tool.name), &mut found);
    }
    assert!(found.is_empty(), "{found:#?}");
    // Before: formats and type arrays in the schemas rmcp made.
    let mut before = Vec::new();
    for tool in RagMcp::tool_router().list_all() {
        unportable(&Value::Object(tool.input_schema.as_ref().clone()), &tool.name, &mut before);
    }
    assert!(!before.is_empty(), "the transform has nothing to do: is it still needed?");

    let search = Value::Object(tools["search"].input_schema.as_ref().clone());
    assert_eq!(
        search["properties"]["top_k"],
        json!({"type": "integer", "minimum": 1, "maximum": 20, "default": 5, "description": "How many passages (1-20, default 5)."})
    );
    assert_eq!(search["required"], json!(["workspace", "query"]));
    let read = Value::Object(tools["read_passage"].input_schema.as_ref().clone());
    assert_eq!(read["properties"]["char_start"]["type"], "integer");
    assert_eq!(read["properties"]["char_start"]["minimum"], 0);
    let ask = Value::Object(tools["ask"].output_schema.as_ref().unwrap().as_ref().clone());
    assert_eq!(ask["required"], json!(["answer", "citations", "rag"]));
}

#[test]
fn the_answer_keeps_its_shape_through_the_declared_type() {
    // As routes::openai's `Answered::structured` writes it.
    let structured = json!({
        "answer": "Doanh thu năm 2023 đạt 1.245,6 tỷ đồng. [1]\n\nBảng. [2]",
        "citations": [
            {"index": 1, "document_id": "d1", "filename": "bao-cao.pdf", "char_start": 3, "char_end": 40,
             "text": "Doanh thu", "url": "http://h/#ws=w&c=c&doc=d1&span=3-40", "page": 2, "revision": 1},
            {"index": 2, "document_id": "d2", "filename": null, "char_start": 0, "char_end": 9,
             "text": "A | B", "url": "http://h/#ws=w&c=c&doc=d2&span=0-9", "cell_range": "Sheet1!A2:B2", "revision": 3},
        ],
        "rag": {"workspace_id": "w", "conversation_id": "01a2", "message_id": "01a3", "abstained": false},
    });
    let typed: AskAnswer = serde_json::from_value(structured.clone()).unwrap();
    assert_eq!(serde_json::to_value(typed).unwrap(), structured);
}

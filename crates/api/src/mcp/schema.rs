//! Tool schemas as every MCP client reads them silently ([`portable`]).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use rmcp::model::{JsonObject, Tool};
use serde_json::Value;

use super::RagMcp;

/// Formats every JSON Schema validator knows (2020-12, section 7.3);
/// schemars adds others (`uint64`, `int32`, `double`, …) that Ajv warns
/// about.
pub(super) const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords that describe a schema rather than constrain a type: they stay
/// beside `anyOf` when [`portable`] splits a `type` array.
const ANNOTATIONS: [&str; 9] = ["description", "title", "default", "examples", "deprecated", "readOnly", "writeOnly", "$schema", "$defs"];

/// A schema as every MCP client reads it silently: a `format` outside
/// [`STANDARD_FORMATS`] is dropped (an integer keeps its `minimum: 0`), and
/// a `type` array (`["string", "null"]`, which schemars writes for an
/// `Option`) becomes `anyOf` of one type each, its constraints in the
/// non-null branch. Values (`default`, `const`, `enum`, `examples`) are
/// left as they are.
pub fn portable(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.get("format").and_then(Value::as_str).is_some_and(|f| !STANDARD_FORMATS.contains(&f)) {
                map.remove("format");
            }
            if let Some(Value::Array(types)) = map.get("type").cloned() {
                map.remove("type");
                let constraints: Vec<String> = map.keys().filter(|k| !ANNOTATIONS.contains(&k.as_str())).cloned().collect();
                let mut branch = serde_json::Map::new();
                for k in constraints {
                    if let Some(v) = map.remove(&k) {
                        branch.insert(k, v);
                    }
                }
                let branches = types
                    .into_iter()
                    .map(|t| {
                        let mut b = if t == "null" { serde_json::Map::new() } else { branch.clone() };
                        b.insert("type".into(), t);
                        Value::Object(b)
                    })
                    .collect();
                map.insert("anyOf".into(), Value::Array(branches));
            }
            for (k, v) in map.iter_mut() {
                if !matches!(k.as_str(), "default" | "const" | "enum" | "examples") {
                    portable(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(portable),
        _ => {}
    }
}

fn portable_object(schema: &Arc<JsonObject>) -> Arc<JsonObject> {
    let mut value = Value::Object(schema.as_ref().clone());
    portable(&mut value);
    match value {
        Value::Object(map) => Arc::new(map),
        _ => schema.clone(),
    }
}

/// The tools as listed: rmcp's, their schemas made [`portable`] (once).
pub(super) fn portable_tools() -> &'static HashMap<String, Tool> {
    static TOOLS: LazyLock<HashMap<String, Tool>> = LazyLock::new(|| {
        RagMcp::tool_router()
            .list_all()
            .into_iter()
            .map(|mut tool| {
                tool.input_schema = portable_object(&tool.input_schema);
                tool.output_schema = tool.output_schema.as_ref().map(portable_object);
                (tool.name.to_string(), tool)
            })
            .collect()
    });
    &TOOLS
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn portable_splits_type_arrays_and_drops_unknown_formats() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "page": {"type": ["integer", "null"], "format": "uint32", "minimum": 0, "description": "p"},
                "when": {"type": "string", "format": "date-time"},
                "format": {"type": "number", "format": "double", "default": {"format": "kept"}},
            },
        });
        portable(&mut schema);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "page": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}], "description": "p"},
                    "when": {"type": "string", "format": "date-time"},
                    "format": {"type": "number", "default": {"format": "kept"}},
                },
            })
        );
    }
}

//! The output contract's fixed opening written for the model, so its first
//! generated token after `true` is the answer's own (llama.cpp's assistant
//! prefill: a chat whose last message is the assistant's is continued, and
//! a GBNF `grammar` constrains what follows).
//!
//! Why: the contract's opening `{"answerable": true, "sections": [{"cites":
//! ["S1"], "text": "` is some 22 tokens the model otherwise decodes one by
//! one (about 2.5 s at the 1.5B model's 8–10 tokens/s on 2 cores) before
//! its first word can stream. Written for it, that text is read at prefill
//! speed instead. The model still says `true` or `false` itself, with its
//! token probabilities (the decision's P(answerable)): the first call asks
//! for that one value ([`ANSWERABLE_OPENING`], [`ANSWERABLE_GRAMMAR`]), the
//! second continues after it ([`sections_opening`], [`sections_grammar`]).
//! What the model writes is the same object the schema asks for, its
//! properties in the same order, in JSON without optional whitespace.

use super::MAX_SECTIONS;

/// The answer's first characters, up to the value of `answerable`.
pub const ANSWERABLE_OPENING: &str = "{\"answerable\":";

/// The value after [`ANSWERABLE_OPENING`]: the token ` true` or ` false`
/// (the space with it, as the model writes it unprompted).
pub const ANSWERABLE_GRAMMAR: &str = "root ::= \" true\" | \" false\"";

/// Tokens the value may take (one, but a model may spell ` t` `rue`).
pub const ANSWERABLE_MAX_TOKENS: u32 = 4;

/// Cited ids a section may have (the schema's `maxItems`).
const MAX_CITES: usize = 4;

/// The answer up to the first section's first value, once the model said it
/// is answerable: `text_first` as [`crate::llm::Format::SchemaKeysFirst`]
/// orders a section's properties, else as the schema lists them (`cites`
/// first, serde_json's sorted order).
pub fn sections_opening(text_first: bool) -> String {
    let first = if text_first { "{\"text\": \"" } else { "{\"cites\": [" };
    format!("{ANSWERABLE_OPENING} true, \"sections\": [{first}")
}

/// The grammar of what follows [`sections_opening`]: the first section
/// finished, up to [`MAX_SECTIONS`] in all, each citing one to four of
/// `ids`, an optional `quote` after its two required properties, then
/// the object closed. The same language the schema's grammar accepts,
/// without optional whitespace, but for one thing: a section's text is
/// not empty and does not open with an id (`S1`, `S 1`, `S₁`): written
/// text first, the 1.5B model put the id it meant in the text ("S1") in 7
/// sections of one 90-question run, and "S1" streamed as the answer.
/// After an `S` comes a letter.
pub fn sections_grammar(ids: &[String], text_first: bool) -> String {
    let id_rule = if ids.is_empty() {
        "string".to_string()
    } else {
        ids.iter().map(|id| gbnf_literal(&format!("\"{id}\""))).collect::<Vec<_>>().join(" | ")
    };
    let (first_rest, section) = if text_first {
        (
            // Inside the first section's text.
            "text \"\\\"\" \", \\\"cites\\\": [\" cites quote? \"}\"",
            "\"{\\\"text\\\": \\\"\" text \"\\\", \\\"cites\\\": [\" cites quote? \"}\"",
        )
    } else {
        (
            // Inside the first section's cites.
            "cites \", \\\"text\\\": \\\"\" text \"\\\"\" quote? \"}\"",
            "\"{\\\"cites\\\": [\" cites \", \\\"text\\\": \\\"\" text \"\\\"\" quote? \"}\"",
        )
    };
    let more = MAX_SECTIONS.saturating_sub(1);
    let more_cites = MAX_CITES - 1;
    format!(
        "root ::= {first_rest} (\", \" section){{0,{more}}} \"]}}\"\n\
         section ::= {section}\n\
         cites ::= id (\", \" id){{0,{more_cites}}} \"]\"\n\
         id ::= {id_rule}\n\
         quote ::= \", \\\"quote\\\": \" string\n\
         string ::= \"\\\"\" char* \"\\\"\"\n\
         text ::= lead char*\n\
         lead ::= [^\"\\\\\\x7F\\x00-\\x1FS] | \"S\" [a-zA-Z\\u00C0-\\u1FFF\\u3000-\\uFFFF] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{{4}})\n\
         char ::= [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{{4}})\n"
    )
}

/// `text` as a GBNF string literal.
fn gbnf_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_openings_are_the_contracts_own_first_characters() {
        let cites_first = format!("{}\"S1\"], \"text\": \"Có.\"}}]}}", sections_opening(false));
        let text_first = format!("{}Yes.\", \"cites\": [\"S1\"]}}]}}", sections_opening(true));
        for content in [cites_first, text_first] {
            let parsed = crate::contract::parse(&content).unwrap();
            assert!(!parsed.lenient, "{content}");
            assert!(parsed.answer.answerable);
            assert_eq!(parsed.answer.sections[0].cites, ["S1"]);
        }
        assert!(sections_opening(false).starts_with(ANSWERABLE_OPENING));
    }

    #[test]
    fn the_grammar_names_only_the_prompts_ids_and_the_schemas_bounds() {
        let ids = vec!["S1".to_string(), "S12".to_string()];
        let g = sections_grammar(&ids, false);
        assert!(g.contains("id ::= \"\\\"S1\\\"\" | \"\\\"S12\\\"\"\n"), "{g}");
        assert!(g.starts_with("root ::= cites \", \\\"text\\\": \\\"\" text \"\\\"\" quote? \"}\" (\", \" section){0,3} \"]}\"\n"), "{g}");
        assert!(g.contains("cites ::= id (\", \" id){0,3} \"]\"\n"), "{g}");
        let t = sections_grammar(&ids, true);
        assert!(t.starts_with("root ::= text \"\\\"\" \", \\\"cites\\\": [\" cites quote? \"}\""), "{t}");
        assert!(t.contains("section ::= \"{\\\"text\\\": \\\"\" text \"\\\", \\\"cites\\\": [\" cites quote? \"}\"\n"), "{t}");
        // A text is not empty and does not open with an id: after an S, a letter.
        assert!(t.contains("text ::= lead char*\n"), "{t}");
        assert!(t.contains("lead ::= [^\"\\\\\\x7F\\x00-\\x1FS] | \"S\" [a-zA-Z\\u00C0-\\u1FFF\\u3000-\\uFFFF] |"), "{t}");
        // An id with a quote or a backslash stays one literal.
        assert_eq!(gbnf_literal("\"a\\b\""), "\"\\\"a\\\\b\\\"\"");
    }
}

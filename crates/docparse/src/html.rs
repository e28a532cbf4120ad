//! HTML: the visible text, one block per block-level element.

use scraper::{Html, Node};

use crate::Block;

const SKIP: &[&str] = &["script", "style", "head", "noscript", "template", "svg", "iframe", "object", "title"];
const BLOCK: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "header",
    "footer",
    "main",
    "aside",
    "nav",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "li",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "table",
    "tr",
    "blockquote",
    "pre",
    "figure",
    "figcaption",
    "form",
    "fieldset",
    "address",
    "hr",
    "body",
    "thead",
    "tbody",
    "tfoot",
    "caption",
];

pub fn blocks(text: &str) -> Vec<Block> {
    let doc = Html::parse_document(text);
    let mut out = Vec::new();
    let mut current = String::new();
    walk(doc.tree.root(), &mut current, &mut out, false);
    flush(&mut current, &mut out);
    out
}

fn flush(current: &mut String, out: &mut Vec<Block>) {
    let t = current.trim();
    if !t.is_empty() {
        out.push(Block::new(0, t));
    }
    current.clear();
}

fn walk(node: ego_tree::NodeRef<'_, Node>, current: &mut String, out: &mut Vec<Block>, pre: bool) {
    for child in node.children() {
        match child.value() {
            Node::Text(t) => {
                if pre {
                    current.push_str(t);
                } else {
                    // Collapse whitespace as a browser does.
                    let collapsed: String = t.split_whitespace().collect::<Vec<_>>().join(" ");
                    if collapsed.is_empty() {
                        if !t.is_empty() && !current.ends_with([' ', '\n']) && !current.is_empty() {
                            current.push(' ');
                        }
                        continue;
                    }
                    if t.starts_with(char::is_whitespace) && !current.ends_with([' ', '\n']) && !current.is_empty() {
                        current.push(' ');
                    }
                    current.push_str(&collapsed);
                    if t.ends_with(char::is_whitespace) {
                        current.push(' ');
                    }
                }
            }
            Node::Element(e) => {
                let name = e.name();
                if SKIP.contains(&name) {
                    continue;
                }
                if name == "br" {
                    current.push('\n');
                    continue;
                }
                let is_block = BLOCK.contains(&name);
                if is_block {
                    flush(current, out);
                }
                if (name == "td" || name == "th") && !current.is_empty() && !current.ends_with(' ') {
                    current.push_str(" | ");
                }
                walk(child, current, out, pre || name == "pre");
                if is_block {
                    flush(current, out);
                }
            }
            _ => {}
        }
    }
}

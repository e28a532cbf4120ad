//! HTML: the visible text, one block per block-level element.

use scraper::{Html, Node};

use crate::{Block, OutputBudget, ParseError};

/// Elements whose content is not text a reader sees (the reading view
/// skips the same ones, so its text lines up with the raw text).
pub const SKIPPED_ELEMENTS: &[&str] = &["script", "style", "head", "noscript", "template", "svg", "iframe", "object", "title"];
/// Elements that end a block of text (a paragraph of the raw text).
pub const BLOCK_ELEMENTS: &[&str] = &[
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

pub fn blocks(text: &str, budget: &mut OutputBudget) -> Result<Vec<Block>, ParseError> {
    let doc = Html::parse_document(text);
    let mut out = Vec::new();
    let mut current = String::new();
    walk(doc.tree.root(), &mut current, &mut out, budget)?;
    flush(&mut current, &mut out);
    Ok(out)
}

fn flush(current: &mut String, out: &mut Vec<Block>) {
    let t = current.trim();
    if !t.is_empty() {
        out.push(Block::new(0, t));
    }
    current.clear();
}

/// One step of the walk: enter a node (inside `<pre>` or not), or leave an
/// element (a block element ends its block).
enum Step<'a> {
    Enter(ego_tree::NodeRef<'a, Node>, bool),
    Leave { block: bool },
}

/// Depth-first over the tree with an explicit stack: an upload of 200,000
/// nested elements is as deep as the document says, and a recursive walk
/// overflowed the thread's stack with it (aborting the whole process).
fn walk(
    root: ego_tree::NodeRef<'_, Node>,
    current: &mut String,
    out: &mut Vec<Block>,
    budget: &mut OutputBudget,
) -> Result<(), ParseError> {
    let mut stack: Vec<Step<'_>> = root.children().rev().map(|c| Step::Enter(c, false)).collect();
    while let Some(step) = stack.pop() {
        let (node, pre) = match step {
            Step::Leave { block } => {
                if block {
                    flush(current, out);
                }
                continue;
            }
            Step::Enter(node, pre) => (node, pre),
        };
        match node.value() {
            Node::Text(t) => {
                let before = current.len();
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
                budget.take(current.len() - before)?;
            }
            Node::Element(e) => {
                let name = e.name();
                if SKIPPED_ELEMENTS.contains(&name) {
                    continue;
                }
                if name == "br" {
                    budget.take(1)?;
                    current.push('\n');
                    continue;
                }
                let is_block = BLOCK_ELEMENTS.contains(&name);
                if is_block {
                    flush(current, out);
                }
                if (name == "td" || name == "th") && !current.is_empty() && !current.ends_with(' ') {
                    budget.take(3)?;
                    current.push_str(" | ");
                }
                stack.push(Step::Leave { block: is_block });
                let pre = pre || name == "pre";
                stack.extend(node.children().rev().map(|c| Step::Enter(c, pre)));
            }
            _ => {}
        }
    }
    Ok(())
}

//! The reading view of a document: a Markdown or HTML document shown as
//! its author structured it (headings, lists, emphasis, links, tables)
//! rather than as its raw text, with a cited span still highlighted
//! exactly.
//!
//! The view is a tree of [`Node`]s: elements from a fixed list ([`Tag`]:
//! nothing else can come out, so a page that draws the tree with
//! `createElement` and `textContent` never runs or fetches anything of the
//! document's), and texts. A text that shows characters of the raw text
//! says where they start ([`Node::Text::at`], in Unicode scalar values,
//! as every offset of the project counts): characters `at..at + len` of
//! the raw text are exactly the text's characters, so the page marks a
//! citation's `char_start..char_end` by slicing the texts it overlaps. A
//! text without `at` (a list's bullet number, a space between inline
//! elements, an HTML text the raw text does not hold) is shown, never
//! marked.
//!
//! - Markdown: the raw text *is* the Markdown (normalised: NFC, line ends,
//!   blank lines), so it is parsed as CommonMark with tables and
//!   strikethrough, and every text's source range gives its offset.
//! - HTML: the raw text is the visible text, one paragraph per block
//!   element; the original is walked the same way (the same elements
//!   skipped) and each text is found in the raw text in order.

mod html;
mod markdown;

use serde::Serialize;

pub use html::{html, tag_depth, MAX_HTML_DEPTH};
pub use markdown::markdown;

/// The elements a reading view may hold. Anything else in a document is
/// shown as its content, or (a script, a style) not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tag {
    H1,
    H2,
    H3,
    H4,
    H5,
    H6,
    P,
    Div,
    Ul,
    Ol,
    Li,
    Blockquote,
    Pre,
    Code,
    Em,
    Strong,
    Del,
    /// A link: `href` only when it is `http:`, `https:` or `mailto:`.
    A,
    Table,
    Thead,
    Tbody,
    Tr,
    Th,
    Td,
    Hr,
    Br,
    /// Inline content with no meaning of its own here (a picture's
    /// alternative text: the picture itself is never fetched).
    Span,
}

impl Tag {
    pub fn heading(level: usize) -> Tag {
        match level {
            1 => Tag::H1,
            2 => Tag::H2,
            3 => Tag::H3,
            4 => Tag::H4,
            5 => Tag::H5,
            _ => Tag::H6,
        }
    }
}

/// One node of a reading view.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Node {
    Text {
        text: String,
        /// Where `text` starts in the raw text (its characters are the
        /// raw text's, one for one); absent: shown, never marked.
        #[serde(skip_serializing_if = "Option::is_none")]
        at: Option<u64>,
    },
    Element {
        tag: Tag,
        #[serde(skip_serializing_if = "Option::is_none")]
        href: Option<String>,
        /// An ordered list's first number, when it is not 1.
        #[serde(skip_serializing_if = "Option::is_none")]
        start: Option<u64>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        children: Vec<Node>,
    },
}

impl Node {
    pub fn element(tag: Tag) -> Node {
        Node::Element { tag, href: None, start: None, children: Vec::new() }
    }

    pub fn text(text: impl Into<String>, at: Option<u64>) -> Node {
        Node::Text { text: text.into(), at }
    }

    fn push(&mut self, child: Node) {
        if let Node::Element { children, .. } = self {
            children.push(child);
        }
    }
}

/// How deep a view nests at most: deeper elements are shown as their
/// content. An upload of 200,000 nested elements stays a flat view, which
/// serialising and drawing walk without exhausting a stack.
pub const MAX_DEPTH: usize = 48;

/// A link's target, if it is one a reader may follow: `http:`, `https:`
/// or `mailto:` (never `javascript:`, `data:` or a path of the document's
/// own site, which means nothing here).
pub fn safe_href(href: &str) -> Option<String> {
    let h = href.trim();
    let scheme = h.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
    matches!(scheme.as_deref(), Some("http" | "https" | "mailto")).then(|| h.to_string())
}

/// Builds a tree from opening and closing elements: what `markdown` and
/// `html` both do while they walk their sources.
struct Builder {
    /// The elements open now; the first is the root's stand-in.
    open: Vec<Node>,
    /// Elements opened past `MAX_DEPTH`, shown as their content.
    flattened: usize,
}

impl Builder {
    fn new() -> Builder {
        Builder { open: vec![Node::element(Tag::Div)], flattened: 0 }
    }

    fn open(&mut self, node: Node) {
        if self.open.len() > MAX_DEPTH {
            self.flattened += 1;
        } else {
            self.open.push(node);
        }
    }

    fn close(&mut self) {
        if self.flattened > 0 {
            self.flattened -= 1;
        } else if self.open.len() > 1 {
            if let Some(node) = self.open.pop() {
                self.add(node);
            }
        }
    }

    fn add(&mut self, node: Node) {
        if let Some(parent) = self.open.last_mut() {
            parent.push(node);
        }
    }

    /// A text, joined to the text before it when both show adjacent
    /// characters of the raw text (or neither shows any): fewer nodes.
    fn text(&mut self, text: &str, at: Option<u64>) {
        if text.is_empty() {
            return;
        }
        if let Some(Node::Element { children, .. }) = self.open.last_mut() {
            if let Some(Node::Text { text: before, at: before_at }) = children.last_mut() {
                let joins = match (*before_at, at) {
                    (None, None) => true,
                    (Some(b), Some(a)) => b + before.chars().count() as u64 == a,
                    _ => false,
                };
                if joins {
                    before.push_str(text);
                    return;
                }
            }
            children.push(Node::text(text, at));
        }
    }

    fn finish(mut self) -> Vec<Node> {
        while self.open.len() > 1 {
            self.close();
        }
        match self.open.pop() {
            Some(Node::Element { children, .. }) => children,
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_links_a_reader_may_follow_keep_their_target() {
        assert_eq!(safe_href("https://example.com/a"), Some("https://example.com/a".into()));
        assert_eq!(safe_href(" MAILTO:a@b.vn"), Some("MAILTO:a@b.vn".into()));
        for bad in ["javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,x", "/etc/passwd", "chinh-sach.md", "vbscript:x", ""] {
            assert_eq!(safe_href(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_view_serialises_as_tags_and_texts_with_their_offsets() {
        let view = vec![Node::Element {
            tag: Tag::H2,
            href: None,
            start: None,
            children: vec![Node::text("Giờ", Some(3)), Node::text(" ", None)],
        }];
        let json = serde_json::to_string(&view).unwrap();
        assert_eq!(json, r#"[{"tag":"h2","children":[{"text":"Giờ","at":3},{"text":" "}]}]"#);
    }
}

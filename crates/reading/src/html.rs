//! HTML: the original walked as the parser walks it (the same elements
//! skipped), its structure kept where it is one of the view's tags, and
//! each text found in the raw text in order.

use rag_docparse::{HTML_BLOCK_ELEMENTS, HTML_SKIPPED_ELEMENTS};
use scraper::{Html, Node as Dom};
use unicode_normalization::UnicodeNormalization;

use crate::{safe_href, Builder, Node, Tag};

/// How far past the last placed text the next one is looked for, in
/// bytes of the raw text: between two texts of the page there is only a
/// separator (a blank line, " | " between cells), or a short text that
/// could not be placed, so a text further away is not the one shown (it
/// is shown, unmarked, rather than marked in the wrong place).
const LOOKAHEAD: usize = 256;

/// How deep an HTML original's tags may nest (as counted by
/// `tag_depth`) for a reading view: html5ever nests elements in quadratic
/// time (50,000 nested `<div>`s took 92 s in a dev build, 5,000 about
/// 1.5 s), and a view is drawn on every opening, inside the API.
pub const MAX_HTML_DEPTH: usize = 4_000;

/// An upper bound of how deep `source`'s elements nest, by a scan of its
/// tags alone (no tree: a start tag counts one down, an end tag one up,
/// void and self-closed ones nothing; an unclosed `<p>` counts, so a page
/// of them is overestimated, never a deep one under).
pub fn tag_depth(source: &str) -> usize {
    const VOID: &[&str] = &["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"];
    let bytes = source.as_bytes();
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut i = 0;
    while let Some(at) = source[i..].find('<') {
        let start = i + at + 1;
        i = start;
        match bytes.get(start) {
            Some(b'/') => depth = depth.saturating_sub(1),
            Some(c) if c.is_ascii_alphabetic() => {
                let name: String =
                    source[start..].chars().take_while(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
                // The tag's end, looked for only up to the next tag (so the
                // scan stays linear however the page is broken).
                let end = bytes[start..].iter().position(|&b| b == b'>' || b == b'<').map(|e| start + e);
                let self_closed = end.is_some_and(|e| bytes[e] == b'>' && e > start && bytes[e - 1] == b'/');
                if !VOID.contains(&name.as_str()) && !self_closed {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
            }
            _ => {}
        }
    }
    deepest
}

/// The reading view of an HTML document: `source` is the original (as
/// uploaded, UTF-8), `raw` its raw text.
pub fn html(source: &str, raw: &str) -> Vec<Node> {
    let doc = Html::parse_document(source);
    let mut view = Builder::new();
    let mut place = Placer { raw, byte: 0, chars: 0 };
    let mut stack: Vec<Step<'_>> = doc.tree.root().children().rev().map(|c| Step::Enter(c, false)).collect();
    while let Some(step) = stack.pop() {
        let (node, pre) = match step {
            Step::Leave(true) => {
                view.close();
                continue;
            }
            Step::Leave(false) => continue,
            Step::Enter(node, pre) => (node, pre),
        };
        match node.value() {
            Dom::Text(t) if pre => {
                for (i, line) in t.split('\n').enumerate() {
                    if i > 0 {
                        view.text("\n", None);
                    }
                    place.text(&mut view, line);
                }
            }
            Dom::Text(t) => {
                let collapsed = t.split_whitespace().collect::<Vec<_>>().join(" ");
                if t.starts_with(char::is_whitespace) {
                    view.text(" ", None);
                }
                place.text(&mut view, &collapsed);
                if !collapsed.is_empty() && t.ends_with(char::is_whitespace) {
                    view.text(" ", None);
                }
            }
            Dom::Element(e) => {
                let name = e.name();
                if HTML_SKIPPED_ELEMENTS.contains(&name) {
                    continue;
                }
                let opened = match name {
                    "br" => {
                        view.add(Node::element(Tag::Br));
                        continue;
                    }
                    "hr" => {
                        view.add(Node::element(Tag::Hr));
                        continue;
                    }
                    "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => Some(Node::element(Tag::heading(usize::from(name.as_bytes()[1] - b'0')))),
                    "p" => Some(Node::element(Tag::P)),
                    "ul" => Some(Node::element(Tag::Ul)),
                    "ol" => {
                        let start = e.attr("start").and_then(|s| s.trim().parse::<u64>().ok()).filter(|&n| n != 1);
                        Some(Node::Element { tag: Tag::Ol, href: None, start, children: Vec::new() })
                    }
                    "li" => Some(Node::element(Tag::Li)),
                    "blockquote" => Some(Node::element(Tag::Blockquote)),
                    "pre" => Some(Node::element(Tag::Pre)),
                    "code" | "kbd" | "samp" | "tt" => Some(Node::element(Tag::Code)),
                    "em" | "i" => Some(Node::element(Tag::Em)),
                    "strong" | "b" => Some(Node::element(Tag::Strong)),
                    "del" | "s" | "strike" => Some(Node::element(Tag::Del)),
                    "a" => Some(Node::Element { tag: Tag::A, href: e.attr("href").and_then(safe_href), start: None, children: Vec::new() }),
                    "table" => Some(Node::element(Tag::Table)),
                    "thead" => Some(Node::element(Tag::Thead)),
                    "tbody" | "tfoot" => Some(Node::element(Tag::Tbody)),
                    "tr" => Some(Node::element(Tag::Tr)),
                    "th" => Some(Node::element(Tag::Th)),
                    "td" => Some(Node::element(Tag::Td)),
                    "html" => None,
                    // Other blocks (div, section, article, dl…) stay blocks.
                    block if HTML_BLOCK_ELEMENTS.contains(&block) => Some(Node::element(Tag::Div)),
                    // Anything else (span, font, mark, an unknown element) is its content.
                    _ => None,
                };
                let opens = opened.is_some();
                if let Some(node) = opened {
                    view.open(node);
                }
                stack.push(Step::Leave(opens));
                let pre = pre || name == "pre";
                stack.extend(node.children().rev().map(|c| Step::Enter(c, pre)));
            }
            _ => {}
        }
    }
    view.finish()
}

/// One step of the walk: enter a node (inside `<pre>` or not), or leave an
/// element (true: it opened an element of the view).
enum Step<'a> {
    Enter(ego_tree::NodeRef<'a, Dom>, bool),
    Leave(bool),
}

/// Finds each text of the page in the raw text, in order.
struct Placer<'a> {
    raw: &'a str,
    /// Where the last placed text ended, in bytes and in characters.
    byte: usize,
    chars: u64,
}

impl Placer<'_> {
    /// Adds `text` to the view as the raw text has it (NFC, no-break
    /// spaces as spaces, no control characters), placed when it is found
    /// soon after the last placed text; its trailing spaces (which the
    /// raw text's lines drop) unplaced.
    fn text(&mut self, view: &mut Builder, text: &str) {
        let normal: String = text.nfc().map(|c| if c == '\u{a0}' { ' ' } else { c }).filter(|c| !c.is_control() || *c == '\t').collect();
        let core = normal.trim_end();
        if core.is_empty() {
            view.text(&normal, None);
            return;
        }
        let at = self.find(core);
        view.text(core, at);
        view.text(&normal[core.len()..], None);
    }

    fn find(&mut self, core: &str) -> Option<u64> {
        let mut end = (self.byte + LOOKAHEAD + core.len()).min(self.raw.len());
        while !self.raw.is_char_boundary(end) {
            end -= 1;
        }
        let ahead = self.raw.get(self.byte..end)?;
        let found = ahead.find(core)?;
        let at = self.chars + ahead[..found].chars().count() as u64;
        self.byte += found + core.len();
        self.chars = at + core.chars().count() as u64;
        Some(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rag_docparse::{parse, Limits};

    fn raw_text(source: &str) -> String {
        let parsed = parse(source.as_bytes(), "text/html", "trang.html", &Limits::default()).unwrap();
        parsed.full_text
    }

    fn texts(nodes: &[Node], out: &mut Vec<(String, Option<u64>)>) {
        for node in nodes {
            match node {
                Node::Text { text, at } => out.push((text.clone(), *at)),
                Node::Element { children, .. } => texts(children, out),
            }
        }
    }

    const PAGE: &str = r#"<html><head><title>Chính sách</title><style>p{color:red}</style></head><body>
      <h1>Chính sách nghỉ phép</h1>
      <p>Nhân viên được nghỉ <b>12 ngày</b> mỗi năm,&nbsp;xem <a href="https://example.vn/a">quy chế</a> và <a href="javascript:alert(1)">đây</a>.</p>
      <script>document.title = "bị chiếm"</script>
      <ul><li>Nghỉ ốm</li><li>Nghỉ  kết hôn</li></ul>
      <table><thead><tr><th>Loại</th><th>Số ngày</th></tr></thead>
        <tbody><tr><td>Kết hôn</td><td>3 ngày</td></tr></tbody></table>
      <pre>dòng một
  dòng hai   </pre>
    </body></html>"#;

    #[test]
    fn every_text_of_the_page_is_placed_where_the_raw_text_holds_it() {
        let raw = raw_text(PAGE);
        let view = html(PAGE, &raw);
        let mut shown = Vec::new();
        texts(&view, &mut shown);
        for (text, at) in &shown {
            if text.trim().is_empty() {
                continue;
            }
            let at = at.unwrap_or_else(|| panic!("{text:?} placed in {raw:?}"));
            let there: String = raw.chars().skip(at as usize).take(text.chars().count()).collect();
            assert_eq!(&there, text);
        }
        let all: String = shown.iter().map(|(t, _)| t.as_str()).collect();
        assert!(!all.contains("bị chiếm") && !all.contains("color:red") && !all.contains("Chính sách\n"), "{all}");
        let json = serde_json::to_string(&view).unwrap();
        assert!(json.contains(r#""href":"https://example.vn/a""#) && !json.contains("javascript"), "{json}");
        for tag in ["h1", "strong", "ul", "li", "table", "thead", "th", "td", "pre"] {
            assert!(json.contains(&format!(r#""tag":"{tag}""#)), "{tag}: {json}");
        }
    }

    #[test]
    fn a_cell_is_placed_inside_its_row_of_the_raw_text() {
        let raw = raw_text(PAGE);
        assert!(raw.contains("Kết hôn | 3 ngày"), "{raw}");
        let view = html(PAGE, &raw);
        let mut shown = Vec::new();
        texts(&view, &mut shown);
        let row = raw.find("Kết hôn | 3 ngày").map(|b| raw[..b].chars().count() as u64).unwrap();
        assert!(shown.contains(&("Kết hôn".to_string(), Some(row))), "{shown:?}");
        assert!(shown.contains(&("3 ngày".to_string(), Some(row + 10))), "{shown:?}");
    }

    #[test]
    fn a_text_the_raw_text_lacks_is_shown_unplaced_and_the_rest_still_placed() {
        let source = "<p>một</p><p>hai</p><p>ba</p>";
        let view = html(source, "một\n\nba");
        let mut shown = Vec::new();
        texts(&view, &mut shown);
        assert_eq!(shown, vec![("một".into(), Some(0)), ("hai".into(), None), ("ba".into(), Some(5))]);
    }

    #[test]
    fn the_depth_of_a_page_is_bounded_from_above_by_its_tags() {
        assert_eq!(tag_depth(PAGE), 6, "html > body > table > tbody > tr > td, the void and closed ones not counted");
        assert_eq!(tag_depth("<p>a<br>b<img src=x><br/></p>"), 1);
        assert_eq!(tag_depth(&"<div>".repeat(50_000)), 50_000);
        assert_eq!(tag_depth("a < b, 1 <2, <!-- x --> </p></p>"), 0);
        // A page of tags that never end: each is looked at up to the next.
        assert_eq!(tag_depth(&"<a".repeat(500_000)), 500_000);
    }

    #[test]
    fn deeply_nested_elements_make_a_shallow_view() {
        // (Divs, which html5ever nests in quadratic time, so 5,000 of them;
        // the parser's own test nests 200,000 spans.)
        let source = format!("{}sâu{}", "<div>".repeat(5_000), "</div>".repeat(5_000));
        let view = html(&source, "sâu");
        fn depth(nodes: &[Node]) -> usize {
            nodes.iter().map(|n| if let Node::Element { children, .. } = n { 1 + depth(children) } else { 0 }).max().unwrap_or(0)
        }
        assert!(depth(&view) <= crate::MAX_DEPTH + 1, "{}", depth(&view));
        let json = serde_json::to_string(&view).unwrap();
        assert!(json.contains(r#"{"text":"sâu","at":0}"#));
    }
}

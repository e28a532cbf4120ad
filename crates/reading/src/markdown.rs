//! Markdown: the raw text parsed as CommonMark (with tables and
//! strikethrough), each text placed by its source range.

use std::ops::Range;

use pulldown_cmark::{Event, LinkType, Options, Parser, Tag as Md, TagEnd};

use crate::{safe_href, Builder, Node, Tag};

/// The reading view of a Markdown document whose raw text is `text`.
pub fn markdown(text: &str) -> Vec<Node> {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut view = Builder::new();
    let mut offsets = CharOffsets::new(text);
    // How many elements each open Markdown tag opened in the view (a
    // table's head is a `thead` and its row; a code block a `pre` and
    // its `code`), so its end closes as many.
    let mut frames: Vec<usize> = Vec::new();
    let mut in_head = false;
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        match event {
            Event::Start(tag) => {
                let opened: &[Node] = &match tag {
                    Md::Paragraph => vec![Node::element(Tag::P)],
                    Md::Heading { level, .. } => vec![Node::element(Tag::heading(level as usize))],
                    Md::BlockQuote(_) => vec![Node::element(Tag::Blockquote)],
                    Md::CodeBlock(_) | Md::MetadataBlock(_) => vec![Node::element(Tag::Pre), Node::element(Tag::Code)],
                    // Raw HTML is shown as what it is, never run.
                    Md::HtmlBlock => vec![Node::element(Tag::Pre)],
                    Md::List(None) => vec![Node::element(Tag::Ul)],
                    Md::List(Some(first)) => {
                        vec![Node::Element { tag: Tag::Ol, href: None, start: (first != 1).then_some(first), children: Vec::new() }]
                    }
                    Md::Item => vec![Node::element(Tag::Li)],
                    Md::Table(_) => vec![Node::element(Tag::Table)],
                    Md::TableHead => {
                        in_head = true;
                        vec![Node::element(Tag::Thead), Node::element(Tag::Tr)]
                    }
                    Md::TableRow => vec![Node::element(Tag::Tr)],
                    Md::TableCell => vec![Node::element(if in_head { Tag::Th } else { Tag::Td })],
                    Md::Emphasis => vec![Node::element(Tag::Em)],
                    Md::Strong => vec![Node::element(Tag::Strong)],
                    Md::Strikethrough => vec![Node::element(Tag::Del)],
                    // An e-mail autolink (<a@b.vn>) is a mailto: link.
                    Md::Link { link_type: LinkType::Email, dest_url, .. } => {
                        vec![Node::Element {
                            tag: Tag::A,
                            href: safe_href(&format!("mailto:{dest_url}")),
                            start: None,
                            children: Vec::new(),
                        }]
                    }
                    Md::Link { dest_url, .. } => {
                        vec![Node::Element { tag: Tag::A, href: safe_href(&dest_url), start: None, children: Vec::new() }]
                    }
                    // A picture: its alternative text, the picture never fetched.
                    Md::Image { .. } | Md::Superscript | Md::Subscript => vec![Node::element(Tag::Span)],
                    Md::FootnoteDefinition(_) | Md::DefinitionList | Md::DefinitionListTitle | Md::DefinitionListDefinition => {
                        vec![Node::element(Tag::Div)]
                    }
                };
                frames.push(opened.len());
                for node in opened {
                    view.open(node.clone());
                }
            }
            Event::End(end) => {
                for _ in 0..frames.pop().unwrap_or(0) {
                    view.close();
                }
                if end == TagEnd::TableHead {
                    // The rows after the head are the table's body.
                    in_head = false;
                    view.open(Node::element(Tag::Tbody));
                    if let Some(table) = frames.last_mut() {
                        *table += 1;
                    }
                }
            }
            Event::Text(shown)
            | Event::Code(shown)
            | Event::Html(shown)
            | Event::InlineHtml(shown)
            | Event::InlineMath(shown)
            | Event::DisplayMath(shown) => {
                let at = offsets.of(&shown, range);
                view.text(&shown, at);
            }
            Event::SoftBreak => {
                let at = offsets.of("\n", range);
                view.text("\n", at);
            }
            Event::HardBreak => view.add(Node::element(Tag::Br)),
            Event::Rule => view.add(Node::element(Tag::Hr)),
            Event::TaskListMarker(done) => view.text(if done { "☑ " } else { "☐ " }, None),
            Event::FootnoteReference(label) => view.text(&format!("[{label}]"), None),
        }
    }
    view.finish()
}

/// Byte offsets of the text to character offsets, counted forward from the
/// last one asked (texts come in order; a step back counts from the start).
struct CharOffsets<'a> {
    text: &'a str,
    byte: usize,
    chars: u64,
}

impl<'a> CharOffsets<'a> {
    fn new(text: &'a str) -> CharOffsets<'a> {
        CharOffsets { text, byte: 0, chars: 0 }
    }

    fn at_byte(&mut self, byte: usize) -> Option<u64> {
        if byte < self.byte {
            self.byte = 0;
            self.chars = 0;
        }
        let step = self.text.get(self.byte..byte)?;
        self.chars += step.chars().count() as u64;
        self.byte = byte;
        Some(self.chars)
    }

    /// Where `shown` is in the raw text, given the source range it came
    /// from: the range itself when it holds exactly `shown`, else where
    /// `shown` sits inside it (an escaped `\*` shows `*`, inline code
    /// drops its backticks, the `&` of `&amp;` is its first character);
    /// None when the range does not hold it (`&lt;` shows `<`).
    fn of(&mut self, shown: &str, range: Range<usize>) -> Option<u64> {
        let source = self.text.get(range.clone())?;
        let within = if source == shown { 0 } else { source.find(shown)? };
        self.at_byte(range.start + within)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every text with an offset shows exactly the raw text's characters there.
    fn assert_placed(raw: &str, nodes: &[Node]) {
        for node in nodes {
            match node {
                Node::Text { text, at: Some(at) } => {
                    let there: String = raw.chars().skip(*at as usize).take(text.chars().count()).collect();
                    assert_eq!(&there, text, "at {at}");
                }
                Node::Text { .. } => {}
                Node::Element { children, .. } => assert_placed(raw, children),
            }
        }
    }

    fn texts(nodes: &[Node], out: &mut Vec<(String, Option<u64>)>) {
        for node in nodes {
            match node {
                Node::Text { text, at } => out.push((text.clone(), *at)),
                Node::Element { children, .. } => texts(children, out),
            }
        }
    }

    fn tags(nodes: &[Node], out: &mut Vec<Tag>) {
        for node in nodes {
            if let Node::Element { tag, children, .. } = node {
                out.push(*tag);
                tags(children, out);
            }
        }
    }

    const POLICY: &str = "# Chính sách nhân sự\n\n## 1. Giờ làm việc\n\nLàm việc từ **8 giờ** đến *17 giờ*, xem [quy chế](https://example.vn/quy-che).\n\n- Nghỉ trưa 1 giờ\n- Thứ Bảy nghỉ\n\n| Loại nghỉ | Số ngày | Hưởng lương |\n|---|---|---|\n| Kết hôn | 3 ngày | Có |\n| Tang lễ | 3 ngày | Có |";

    #[test]
    fn headings_lists_emphasis_links_and_tables_keep_their_place_in_the_raw_text() {
        let view = markdown(POLICY);
        assert_placed(POLICY, &view);
        let mut all = Vec::new();
        tags(&view, &mut all);
        for tag in
            [Tag::H1, Tag::H2, Tag::P, Tag::Strong, Tag::Em, Tag::A, Tag::Ul, Tag::Li, Tag::Table, Tag::Thead, Tag::Tbody, Tag::Th, Tag::Td]
        {
            assert!(all.contains(&tag), "{tag:?} in {all:?}");
        }
        let mut shown = Vec::new();
        texts(&view, &mut shown);
        // The markup is not shown; the words are, each where the raw text has it.
        let words: Vec<&str> = shown.iter().map(|(t, _)| t.as_str()).collect();
        assert!(!words.iter().any(|w| w.contains("##") || w.contains("|---") || w.contains("**")), "{words:?}");
        let cell = shown.iter().find(|(t, _)| t == "Kết hôn").expect("the cell");
        assert_eq!(cell.1, POLICY.find("Kết hôn").map(|b| POLICY[..b].chars().count() as u64));
        // The link keeps its target; the heading's text its offset.
        let json = serde_json::to_string(&view).unwrap();
        assert!(json.contains(r#""href":"https://example.vn/quy-che""#), "{json}");
        assert!(json.contains(r#"{"tag":"h2","children":[{"text":"1. Giờ làm việc","at":"#), "{json}");
    }

    #[test]
    fn raw_html_and_unsafe_links_are_shown_as_text_never_as_markup() {
        let raw = "Xem <script>alert(1)</script> và [đây](javascript:alert(1)).\n\n<iframe src=\"https://evil.example\"></iframe>\n\n![ảnh](https://tracker.example/p.png)";
        let view = markdown(raw);
        assert_placed(raw, &view);
        let json = serde_json::to_string(&view).unwrap();
        assert!(!json.contains("javascript:"), "{json}");
        assert!(!json.contains("tracker.example"), "no picture is fetched: {json}");
        let mut shown = Vec::new();
        texts(&view, &mut shown);
        let all: String = shown.iter().map(|(t, _)| t.as_str()).collect();
        assert!(all.contains("<script>alert(1)</script>"), "shown as text: {all}");
        assert!(all.contains("<iframe"), "{all}");
        assert!(all.contains("ảnh"), "the picture's alternative text: {all}");
        let mut all_tags = Vec::new();
        tags(&view, &mut all_tags);
        assert!(all_tags.contains(&Tag::A) && all_tags.contains(&Tag::Pre), "{all_tags:?}");
    }

    #[test]
    fn an_email_autolink_is_a_mailto_link() {
        let json = serde_json::to_string(&markdown("Viết cho <nhansu@example.vn>.")).unwrap();
        assert!(json.contains(r#""href":"mailto:nhansu@example.vn""#), "{json}");
    }

    #[test]
    fn escapes_entities_and_code_are_placed_where_the_raw_text_holds_them() {
        let raw = "Giá \\*đặc biệt\\* &amp; `mã-01` cuối.\nDòng hai.";
        let view = markdown(raw);
        assert_placed(raw, &view);
        let mut shown = Vec::new();
        texts(&view, &mut shown);
        assert!(shown.iter().any(|(t, at)| t == "mã-01" && at.is_some()), "{shown:?}");
        assert!(shown.iter().any(|(t, at)| t.contains("Dòng hai") && at.is_some()), "{shown:?}");
    }

    #[test]
    fn an_ordered_list_keeps_its_first_number_and_a_deep_one_stays_shallow() {
        let view = markdown("3. ba\n4. bốn");
        assert!(matches!(&view[0], Node::Element { tag: Tag::Ol, start: Some(3), .. }), "{view:?}");
        let deep = format!("{}sâu", "> ".repeat(500));
        let view = markdown(&deep);
        assert_placed(&deep, &view);
        fn depth(nodes: &[Node]) -> usize {
            nodes.iter().map(|n| if let Node::Element { children, .. } = n { 1 + depth(children) } else { 0 }).max().unwrap_or(0)
        }
        assert!(depth(&view) <= crate::MAX_DEPTH + 1, "{}", depth(&view));
        let json = serde_json::to_string(&view).unwrap();
        assert!(json.contains("sâu"));
    }
}

//! The answer as an OpenAI-compatible client reads it: the sections' text
//! with `[n]` markers numbering the citations in order, and the same text
//! sent piece by piece while it is written. Pure, so it is tested alone.

/// The text of sections (`(text, citations, closed)`): each section's text,
/// then a marker for each of its citations once it is closed (`[1][2]`,
/// numbered across the answer in order), sections apart by a blank line.
pub fn with_markers<'a>(sections: impl IntoIterator<Item = (&'a str, usize, bool)>) -> String {
    let mut out = String::new();
    let mut n = 0;
    for (i, (text, citations, closed)) in sections.into_iter().enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        out.push_str(text.trim_end());
        if closed && citations > 0 {
            out.push(' ');
            for _ in 0..citations {
                n += 1;
                out.push_str(&format!("[{n}]"));
            }
        }
    }
    out
}

/// One source as the reply's text lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedSource<'a> {
    /// Its marker's number (`[n]`).
    pub index: u64,
    /// The document's file name (its id when it has none).
    pub name: &'a str,
    /// Where in it: `p. 3`, or a sheet's cells (`Sheet1!A2:C2`).
    pub place: Option<String>,
    /// The cited raw text.
    pub quote: &'a str,
    /// Opens the passage highlighted on the page.
    pub url: &'a str,
}

/// The sources as Markdown, to end a reply's text with (chat front-ends
/// and frameworks show `content` and nothing else): a heading in the
/// answer's language, then one list item per citation, `- [1] báo-cáo.pdf,
/// p. 3: “…” ([mở](…))`. A quote's whitespace runs (a table row's line
/// breaks) read as one space, so each source stays one list item; nothing
/// else of it changes. Empty without sources.
pub fn sources_list(sources: &[ListedSource<'_>], vietnamese: bool) -> String {
    if sources.is_empty() {
        return String::new();
    }
    let (heading, open) = if vietnamese { ("Nguồn", "mở") } else { ("Sources", "open") };
    let mut out = format!("\n\n**{heading}**\n");
    for s in sources {
        let quote = s.quote.split_whitespace().collect::<Vec<_>>().join(" ");
        let place = s.place.as_deref().map(|p| format!(", {p}")).unwrap_or_default();
        out.push_str(&format!("\n- [{}] {}{place}: \u{201c}{quote}\u{201d} ([{open}]({}))", s.index, s.name, s.url));
    }
    out
}

/// The headings [`sources_list`] writes, as they start its block.
const SOURCES_HEADINGS: [&str; 2] = ["\n\n**Sources**\n", "\n\n**Nguồn**\n"];

/// The text without the markers [`with_markers`] wrote and the sources
/// list [`sources_list`] added: what the conversation stored, to recognise
/// a conversation a client sends back.
pub fn without_markers(text: &str) -> String {
    let text = SOURCES_HEADINGS.iter().filter_map(|h| text.rfind(h)).max().map_or(text, |at| &text[..at]);
    let sections: Vec<String> = text
        .split("\n\n")
        .map(|s| {
            let mut s = s.trim_end();
            while let Some(open) = s.rfind('[') {
                let inside = &s[open + 1..];
                match inside.strip_suffix(']') {
                    Some(digits) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => s = s[..open].trim_end(),
                    _ => break,
                }
            }
            s.to_string()
        })
        .collect();
    sections.join("\n\n").trim().to_string()
}

/// What a stream has sent of an answer. A model's words only grow, so each
/// new text so far normally extends what was sent; when it does not (the
/// answer was held back by its check and written again, or abstains), the
/// stream stops following it and the final answer comes after a rule.
#[derive(Debug, Default)]
pub struct StreamedText {
    sent: String,
    diverged: bool,
}

/// Put between words already streamed and a final answer that replaces
/// them (a stream cannot take words back).
pub const REPLACED: &str = "\n\n---\n\n";

impl StreamedText {
    /// The piece to send for the answer's text so far, if any.
    pub fn advance(&mut self, so_far: &str) -> Option<String> {
        if self.diverged {
            return None;
        }
        if !so_far.starts_with(&self.sent) {
            self.diverged = !self.sent.is_empty();
            return None;
        }
        let piece = so_far[self.sent.len()..].to_string();
        self.sent.push_str(&piece);
        (!piece.is_empty()).then_some(piece)
    }

    /// The last piece, for the final answer.
    pub fn finish(&mut self, final_text: &str) -> String {
        let piece = if self.sent.is_empty() {
            final_text.to_string()
        } else if !self.diverged && final_text.starts_with(&self.sent) {
            final_text[self.sent.len()..].to_string()
        } else {
            format!("{REPLACED}{final_text}")
        };
        self.sent.push_str(&piece);
        piece
    }

    /// Everything sent.
    #[cfg(test)]
    pub fn sent(&self) -> &str {
        &self.sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_number_citations_across_sections_and_come_off_again() {
        let text = with_markers([("Doanh thu tăng 12,4%.", 2, true), ("Lợi nhuận đạt 187 tỷ.", 1, true), ("Đang viết", 3, false)]);
        assert_eq!(text, "Doanh thu tăng 12,4%. [1][2]\n\nLợi nhuận đạt 187 tỷ. [3]\n\nĐang viết");
        assert_eq!(without_markers(&text), "Doanh thu tăng 12,4%.\n\nLợi nhuận đạt 187 tỷ.\n\nĐang viết");
        assert_eq!(without_markers("Mảng [a] giữ nguyên [x]"), "Mảng [a] giữ nguyên [x]");
        assert_eq!(with_markers([("Tài liệu không đề cập.", 0, true)]), "Tài liệu không đề cập.");
    }

    #[test]
    fn sources_read_as_one_list_item_each_in_the_answers_language() {
        let url = "http://h/#ws=w&c=c&doc=d&span=3-40";
        let sources = [
            ListedSource { index: 1, name: "quy-che.pdf", place: Some("p. 2".into()), quote: "Nghỉ phép  12 ngày\nmỗi năm.", url },
            ListedSource { index: 2, name: "bang.xlsx", place: Some("Sheet1!A2:C2".into()), quote: "| Kết hôn | 3 ngày |", url },
            ListedSource { index: 3, name: "notes.md", place: None, quote: "Plain.", url },
        ];
        assert_eq!(
            sources_list(&sources, true),
            "\n\n**Nguồn**\n\n- [1] quy-che.pdf, p. 2: “Nghỉ phép 12 ngày mỗi năm.” ([mở](http://h/#ws=w&c=c&doc=d&span=3-40))\
             \n- [2] bang.xlsx, Sheet1!A2:C2: “| Kết hôn | 3 ngày |” ([mở](http://h/#ws=w&c=c&doc=d&span=3-40))\
             \n- [3] notes.md: “Plain.” ([mở](http://h/#ws=w&c=c&doc=d&span=3-40))"
        );
        assert!(sources_list(&sources[2..], false).starts_with("\n\n**Sources**\n\n- [3] notes.md: “Plain.” ([open]("));
        assert_eq!(sources_list(&[], true), "");
        // A client sends the reply back as the conversation's history.
        let reply = format!("Nghỉ phép 12 ngày. [1]{}", sources_list(&sources[..1], true));
        assert_eq!(without_markers(&reply), "Nghỉ phép 12 ngày.");
    }

    #[test]
    fn a_stream_sends_each_new_piece_once_and_a_replaced_answer_after_a_rule() {
        let mut s = StreamedText::default();
        assert_eq!(s.advance(""), None);
        assert_eq!(s.advance("Doanh").as_deref(), Some("Doanh"));
        assert_eq!(s.advance("Doanh thu").as_deref(), Some(" thu"));
        assert_eq!(s.advance("Doanh thu"), None);
        assert_eq!(s.finish("Doanh thu tăng. [1]"), " tăng. [1]");
        assert_eq!(s.sent(), "Doanh thu tăng. [1]");

        let mut s = StreamedText::default();
        s.advance("Giám đốc sinh năm 2021");
        // Written again from the start: nothing more is followed.
        assert_eq!(s.advance("Tài"), None);
        assert_eq!(s.advance("Giám đốc sinh năm 2021, 2022"), None);
        assert_eq!(s.finish("Tài liệu không đề cập."), format!("{REPLACED}Tài liệu không đề cập."));

        let mut s = StreamedText::default();
        assert_eq!(s.finish("Trả lời ngay."), "Trả lời ngay.");
    }
}

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

/// The text without the markers [`with_markers`] wrote: what the
/// conversation stored, to recognise a conversation a client sends back.
pub fn without_markers(text: &str) -> String {
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

//! What `read_passage` cuts from a document's raw text: the range asked
//! for and some text on each side, within limits. Pure, so its edges are
//! unit-tested.

/// Characters `read_passage` shows on each side of the range by default,
/// and at most.
pub(super) const CONTEXT_CHARS: usize = 300;
pub(super) const MAX_CONTEXT_CHARS: usize = 4000;
/// Characters of a range `read_passage` returns at most.
pub(super) const MAX_PASSAGE_CHARS: usize = 20_000;

/// A range of a text and the text just around it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Window {
    pub text: String,
    pub before: String,
    pub after: String,
}

/// `text[start..end]` with up to `context` characters before and after; a
/// refusal a client can act on when the range is empty, reversed, past the
/// text's end or longer than [`MAX_PASSAGE_CHARS`].
pub(super) fn window(text: &[char], start: usize, end: usize, context: usize) -> Result<Window, String> {
    if start >= end || end > text.len() {
        return Err(format!("the range must lie inside the document's {} characters, start before end", text.len()));
    }
    if end - start > MAX_PASSAGE_CHARS {
        return Err(format!("at most {MAX_PASSAGE_CHARS} characters at once"));
    }
    Ok(Window {
        text: text[start..end].iter().collect(),
        before: text[start.saturating_sub(context)..start].iter().collect(),
        after: text[end..(end + context).min(text.len())].iter().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_comes_with_its_context_cut_at_the_text_s_edges() {
        let text: Vec<char> = "Nghỉ phép năm: 12 ngày.".chars().collect();
        let w = window(&text, 15, 22, 5).unwrap();
        assert_eq!((w.text.as_str(), w.before.as_str(), w.after.as_str()), ("12 ngày", "năm: ", "."));
        let w = window(&text, 0, 4, 300).unwrap();
        assert_eq!((w.text.as_str(), w.before.as_str(), w.after.as_str()), ("Nghỉ", "", " phép năm: 12 ngày."));
    }

    #[test]
    fn an_empty_reversed_outside_or_too_long_range_is_refused() {
        let text: Vec<char> = "abc".chars().collect();
        for (start, end) in [(1, 1), (2, 1), (0, 4)] {
            assert!(window(&text, start, end, 1).unwrap_err().contains("inside the document's 3 characters"), "{start}..{end}");
        }
        let long: Vec<char> = "x".repeat(MAX_PASSAGE_CHARS + 1).chars().collect();
        assert!(window(&long, 0, MAX_PASSAGE_CHARS + 1, 0).unwrap_err().contains("at most"));
        assert!(window(&long, 0, MAX_PASSAGE_CHARS, 0).is_ok());
    }
}

//! What a question may be, whichever door it comes through: the page's
//! route, `/v1/chat/completions`, MCP's `ask` and `rag-engine ask` check it
//! here, so they accept and refuse the same questions (each says so in its
//! own wire format).

/// Characters a question may have, after trimming. The answerer reads far
/// fewer; the bound keeps one request from filling the event and the
/// prompt.
pub const MAX_QUESTION_CHARS: usize = 8000;

// A conversation's title is the read model's: the projector titles a
// conversation a question opens by the same rule.
pub use rag_store::messages::{title_from_question, MAX_TITLE_CHARS};

/// Why a question is refused; its text follows the field's name ("content
/// must have 1-8000 characters (has 0)").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuestionRefusal {
    #[error("must have 1-{MAX_QUESTION_CHARS} characters (has {0})")]
    Length(usize),
    /// A control character other than a line break or tab: nothing a person
    /// types, and it would reach the prompt and the logs as is.
    #[error("contains control characters")]
    ControlCharacters,
}

/// The question trimmed, or why it is refused.
pub fn checked_question(text: &str) -> Result<&str, QuestionRefusal> {
    let question = text.trim();
    let n = question.chars().count();
    if n == 0 || n > MAX_QUESTION_CHARS {
        return Err(QuestionRefusal::Length(n));
    }
    if has_control_characters(question) {
        return Err(QuestionRefusal::ControlCharacters);
    }
    Ok(question)
}

/// Chunks a question may ask to retrieve (`top_k`).
pub const TOP_K: std::ops::RangeInclusive<i32> = 1..=50;
/// Documents a question may be limited to.
pub const MAX_DOCUMENT_IDS: usize = 100;

/// Why a question's scope is refused; its text names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeRefusal {
    #[error("top_k must be 1-50 (is {0})")]
    TopK(i64),
    #[error("document_ids holds at most 100 ids")]
    TooManyDocuments,
}

/// Checks what a question asks to read: how many chunks, which documents.
pub fn checked_scope(top_k: Option<i64>, document_ids: usize) -> Result<Option<i32>, ScopeRefusal> {
    let top_k = match top_k {
        Some(k) => Some(i32::try_from(k).ok().filter(|k| TOP_K.contains(k)).ok_or(ScopeRefusal::TopK(k))?),
        None => None,
    };
    if document_ids > MAX_DOCUMENT_IDS {
        return Err(ScopeRefusal::TooManyDocuments);
    }
    Ok(top_k)
}

/// Whether a text holds a control character other than a line break or a
/// tab (every text field of the API refuses those).
pub fn has_control_characters(text: &str) -> bool {
    text.chars().any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_is_trimmed_and_counted_in_characters() {
        assert_eq!(checked_question("  Doanh thu năm 2023?\n"), Ok("Doanh thu năm 2023?"));
        // Vietnamese letters are several bytes each: the bound is characters.
        let long = "ố".repeat(MAX_QUESTION_CHARS);
        assert_eq!(checked_question(&long), Ok(long.as_str()));
        assert_eq!(checked_question(&format!("{long}a")), Err(QuestionRefusal::Length(MAX_QUESTION_CHARS + 1)));
        assert_eq!(checked_question(" \n\t "), Err(QuestionRefusal::Length(0)));
    }

    #[test]
    fn a_title_is_the_question_cut_at_two_hundred_characters_and_trimmed() {
        assert_eq!(title_from_question("  Doanh thu năm 2023?\n"), "Doanh thu năm 2023?");
        let long = format!("{} {}", "ố".repeat(MAX_TITLE_CHARS - 1), "x".repeat(50));
        assert_eq!(title_from_question(&long), "ố".repeat(MAX_TITLE_CHARS - 1));
    }

    #[test]
    fn a_question_reads_one_to_fifty_chunks_of_at_most_a_hundred_documents() {
        assert_eq!(checked_scope(None, 0), Ok(None));
        assert_eq!(checked_scope(Some(50), 100), Ok(Some(50)));
        assert_eq!(checked_scope(Some(0), 0), Err(ScopeRefusal::TopK(0)));
        assert_eq!(checked_scope(Some(1 << 40), 0), Err(ScopeRefusal::TopK(1 << 40)));
        assert_eq!(checked_scope(Some(5), 101), Err(ScopeRefusal::TooManyDocuments));
        assert_eq!(ScopeRefusal::TopK(51).to_string(), "top_k must be 1-50 (is 51)");
    }

    #[test]
    fn line_breaks_and_tabs_pass_other_control_characters_do_not() {
        assert_eq!(checked_question("Hai phần:\n1.\tlương?\r\n2. phép?"), Ok("Hai phần:\n1.\tlương?\r\n2. phép?"));
        assert_eq!(checked_question("lương\u{7}?"), Err(QuestionRefusal::ControlCharacters));
        assert_eq!(checked_question("a\u{0}b"), Err(QuestionRefusal::ControlCharacters));
        assert_eq!(QuestionRefusal::Length(0).to_string(), "must have 1-8000 characters (has 0)");
    }
}

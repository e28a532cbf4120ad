//! What `rag-engine ask` prints for people: the answer's sections with
//! numbered citations, each citation with its place and cited text checked
//! against the raw text, and what the answer took back of the text that
//! streamed above it.

use rag_store::messages;

/// Prints the sections, each followed by the numbers of its citations,
/// then the parts of the question the documents do not answer; returns
/// the citations in the order numbered.
pub(super) fn sections(answer: &messages::AnswerMetadata) -> Vec<&rag_events::Citation> {
    let mut numbered: Vec<&rag_events::Citation> = Vec::new();
    for section in &answer.sections {
        let mut marks = String::new();
        for c in &section.citations {
            numbered.push(c);
            marks.push_str(&format!(" [{}]", numbered.len()));
        }
        println!("{}{marks}\n", section.text);
    }
    // Parts of the question the documents do not answer: said, never a
    // section (a section always cites).
    let unanswered = &answer.retrieval.unanswered_parts;
    if !unanswered.is_empty() {
        println!("{}\n", rag_answer::unanswered_text(unanswered));
    }
    numbered
}

/// Prints each citation with its place and cited text, checked against
/// the raw text as the viewer shows it; returns how many do not match.
pub(super) async fn citations(
    pool: &rag_store::sqlx::PgPool,
    workspace: &str,
    numbered: &[&rag_events::Citation],
) -> anyhow::Result<usize> {
    let documents = rag_store::documents::list(pool, workspace).await?;
    // A presentation's pages are its slides: its citations say "slide N".
    let presentations: std::collections::HashSet<String> = documents
        .iter()
        .filter(|d| {
            rag_docparse::detect_format(d.content_type.as_deref().unwrap_or(""), d.filename.as_deref().unwrap_or(""))
                .is_some_and(rag_docparse::Format::is_presentation)
        })
        .map(|d| d.id.to_string())
        .collect();
    let filenames: std::collections::HashMap<String, String> =
        documents.into_iter().map(|d| (d.id.to_string(), d.filename.unwrap_or_default())).collect();
    if !numbered.is_empty() {
        println!("Citations:");
    }
    // Each citation checked against the raw text as the viewer shows it:
    // the cited text must be exactly `full_text[char_start..char_end]`.
    let mut full_texts: std::collections::HashMap<(String, i32), Option<Vec<char>>> = std::collections::HashMap::new();
    let mut invalid = 0;
    for (i, c) in numbered.iter().enumerate() {
        let doc = c.document_id.as_str();
        let (start, end) = (c.char_start.max(0) as usize, c.char_end.max(0) as usize);
        // A spreadsheet's citation is where its rows are (`Doanh thu!A5:D5`);
        // its sheets are its pages, which say less.
        // A presentation's, its slide.
        let page = c.page_idx.max(0) + 1;
        let place = match &c.cell_range {
            Some(range) => range.clone(),
            None if presentations.contains(doc) => format!("slide {page}"),
            None => format!("p.{page}"),
        };
        println!(
            "[{}] {} {place} segment {} chars {start}..{end}",
            i + 1,
            filenames.get(doc).map(String::as_str).unwrap_or(doc),
            c.segment_index,
        );
        let text = c.text.as_deref().unwrap_or(&c.snippet_preview);
        println!("    “{}”", text.split_whitespace().collect::<Vec<_>>().join(" "));
        // The revision the citation quoted (1 before revisions existed).
        let revision = c.revision;
        let key = (doc.to_string(), revision);
        if !full_texts.contains_key(&key) {
            let full = match uuid::Uuid::parse_str(doc) {
                Ok(id) => rag_store::raw::full_text(pool, workspace, id, Some(revision)).await?,
                Err(_) => None,
            };
            full_texts.insert(key.clone(), full);
        }
        match full_texts.get(&key).and_then(Option::as_ref) {
            Some(full) if rag_answer::cites_exactly(full, start, end, text) => {
                println!("    ✓ exactly the raw text at chars {start}..{end}");
            }
            Some(_) => {
                invalid += 1;
                println!("    ✗ does not match the raw text at chars {start}..{end}");
            }
            None => println!("    (the document's raw text is gone: deleted after the answer)"),
        }
    }
    Ok(invalid)
}

/// What the answer took back of the text streamed above it, for people:
/// nothing when the final sections are what streamed; otherwise a line
/// saying so, and each withdrawn section (said what its citations do not,
/// or held back by the check) as the model wrote it, so the streamed words
/// are never left to be read as the answer.
pub(super) fn withdrawn(shown: &str, answer: &messages::AnswerMetadata) -> Vec<String> {
    let last = answer.sections.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join("\n\n");
    if last.trim() == shown.trim() {
        return Vec::new();
    }
    let taken = answer.withdrawn();
    if taken.is_empty() {
        // Rewritten in the question's language, a question taken out, a
        // part said once: the same answer, in other words.
        return vec!["[rewritten] the answer below replaces the text streamed above".to_string()];
    }
    let mut out = vec!["[withdrawn] the text streamed above is not the answer; the checked answer follows".to_string()];
    out.extend(taken.iter().map(|s| format!("  withdrawn: {s}")));
    out
}

/// "a.pdf (pages 1, 2), b.md": the documents an answer is being written
/// from.
pub(super) fn reading(sources: &[messages::DeltaSource]) -> String {
    sources
        .iter()
        .map(|s| {
            let name = s.filename.clone().unwrap_or_else(|| s.document_id.clone());
            match s.pages.as_slice() {
                [] => name,
                [one] => format!("{name} (page {one})"),
                many => format!("{name} (pages {})", many.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::withdrawn;
    use rag_store::messages::AnswerMetadata;

    fn answer(metadata: serde_json::Value) -> AnswerMetadata {
        AnswerMetadata::of_stored(&metadata).expect("an answer")
    }

    #[test]
    fn text_taken_back_after_streaming_is_said_to_be_withdrawn() {
        let metadata = answer(serde_json::json!({
            "mode": "llm",
            "sections": [{"text": "Lợi nhuận gộp — 2022: 312,5; 2023: 351,9", "source_ids": [], "citations": []}],
            "retrieval": {"citation_report": {"unfaithful_sections": ["Lợi nhuận gộp tăng 38,6%. (not in its citations: 38.6)"]}}
        }));
        let lines = withdrawn("Lợi nhuận gộp tăng 38,6%.", &metadata);
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("[withdrawn]"));
        assert_eq!(lines[1], "  withdrawn: Lợi nhuận gộp tăng 38,6%. (not in its citations: 38.6)");
        assert!(withdrawn("Lợi nhuận gộp — 2022: 312,5; 2023: 351,9", &metadata).is_empty(), "what streamed is the answer");
        let rewritten =
            answer(serde_json::json!({"mode": "llm", "sections": [{"text": "Revenue grew 12.4%.", "source_ids": [], "citations": []}],
                                                  "retrieval": {"citation_report": {"rewritten_sections": 1}}}));
        assert_eq!(withdrawn("Doanh thu tăng 12,4%.", &rewritten), ["[rewritten] the answer below replaces the text streamed above"]);
    }
}

//! Sections in the question's language: a small model shown evidence in
//! another language than the question often copies the cited sentence
//! instead of answering in the question's language (an English question
//! over Vietnamese text answered "Sản phẩm được bảo hành 24 tháng…"),
//! whatever the prompt says. So by contract, not by prompt: a shown section
//! whose language can be told and is not the question's is rewritten in it
//! by one short call, and kept only when the rewrite is in the question's
//! language and says no number, date or name its citations do not
//! (`faithful::check_facts`); otherwise it stays as it was. The citations
//! are untouched: they still quote the original sentences.

use crate::llm::add_usage;
use crate::{evidence, faithful, llm, prompt, CitationReport, Section, SourceChunk};

/// Longest section rewritten, in characters: a section is a sentence or
/// two; a longer one (a table read out) stays as written.
const REWRITE_MAX_CHARS: usize = 600;

/// Rewrites in the question's language each section written in another
/// (`report.rewritten_sections` counts them; a rewrite that failed or
/// drifted leaves the section as it was).
pub(crate) async fn in_question_language(
    client: &llm::ChatClient,
    question: &str,
    sections: &mut [Section],
    evidence: &evidence::Evidence,
    chunks: &[SourceChunk],
    report: &mut CitationReport,
    usage: &mut Option<llm::LlmUsage>,
) {
    let Some((asked, asked_in)) = prompt::judged_language(question) else { return };
    for section in sections.iter_mut() {
        let Some((written, _)) = prompt::judged_language(&section.text) else { continue };
        if written == asked || section.text.chars().count() > REWRITE_MAX_CHARS {
            continue;
        }
        let reply = match client.complete(&prompt::rewrite_in(asked_in, &section.text), llm::Format::Text, &mut |_| {}).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "rewriting a section in the question's language failed; it stays as written");
                continue;
            }
        };
        add_usage(usage, &reply.usage);
        let rewritten = reply.content.trim().trim_matches('"').trim().to_string();
        let units = faithful::cited_units(section, evidence, chunks);
        let in_language = prompt::judged_language(&rewritten).is_some_and(|(l, _)| l == asked);
        let faithful = faithful::check_facts(&rewritten, &units, question).missing.is_empty();
        if in_language && faithful && !rewritten.contains('\n') && rewritten.chars().count() <= 3 * section.text.chars().count() + 40 {
            report.rewritten_sections += 1;
            section.text = rewritten;
        } else {
            tracing::debug!(rewritten, in_language, faithful, "a rewrite in the question's language was not kept");
        }
    }
}

//! A whole question answered: split into the parts it asks
//! ([`crate::parts`]), each part condensed into a standalone query when it
//! leans on the conversation or on earlier parts, searched through
//! [`PartRetrieval`] (the answerer stage's search index), answered on its
//! own evidence ([`crate::answer_question`]), and the parts combined
//! ([`crate::combine_parts`]), the text streamed as it is written. Free of
//! I/O but for what the retrieval, the model and the stream do.

use std::future::Future;

use crate::llm::ChatClient;
use crate::prompt::Turn;
use crate::{
    answer_question, retrieval_query, AnswerOptions, AnswerOutcome, EvidenceRanker, RetrievalConfidence, SourceChunk, StreamedSection,
};

/// What answering needs of search, one part of a question at a time.
pub trait PartRetrieval: Sync {
    /// What a search found, kept for the answer's record.
    type Found: Send + Sync;
    /// Why a search failed.
    type Error: Send;

    /// The evidence for `query` (a part as asked, or condensed).
    fn retrieve<'a>(&'a self, query: &'a str) -> impl Future<Output = Result<PartEvidence<Self::Found>, Self::Error>> + Send + 'a;

    /// What the model reads as the question, `asked` the part as asked or
    /// condensed (`query_source` says which): a Vietnamese question typed
    /// without marks may be read with them restored from what was found.
    fn model_question(&self, asked: &str, query_source: &'static str, found: &Self::Found) -> String;

    /// What ranks the evidence sentences against `query`, the text the
    /// part was searched with.
    fn ranker<'a>(&'a self, query: &'a str, found: &'a Self::Found) -> Option<Box<dyn EvidenceRanker + Send + 'a>>;
}

/// One search's evidence, as the answer reads it.
pub struct PartEvidence<F> {
    /// The chunks found, best first.
    pub sources: Vec<SourceChunk>,
    /// How many of them a model is shown (the evidence cutoff).
    pub llm_chunks: usize,
    pub confidence: RetrievalConfidence,
    pub found: F,
}

/// Where the answer goes while it is written.
pub trait AnswerStream: Send {
    /// The sources a model is about to read (before its first words; not
    /// called for an extractive answer, which is there at once itself).
    fn sources(&mut self, sources: &[SourceChunk]);
    /// The answer so far: `restart` says the part being written began
    /// again ([`taken_back`]); the first `confirmed` sections are final.
    fn sections(&mut self, sections: &[StreamedSection], restart: bool, confirmed: usize);
}

/// One part of a question, searched and answered.
pub struct AnsweredPart<F> {
    pub part: String,
    /// What it was searched with, and whether that is the part as asked
    /// (`question`) or condensed by the model (`llm`).
    pub query: String,
    pub query_source: &'static str,
    pub retrieval_ms: u64,
    pub found: F,
    /// None: the model failed (and the fallback is to fail).
    pub outcome: Option<AnswerOutcome>,
}

/// A question's answer and the parts it was made of.
pub struct WholeAnswer<F> {
    /// The parts answered, in the question's order; when the model failed
    /// on one, it is the last and has no outcome.
    pub parts: Vec<AnsweredPart<F>>,
    /// The parts' answers combined; None when the model failed on a part.
    pub outcome: Option<AnswerOutcome>,
}

/// Answers `question` after `history`: part by part, each on its own
/// evidence, a section (or more) per part in the question's order. `Err`
/// when a search failed (the parts answered before it are dropped: the
/// question has no answer without it).
pub async fn answer_whole_question<R: PartRetrieval>(
    llm: Option<&ChatClient>,
    question: &str,
    history: &[Turn],
    options: AnswerOptions,
    retrieval: &R,
    stream: &mut dyn AnswerStream,
) -> Result<WholeAnswer<R::Found>, R::Error> {
    let asked_parts = crate::parts::question_parts_as_asked(question);
    let parts: Vec<String> = asked_parts.iter().map(|p| p.text.clone()).collect();
    let mut answered: Vec<AnsweredPart<R::Found>> = Vec::with_capacity(parts.len());
    let mut shown_so_far: Vec<StreamedSection> = Vec::new();
    let mut done: Vec<(String, AnswerOutcome)> = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        // A later part may lean on an earlier one ("... sinh năm nào và
        // quê ở đâu?"): the earlier parts are its conversation so far.
        let mut part_history = history.to_vec();
        if !asked_parts[i].stands_alone {
            part_history.extend(parts[..i].iter().map(|p| Turn { role: "user".into(), content: p.clone() }));
        }
        let asking = PartAsked { part, history: &part_history, later_part: i > 0, part_of_several: parts.len() > 1 };
        let a = answer_part(llm, &asking, options, retrieval, stream, &shown_so_far).await?;
        let Some(o) = &a.outcome else {
            answered.push(a);
            return Ok(WholeAnswer { parts: answered, outcome: None });
        };
        // What the answer will show of the parts done so far, exactly as
        // the combined answer will (a part that abstained adds nothing, a
        // section citing what an earlier one cites is said once): final,
        // so said as confirmed while later parts are written (after the
        // last one the answer itself follows).
        done.push((part.clone(), o.clone()));
        shown_so_far = crate::combine_parts(done.clone())
            .sections
            .iter()
            .map(|s| StreamedSection { text: s.text.clone(), closed: true, citations: s.citations.clone() })
            .collect();
        if i + 1 < parts.len() {
            stream.sections(&shown_so_far, false, shown_so_far.len());
        }
        answered.push(a);
    }
    let outcome = crate::combine_parts(done);
    Ok(WholeAnswer { parts: answered, outcome: Some(outcome) })
}

/// One part and where it stands in its question.
struct PartAsked<'a> {
    part: &'a str,
    /// The conversation, and the earlier parts when this one leans on them.
    history: &'a [Turn],
    later_part: bool,
    part_of_several: bool,
}

/// One part of a question (the whole question when it asks one thing):
/// searched (condensed first when it follows earlier turns or parts) and
/// answered. `shown` is what the earlier parts show.
async fn answer_part<R: PartRetrieval>(
    llm: Option<&ChatClient>,
    asking: &PartAsked<'_>,
    options: AnswerOptions,
    retrieval: &R,
    stream: &mut dyn AnswerStream,
    shown: &[StreamedSection],
) -> Result<AnsweredPart<R::Found>, R::Error> {
    let (part, history) = (asking.part, asking.history);
    // A follow-up ("Còn năm 2022 thì sao?") is searched as a standalone query.
    let retrieval_started = std::time::Instant::now();
    let (query, query_source) = retrieval_query(llm, part, history).await;
    let evidence = retrieval.retrieve(&query).await?;
    let options = AnswerOptions {
        llm_chunks: evidence.llm_chunks,
        retrieval: evidence.confidence,
        part_of_several: asking.part_of_several,
        without_marks: crate::decision::typed_without_marks(part),
        ..options
    };
    let retrieval_ms = retrieval_started.elapsed().as_millis() as u64;
    // Sources before words: what the model reads, on the page at once.
    if llm.is_some() {
        stream.sources(&evidence.sources[..evidence.llm_chunks.min(evidence.sources.len())]);
    }
    // A question the model condensed is read, and checked, as it was
    // condensed: a later part ("quê ở đâu?" -> "Thủ tướng Phạm Minh Chính
    // quê ở đâu?") without the earlier parts as turns, a follow-up ("Còn
    // nghỉ kết hôn thì sao?" -> "Nhân viên được nghỉ kết hôn bao nhiêu
    // ngày?") with the conversation. Judged as written, a follow-up's own
    // words name nothing the check can find in the cited row, and a right
    // answer was held back. A follow-up the model could not condense is
    // read as written, with the conversation: asked the previous question
    // and the follow-up together, the model answered the previous one again.
    let (asked, model_history) = match (query_source, asking.later_part) {
        ("llm", true) => {
            (query.clone(), &history[..history.len().saturating_sub(history.iter().rev().take_while(|t| t.role == "user").count())])
        }
        ("llm", false) => (query.clone(), history),
        _ => (part.to_string(), history),
    };
    let question = retrieval.model_question(&asked, query_source, &evidence.found);
    let ranker = retrieval.ranker(&query, &evidence.found);
    // Earlier parts show their final text; this part's words are compared
    // with what was sent of this part only, so a restart is said only when
    // this part is written again.
    let mut sent_of_part: Vec<StreamedSection> = Vec::new();
    let mut on_partial = |sections: &[StreamedSection]| {
        let restart = taken_back(&sent_of_part, sections);
        sent_of_part = sections.to_vec();
        let mut all = shown.to_vec();
        all.extend_from_slice(sections);
        stream.sections(&all, restart, shown.len());
    };
    let outcome = match answer_question(
        llm,
        &question,
        model_history,
        &evidence.sources,
        options,
        ranker.as_deref().map(|r| r as &dyn EvidenceRanker),
        &mut on_partial,
    )
    .await
    {
        Ok(o) => Some(o),
        Err(e) => {
            tracing::warn!(error = %e, "the language model failed for a question");
            None
        }
    };
    drop(ranker);
    Ok(AnsweredPart { part: part.to_string(), query, query_source, retrieval_ms, found: evidence.found, outcome })
}

/// Whether a part's text so far, `next`, takes back what was sent of it,
/// `before`: the model's words only grow while one reply is written, so
/// fewer sections, or a section no longer starting with what it said, mean
/// the part is being written again. The last few characters of a section
/// may still change (an escape the model is halfway through writing), so
/// they are not compared.
pub fn taken_back(before: &[StreamedSection], next: &[StreamedSection]) -> bool {
    const UNSETTLED_CHARS: usize = 6;
    if before.iter().all(|s| s.text.is_empty()) {
        return false;
    }
    let settled = |text: &str| {
        let keep = text.chars().count().saturating_sub(UNSETTLED_CHARS);
        text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i)
    };
    next.len() < before.len() || before.iter().zip(next).any(|(b, n)| !n.text.starts_with(&b.text[..settled(&b.text)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(text: &str, closed: bool) -> StreamedSection {
        StreamedSection { text: text.into(), closed, citations: vec![] }
    }

    #[test]
    fn words_that_grow_are_not_taken_back_and_words_that_shrink_are() {
        let one = [section("Doanh thu", false)];
        let more = [section("Doanh thu tăng 12,4%.", true), section("Lợi", false)];
        assert!(!taken_back(&[], &one), "nothing was sent");
        assert!(!taken_back(&one, &more), "the text grew");
        assert!(taken_back(&more, &one), "a section went");
        assert!(taken_back(&one, &[section("Lợi nhuận", false)]), "the same section says something else");
        assert!(!taken_back(&[section("Tăng 12\\u00", false)], &[section("Tăng 12%", false)]), "an escape being written");
        assert!(taken_back(&one, &[]), "written again from nothing");
    }
}

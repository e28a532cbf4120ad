//! Grounding: the model's cited ids become exact spans of the raw text.
//!
//! Each id names an evidence unit, whose span in its chunk is known, so a
//! citation is a slice of the raw text by construction. Consecutive cited
//! sentences of one chunk and segment are one span; a table row is cited
//! with its header row; an id the prompt did not show is dropped and
//! counted; a section left with no valid citation is not shown as a fact.

use crate::cite::{citation, segment_at};
use crate::contract::ModelAnswer;
use crate::evidence::{self, Evidence, EvidenceUnit};
use crate::{Citation, CitationReport, Section, SourceChunk};

/// The citations of one unit: the unit (or the exact `quote` span inside
/// it, chunk-relative chars), and a table row's header row.
pub fn unit_citations(chunk: &SourceChunk, unit: &EvidenceUnit, quote: Option<(usize, usize)>) -> Vec<Citation> {
    let (s, e) = quote.unwrap_or((unit.start, unit.end));
    let mut out = vec![citation(&chunk.chunk_id, chunk, s, e, true)];
    if let Some((hs, he)) = unit.header {
        out.push(citation(&chunk.chunk_id, chunk, hs, he, true));
    }
    out
}

/// Where `quote` is, exactly, inside the unit (chunk-relative chars).
fn quote_in(chunk: &SourceChunk, unit: &EvidenceUnit, quote: &str) -> Option<(usize, usize)> {
    let quote = quote.trim();
    if quote.is_empty() {
        return None;
    }
    let unit_text: String = chunk.content.chars().skip(unit.start).take(unit.end - unit.start).collect();
    let byte = unit_text.find(quote)?;
    let start = unit.start + unit_text[..byte].chars().count();
    Some((start, start + quote.chars().count()))
}

/// Lower case, whitespace runs as one space, without the final
/// punctuation.
fn normalised(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase().trim_end_matches(['.', '!', '?', ';', ':', '…']).to_string()
}

/// The unit whose whole text the section's text is (or holds), when that
/// text is long enough to be a copy rather than a coincidence.
fn copied_unit(text: &str, evidence: &Evidence) -> Option<usize> {
    const MIN_CHARS: usize = 20;
    let t = normalised(text);
    evidence.units.iter().position(|u| {
        let u = normalised(&u.text);
        u.chars().count() >= MIN_CHARS && (t == u || t.contains(&u))
    })
}

/// The ids a section's text consists of, when it is nothing else: ids
/// (`S1`, `[S2]`, any case) separated by spaces, commas, semicolons,
/// "and", "và" or a final full stop. None for any other word.
fn ids_only(text: &str) -> Option<Vec<String>> {
    let mut ids: Vec<String> = Vec::new();
    for piece in text.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '[' | ']' | '.' | '(' | ')')) {
        if piece.is_empty() || piece.eq_ignore_ascii_case("and") || piece == "và" {
            continue;
        }
        let id = evidence::normalise_id(piece);
        let digits = id.strip_prefix('S')?;
        if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    (!ids.is_empty()).then_some(ids)
}

/// Sections with exact citations, and what was dropped on the way
/// (`dropped_source_ids`, `unsupported_sections`, quotes narrowed or
/// rejected) added to `report`.
/// With `support_for`, the question: a section's citations gain the unit
/// that states its own words when its ids name another (`support`).
pub fn ground(
    answer: &ModelAnswer,
    support_for: Option<&str>,
    evidence: &Evidence,
    chunks: &[SourceChunk],
    report: &mut CitationReport,
) -> Vec<Section> {
    let mut out = Vec::new();
    for raw in &answer.sections {
        let text = raw.text.trim();
        if text.is_empty() {
            continue;
        }
        // A text that is only ids ("S1", "[S2], [S4]"): the model named the
        // sentences it meant instead of writing them (seen under the
        // text-first prefill, 7 sections of one 90-question run). The
        // section says those sentences, as an extractive one would, rather
        // than showing "S1" as the answer or failing the figure check.
        let named = ids_only(text).map(|ids| {
            let units: Vec<&str> = ids.iter().filter_map(|id| evidence.get(id)).map(|(_, u)| u.text.as_str()).collect();
            (ids, units.join(" "))
        });
        let of_ids = named.as_ref().is_some_and(|(_, units)| !units.is_empty());
        let (cites, text): (Vec<String>, &str) = match &named {
            Some((ids, units)) if of_ids => {
                report.recited_sections += 1;
                let mut cites = ids.clone();
                cites.extend(raw.cites.iter().filter(|c| !ids.contains(&evidence::normalise_id(c))).cloned());
                (cites, units.as_str())
            }
            _ => (raw.cites.clone(), text),
        };
        // Valid units, in reading order, each once.
        let mut cited: Vec<usize> = Vec::new();
        // A section whose text is a sentence of the evidence copied whole
        // cites that sentence, whatever ids came with it: small models copy
        // the right sentence and name its neighbour.
        if let Some(copied) = copied_unit(text, evidence).filter(|_| !of_ids) {
            if !raw.cites.iter().any(|id| evidence.get(id).is_some_and(|(i, _)| i == copied)) {
                report.recited_sections += 1;
            }
            cited.push(copied);
        }
        let recited = !cited.is_empty();
        for id in cites.iter().filter(|_| !recited) {
            match evidence.get(id) {
                Some((i, _)) if !cited.contains(&i) => cited.push(i),
                Some(_) => {}
                None => {
                    let id = evidence::normalise_id(id);
                    if !report.dropped_source_ids.contains(&id) {
                        report.dropped_source_ids.push(id);
                    }
                }
            }
        }
        // The sentence that states the section's own words, when the ids
        // name another (or none): small models cite the sentence beside
        // the one they read.
        if let Some(question) = support_for.filter(|_| !recited) {
            if let Some(found) = crate::support::supporting_unit(text, question, evidence, &cited) {
                report.supported_sections += 1;
                cited.push(found);
            }
        }
        cited.sort_unstable();
        if cited.is_empty() {
            report.unsupported_sections.push(text.to_string());
            continue;
        }
        // A quote narrows the highlight of the unit that holds it exactly.
        let mut narrowed: Option<(usize, (usize, usize))> = None;
        if let Some(q) = raw.quote.as_deref().filter(|q| !q.trim().is_empty()) {
            narrowed = cited.iter().find_map(|&i| {
                let u = &evidence.units[i];
                quote_in(&chunks[u.chunk], u, q).map(|span| (i, span))
            });
            if narrowed.is_some() {
                report.narrowed_quotes += 1;
            } else {
                report.rejected_quotes += 1;
            }
        }
        let mut citations: Vec<Citation> = Vec::new();
        let mut source_ids: Vec<String> = Vec::new();
        let mut k = 0;
        while k < cited.len() {
            let first = &evidence.units[cited[k]];
            let chunk = &chunks[first.chunk];
            // Extend the run over the next units of the evidence that are
            // cited too, in the same chunk and segment, not table rows.
            let mut last = k;
            while last + 1 < cited.len()
                && narrowed.is_none()
                && cited[last + 1] == cited[last] + 1
                && first.header.is_none()
                && evidence.units[cited[last + 1]].header.is_none()
                && evidence.units[cited[last + 1]].chunk == first.chunk
                && segment_at(chunk, chunk.char_start + evidence.units[cited[last + 1]].start as u64)
                    == segment_at(chunk, chunk.char_start + first.start as u64)
            {
                last += 1;
            }
            let end_unit = &evidence.units[cited[last]];
            let quote = narrowed.filter(|(i, _)| *i == cited[k]).map(|(_, span)| span);
            let mut unit = first.clone();
            unit.end = end_unit.end;
            for c in unit_citations(chunk, &unit, quote) {
                let dup =
                    citations.iter().any(|d| d.document_id == c.document_id && d.char_start == c.char_start && d.char_end == c.char_end);
                if !dup {
                    citations.push(c);
                }
            }
            if !source_ids.contains(&chunk.chunk_id) {
                source_ids.push(chunk.chunk_id.clone());
            }
            k = last + 1;
        }
        out.push(Section { text: text.to_string(), source_ids, citations });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::ModelSection;
    use crate::{evidence, SegmentSpan};

    fn chunks() -> Vec<SourceChunk> {
        let a = "Doanh thu đạt 1.245,6 tỷ đồng. Lợi nhuận tăng 8%. Chi phí giảm.\n| Chỉ tiêu | 2023 |\n|---|---|\n| Nợ vay | 92,0 |";
        let b = "Lãi suất giảm xuống 5%.";
        vec![
            SourceChunk {
                chunk_id: "ca".into(),
                document_id: "da".into(),
                char_start: 1000,
                char_end: 1000 + a.chars().count() as u64,
                content: a.into(),
                filename: None,
                page_start: 0,
                page_end: 1,
                lines: None,
                revision: 1,
                segments: vec![
                    SegmentSpan { segment_index: 0, page_idx: 0, char_start: 1000, char_end: 1050 },
                    SegmentSpan { segment_index: 1, page_idx: 1, char_start: 1050, char_end: 1200 },
                ],
            },
            SourceChunk {
                chunk_id: "cb".into(),
                document_id: "db".into(),
                char_start: 0,
                char_end: b.chars().count() as u64,
                content: b.into(),
                filename: None,
                page_start: 0,
                page_end: 0,
                lines: None,
                revision: 1,
                segments: vec![],
            },
        ]
    }

    fn section(text: &str, cites: &[&str], quote: Option<&str>) -> ModelSection {
        ModelSection { text: text.into(), cites: cites.iter().map(|c| c.to_string()).collect(), quote: quote.map(str::to_string) }
    }

    fn slices_raw_text(c: &Citation, chunks: &[SourceChunk]) -> bool {
        let chunk = chunks.iter().find(|k| k.chunk_id == c.chunk_id).unwrap();
        let (s, e) = ((c.char_start - chunk.char_start) as usize, (c.char_end - chunk.char_start) as usize);
        chunk.content.chars().skip(s).take(e - s).collect::<String>() == c.text
    }

    #[test]
    fn ids_become_exact_spans_and_consecutive_sentences_merge() {
        let chunks = chunks();
        let ev = evidence::build(&chunks, usize::MAX);
        let texts: Vec<&str> = ev.units.iter().map(|u| u.text.as_str()).collect();
        assert_eq!(
            texts,
            ["Doanh thu đạt 1.245,6 tỷ đồng.", "Lợi nhuận tăng 8%.", "Chi phí giảm.", "Nợ vay — 2023: 92,0", "Lãi suất giảm xuống 5%."]
        );
        let answer = ModelAnswer {
            answerable: true,
            sections: vec![
                section("Doanh thu và lợi nhuận.", &["S2", "S1", "S9"], None),
                section("Lợi nhuận, chi phí.", &["S2", "S3"], None),
                section("Nợ vay 92.", &["S4"], None),
                section("Bịa.", &["S42"], None),
            ],
        };
        let mut report = CitationReport::default();
        let out = ground(&answer, None, &ev, &chunks, &mut report);
        assert_eq!(out.len(), 3);
        // S1 and S2 are one span (same segment).
        assert_eq!(out[0].citations.len(), 1);
        assert_eq!(out[0].citations[0].text, "Doanh thu đạt 1.245,6 tỷ đồng. Lợi nhuận tăng 8%.");
        // S2 and S3 are in different segments: two spans.
        let t: Vec<&str> = out[1].citations.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(t, ["Lợi nhuận tăng 8%.", "Chi phí giảm."]);
        assert_eq!((out[1].citations[1].segment_index, out[1].citations[1].page_idx), (1, 1));
        // A table row is cited with its header.
        let t: Vec<&str> = out[2].citations.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(t, ["| Nợ vay | 92,0 |", "| Chỉ tiêu | 2023 |"]);
        assert_eq!(report.dropped_source_ids, ["S9", "S42"]);
        assert_eq!(report.unsupported_sections, ["Bịa."]);
        for s in &out {
            assert!(s.citations.iter().all(|c| c.exact && slices_raw_text(c, &chunks)));
        }
    }

    #[test]
    fn a_sentence_copied_whole_cites_itself_whatever_id_came_with_it() {
        let chunks = chunks();
        let ev = evidence::build(&chunks, usize::MAX);
        let answer = ModelAnswer {
            answerable: true,
            sections: vec![
                section("Lãi suất giảm xuống 5%", &["S1"], None),
                section("Doanh thu đạt 1.245,6 tỷ đồng.", &["S1"], None),
                section("Lãi suất giảm.", &["S5"], None),
            ],
        };
        let mut report = CitationReport::default();
        let out = ground(&answer, None, &ev, &chunks, &mut report);
        assert_eq!(out[0].citations[0].text, "Lãi suất giảm xuống 5%.");
        assert_eq!(out[0].source_ids, ["cb"]);
        assert_eq!(out[1].citations[0].text, "Doanh thu đạt 1.245,6 tỷ đồng.");
        // Too short to be a copy: the cited id stands.
        assert_eq!(out[2].citations[0].text, "Lãi suất giảm xuống 5%.");
        assert_eq!(report.recited_sections, 1);
    }

    #[test]
    fn a_text_of_ids_only_says_the_sentences_it_names() {
        let chunks = chunks();
        let ev = evidence::build(&chunks, usize::MAX);
        assert_eq!(ids_only("S1"), Some(vec!["S1".to_string()]));
        assert_eq!(ids_only("[s2], [S4] và S2."), Some(vec!["S2".to_string(), "S4".to_string()]));
        assert_eq!(ids_only("S3 là mẫu xe"), None);
        assert_eq!(ids_only("Samsung S3"), None);
        let answer = ModelAnswer {
            answerable: true,
            sections: vec![section("S2", &["S2"], None), section("[S5]", &["S1"], None), section("S9", &["S1"], None)],
        };
        let mut report = CitationReport::default();
        let out = ground(&answer, Some("Lợi nhuận tăng bao nhiêu?"), &ev, &chunks, &mut report);
        assert_eq!(out[0].text, "Lợi nhuận tăng 8%.");
        assert_eq!(out[0].citations[0].text, "Lợi nhuận tăng 8%.");
        // The id the text names is cited beside the one the cites list gave.
        assert_eq!(out[1].text, "Lãi suất giảm xuống 5%.");
        let t: Vec<&str> = out[1].citations.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(t, ["Doanh thu đạt 1.245,6 tỷ đồng.", "Lãi suất giảm xuống 5%."]);
        // An id the evidence does not have leaves the text as it was.
        assert_eq!(out[2].text, "S9");
        assert_eq!(report.recited_sections, 2);
    }

    #[test]
    fn a_section_cites_the_sentence_that_states_its_own_words() {
        let chunks = chunks();
        let ev = evidence::build(&chunks, usize::MAX);
        // The fact of S2, cited as S1 (the sentence beside it).
        let answer = ModelAnswer { answerable: true, sections: vec![section("Lợi nhuận tăng 8%.", &["S1"], None)] };
        let mut report = CitationReport::default();
        let out = ground(&answer, Some("Lợi nhuận tăng bao nhiêu?"), &ev, &chunks, &mut report);
        assert_eq!(out[0].citations[0].text, "Doanh thu đạt 1.245,6 tỷ đồng. Lợi nhuận tăng 8%.");
        assert_eq!(report.supported_sections, 1);
        // Without the question, the ids alone.
        let mut report = CitationReport::default();
        let out = ground(&answer, None, &ev, &chunks, &mut report);
        assert_eq!(out[0].citations[0].text, "Doanh thu đạt 1.245,6 tỷ đồng.");
        assert_eq!(report.supported_sections, 0);
        // A section with no valid id is kept when a unit states its words.
        let answer = ModelAnswer { answerable: true, sections: vec![section("Lãi suất còn 5%.", &["S42"], None)] };
        let mut report = CitationReport::default();
        let out = ground(&answer, Some("Lãi suất là bao nhiêu?"), &ev, &chunks, &mut report);
        assert_eq!(out[0].citations[0].text, "Lãi suất giảm xuống 5%.");
        assert!(report.unsupported_sections.is_empty());
    }

    #[test]
    fn a_quote_narrows_the_highlight_only_when_exact() {
        let chunks = chunks();
        let ev = evidence::build(&chunks, usize::MAX);
        let answer = ModelAnswer {
            answerable: true,
            sections: vec![section("5%.", &["S5"], Some("xuống 5%")), section("Tăng.", &["S2"], Some("tăng tám phần trăm"))],
        };
        let mut report = CitationReport::default();
        let out = ground(&answer, None, &ev, &chunks, &mut report);
        assert_eq!(out[0].citations[0].text, "xuống 5%");
        assert_eq!(out[0].source_ids, ["cb"]);
        assert_eq!(out[1].citations[0].text, "Lợi nhuận tăng 8%.");
        assert_eq!((report.narrowed_quotes, report.rejected_quotes), (1, 1));
        assert!(out.iter().flat_map(|s| &s.citations).all(|c| slices_raw_text(c, &chunks)));
    }
}

//! Evidence as numbered sentence units: the one place where retrieved
//! chunks are cut into sentences (and table rows) that know their exact
//! span in the chunk, and so in the document's raw text.
//!
//! The model is shown `[S4] …` lines and cites ids, never free text: the
//! system turns ids back into spans ([`crate::grounding`]), so a citation is
//! exact by construction. The extractive answer scores the same units.

use crate::SourceChunk;

mod lines;
mod sentence;
#[cfg(test)]
mod tests;

use lines::{is_header_row, is_heading, is_rule_row, table_header, text_of};
pub use lines::{is_table_row, labelled_row};
pub use sentence::sentences;

/// One sentence (or table row) of a retrieved chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct EvidenceUnit {
    /// Short id, unique in the prompt: `S1`, `S2`, … in reading order.
    pub id: String,
    /// Index of the chunk in the retrieved list.
    pub chunk: usize,
    /// Span of the unit in its chunk's content, in chars.
    pub start: usize,
    pub end: usize,
    /// For a table row: the span of its table's header row, in chars of the
    /// same chunk. The row is shown and cited with it.
    pub header: Option<(usize, usize)>,
    /// What the model is shown: the sentence, or a table row labelled with
    /// its header ("Lợi nhuận gộp — 2022: 312,5; 2023: 351,9").
    pub text: String,
    /// The Markdown heading right above the unit, shown before it as
    /// context. A heading is not a unit of its own: it states nothing, and
    /// a small model cited the heading above the sentence it meant.
    pub heading: Option<String>,
}

/// The units of the chunks that fit the budget, in prompt order: grouped
/// by document (documents in the order of their best-ranked chunk), then by
/// position in the document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    pub units: Vec<EvidenceUnit>,
    /// Retrieved chunks whose units are in the evidence (the best ranked
    /// first; the rest did not fit the budget).
    pub chunks_used: usize,
}

impl Evidence {
    /// The unit `id` names, however the model wrote it (`S4`, `s4`, `[S4]`).
    pub fn get(&self, id: &str) -> Option<(usize, &EvidenceUnit)> {
        let id = normalise_id(id);
        self.units.iter().enumerate().find(|(_, u)| u.id == id)
    }

    /// Keeps the `n` units whose `scores` (in unit order: how close each is
    /// to the question) are highest, in prompt order, renumbered `S1`…. A
    /// heading shown above a unit left out moves to the next unit kept of
    /// its chunk. Scores of another length, or `n` 0, keep everything.
    pub fn keep_closest(&mut self, scores: &[f64], n: usize) {
        if n == 0 || scores.len() != self.units.len() || self.units.len() <= n {
            return;
        }
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|a, b| scores[*b].partial_cmp(&scores[*a]).unwrap_or(std::cmp::Ordering::Equal).then(a.cmp(b)));
        let mut keep = vec![false; scores.len()];
        for i in order.into_iter().take(n) {
            keep[i] = true;
        }
        self.keep(&keep);
    }

    /// Leaves out the units `leave_out` names, renumbering the rest as
    /// [`Evidence::keep_closest`] does.
    pub fn drop_units(&mut self, leave_out: impl Fn(&EvidenceUnit) -> bool) {
        let keep: Vec<bool> = self.units.iter().map(|u| !leave_out(u)).collect();
        self.keep(&keep);
    }

    /// Leaves out the units `flagged` marks (one flag per unit; any other
    /// length leaves every unit in). Returns how many were left out.
    pub fn drop_flagged(&mut self, flagged: &[bool]) -> usize {
        if flagged.len() != self.units.len() {
            return 0;
        }
        let keep: Vec<bool> = flagged.iter().map(|f| !f).collect();
        self.keep(&keep);
        flagged.iter().filter(|f| **f).count()
    }

    /// Cuts each unit for which `cut` says how many of its chars may be
    /// shown down to that opening (its span and text), or leaves it out
    /// when that is 0 or the unit is a table row shown with its header
    /// (its text is not its span). Returns how many units were cut or left
    /// out.
    pub fn cut_units(&mut self, cut: impl Fn(&EvidenceUnit) -> Option<usize>) -> usize {
        let mut touched = 0;
        let mut keep = Vec::with_capacity(self.units.len());
        for u in &mut self.units {
            match cut(u) {
                None => keep.push(true),
                Some(n) => {
                    touched += 1;
                    if n == 0 || u.header.is_some() || u.end - u.start != u.text.chars().count() {
                        keep.push(false);
                    } else {
                        u.text = u.text.chars().take(n).collect::<String>().trim_end().to_string();
                        u.end = u.start + u.text.chars().count();
                        keep.push(true);
                    }
                }
            }
        }
        self.keep(&keep);
        touched
    }

    /// Keeps the units `keep` marks, in prompt order, renumbered `S1`…; a
    /// heading shown above a unit left out moves to the next unit kept of
    /// its chunk.
    fn keep(&mut self, keep: &[bool]) {
        let mut carried: Option<(usize, String)> = None;
        let mut kept = Vec::with_capacity(self.units.len());
        for (i, mut u) in std::mem::take(&mut self.units).into_iter().enumerate() {
            if !keep[i] {
                if let Some(h) = u.heading.take() {
                    carried = Some((u.chunk, h));
                }
                continue;
            }
            if let Some((chunk, h)) = carried.take() {
                if chunk == u.chunk && u.heading.is_none() {
                    u.heading = Some(h);
                }
            }
            u.id = format!("S{}", kept.len() + 1);
            kept.push(u);
        }
        self.units = kept;
    }

    /// The evidence as the prompt shows it:
    ///
    /// ```text
    /// Document: bao-cao.pdf, page 2
    /// [S1] Doanh thu thuần năm 2023 đạt 1.245,6 tỷ đồng.
    /// ```
    ///
    /// (a presentation's pages are its slides: `Document: ban-hang.pptx,
    /// slide 2`, so a model that says where says it as the page does).
    pub fn render(&self, chunks: &[SourceChunk]) -> String {
        let mut out = String::new();
        let mut current: Option<(&str, u32)> = None;
        for u in &self.units {
            let chunk = &chunks[u.chunk];
            let page = page_of(chunk, chunk.char_start + u.start as u64);
            if current != Some((chunk.document_id.as_str(), page)) {
                if current.is_some() {
                    out.push('\n');
                }
                let name = chunk.filename.as_deref().unwrap_or(&chunk.document_id);
                out.push_str(&format!("Document: {name}, {} {}\n", page_noun(name), page + 1));
                current = Some((chunk.document_id.as_str(), page));
            }
            if let Some(h) = &u.heading {
                out.push_str(h.trim());
                out.push('\n');
            }
            out.push_str(&format!("[{}] {}\n", u.id, u.text.split_whitespace().collect::<Vec<_>>().join(" ")));
        }
        out
    }
}

/// What a page of the document named `name` is called: a slide in a
/// presentation (PPTX, ODP: its pages are slides), else a page.
fn page_noun(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    if matches!(ext.as_deref(), Some("pptx" | "odp")) {
        "slide"
    } else {
        "page"
    }
}

/// A unit id as the prompt writes it: `[s4]` → `S4`.
pub fn normalise_id(raw: &str) -> String {
    raw.trim().trim_start_matches('[').trim_end_matches(']').trim().to_uppercase()
}

/// The zero-based page holding document offset `pos`.
fn page_of(chunk: &SourceChunk, pos: u64) -> u32 {
    chunk.segments.iter().filter(|s| s.char_start <= pos).max_by_key(|s| s.char_start).map_or(chunk.page_start, |s| s.page_idx)
}

/// How many of the best-ranked chunks (their retrieval `scores`, best
/// first) are worth showing a model: those scoring at least `ratio` of the
/// best one, and always the best. A small model given eight passages of
/// which one answers tends to cite a passage that merely shares words with
/// the question (eval/vi-dev: an insurance question answered from the
/// library's opening hours, ranked second at 0.62 of the first); and every
/// passage left out is prompt the model need not read before its first
/// words. `ratio` 0 keeps every chunk.
pub fn within_best(scores: &[f64], ratio: f64) -> usize {
    let Some(best) = scores.first().copied().filter(|b| *b > 0.0 && ratio > 0.0) else {
        return scores.len();
    };
    1 + scores[1..].iter().take_while(|s| **s >= ratio * best).count()
}

/// Cuts `chunks` (best ranked first) into units. Chunks are taken in rank
/// order while their units fit `max_chars` (the first always does), so the
/// lowest-ranked chunks are the first left out. A sentence that overlaps
/// one already taken from the same document (overlapping chunks) is shown
/// once.
pub fn build(chunks: &[SourceChunk], max_chars: usize) -> Evidence {
    // (document rank, absolute start, unit without id)
    let mut taken: Vec<(usize, u64, u64, EvidenceUnit)> = Vec::new();
    let mut doc_rank: Vec<&str> = Vec::new();
    let mut used_chars = 0usize;
    let mut chunks_used = 0;
    for (ci, chunk) in chunks.iter().enumerate() {
        let chars: Vec<char> = chunk.content.chars().collect();
        let mut candidates = Vec::new();
        let mut heading: Option<String> = None;
        for (s, e) in sentences(&chunk.content) {
            let sentence = text_of(&chars, (s, e));
            if is_heading(&sentence) {
                heading = Some(sentence);
                continue;
            }
            // The rule under a Markdown header says nothing; a header row is
            // shown inside every row it heads.
            if is_rule_row(&sentence) || is_header_row(&chars, s) {
                continue;
            }
            let (abs_s, abs_e) = (chunk.char_start + s as u64, chunk.char_start + e as u64);
            let overlaps =
                taken.iter().any(|(_, ts, te, u)| chunks[u.chunk].document_id == chunk.document_id && abs_s < *te && *ts < abs_e);
            if overlaps {
                continue;
            }
            let header = if is_table_row(&sentence) { table_header(&chars, s) } else { None };
            let text = match header {
                Some(h) => labelled_row(&text_of(&chars, h), &sentence),
                None => sentence,
            };
            candidates.push((
                abs_s,
                abs_e,
                EvidenceUnit { id: String::new(), chunk: ci, start: s, end: e, header, text, heading: heading.take() },
            ));
        }
        let size: usize = candidates.iter().map(|(_, _, u)| u.text.chars().count() + 6).sum();
        if chunks_used > 0 && used_chars + size > max_chars {
            break;
        }
        used_chars += size;
        chunks_used += 1;
        let rank = match doc_rank.iter().position(|d| *d == chunk.document_id) {
            Some(r) => r,
            None => {
                doc_rank.push(&chunk.document_id);
                doc_rank.len() - 1
            }
        };
        taken.extend(candidates.into_iter().map(|(s, e, u)| (rank, s, e, u)));
    }
    taken.sort_by_key(|(rank, s, _, _)| (*rank, *s));
    let units = taken
        .into_iter()
        .enumerate()
        .map(|(i, (_, _, _, mut u))| {
            u.id = format!("S{}", i + 1);
            u
        })
        .collect();
    Evidence { units, chunks_used }
}

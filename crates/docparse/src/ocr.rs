//! What text recognition returns for a page: words with their paragraph,
//! line and box, turned into a block of text whose characters carry the
//! boxes (a word's box split evenly among its characters, since OCR gives
//! no finer positions).

use crate::geometry::{Axis, Glyph, Rect};
use crate::Block;

/// One recognised word.
#[derive(Debug, Clone, PartialEq)]
pub struct OcrWord {
    pub text: String,
    /// Words of one paragraph share it; a new paragraph starts a new block of text.
    pub paragraph: u32,
    /// Words of one line share it.
    pub line: u32,
    /// In the page's unit (points on a PDF page, pixels of an image) as
    /// displayed (origin top-left), when known.
    pub rect: Option<Rect>,
}

/// Why a page could not be recognised. The page stays without text, and
/// the message is its OCR failure (`ParsedDocument::ocr_failures`).
#[derive(Debug, thiserror::Error)]
pub enum OcrError {
    /// A working file of the recogniser could not be written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A working file or directory of the recogniser (`what`) could not be
    /// made or read.
    #[error("{what}: {source}")]
    File {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// A program the recogniser runs could not be started or waited for.
    #[error("{program}: {source}")]
    Run {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// A program the recogniser runs failed; `stderr` is the start of what
    /// it said.
    #[error("{program} failed ({status}): {stderr}")]
    Failed { program: String, status: std::process::ExitStatus, stderr: String },
    /// A program the recogniser runs did not finish in the time for a page.
    #[error("{program} timed out")]
    TimedOut { program: String },
    /// The recogniser's output (in `format`) has `value` where a number
    /// belongs, on line `line`.
    #[error("{format} line {line}: bad number {value:?}")]
    BadNumber { format: &'static str, line: usize, value: String },
    /// The recogniser cannot read this kind of page.
    #[error("{0}")]
    Unsupported(&'static str),
}

/// The words of one page in reading order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OcrPage {
    pub words: Vec<OcrWord>,
}

impl OcrPage {
    /// Words without boxes from plain text: blank lines separate
    /// paragraphs, whitespace separates words.
    pub fn from_text(text: &str) -> OcrPage {
        let mut words = Vec::new();
        let (mut paragraph, mut line) = (0, 0);
        for l in text.lines() {
            line += 1;
            if l.trim().is_empty() {
                paragraph += 1;
                continue;
            }
            words.extend(l.split_whitespace().map(|w| OcrWord { text: w.to_string(), paragraph, line, rect: None }));
        }
        OcrPage { words }
    }

    /// The same words without their boxes (text placed by lines only).
    pub fn without_boxes(self) -> OcrPage {
        OcrPage { words: self.words.into_iter().map(|w| OcrWord { rect: None, ..w }).collect() }
    }

    pub fn is_blank(&self) -> bool {
        self.words.iter().all(|w| w.text.trim().is_empty())
    }

    /// The page's text (words joined by spaces, lines by newlines,
    /// paragraphs by a blank line) with each character's glyph.
    pub fn block(&self, page_idx: u32) -> Block {
        let mut text = String::new();
        let mut glyphs = Vec::new();
        let mut prev: Option<&OcrWord> = None;
        for w in self.words.iter().filter(|w| !w.text.trim().is_empty()) {
            if let Some(p) = prev {
                let sep = if p.paragraph != w.paragraph {
                    "\n\n"
                } else if p.line != w.line {
                    "\n"
                } else {
                    " "
                };
                text.push_str(sep);
                glyphs.extend(sep.chars().map(|_| None));
            }
            let n = w.text.chars().count();
            text.push_str(&w.text);
            match w.rect {
                Some(r) => glyphs.extend(r.split(n, Axis::X).into_iter().map(|rect| Some(Glyph::new(rect, Axis::X)))),
                None => glyphs.extend(std::iter::repeat_n(None, n)),
            }
            prev = Some(w);
        }
        let any = glyphs.iter().any(Option::is_some);
        Block { page_idx, text, glyphs: if any { glyphs } else { Vec::new() }, cells: None }
    }
}

//! Google Document AI output: the `Document` JSON (`text` plus
//! `pages[].paragraphs[].layout.textAnchor.textSegments[]`), as seed 002's
//! `build_segments_from_docai`. Indices count Unicode code points of `text`.

use serde::Deserialize;

use crate::{Block, ParseError};

#[derive(Deserialize)]
struct Document {
    text: Option<String>,
    #[serde(default)]
    pages: Vec<Page>,
}

#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    paragraphs: Vec<Paragraph>,
}

#[derive(Deserialize)]
struct Paragraph {
    layout: Option<Layout>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Layout {
    text_anchor: Option<TextAnchor>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TextAnchor {
    #[serde(default)]
    text_segments: Vec<TextSegment>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TextSegment {
    // Proto3 JSON writes int64 as strings; omits zero.
    #[serde(default, deserialize_with = "int64")]
    start_index: u64,
    #[serde(default, deserialize_with = "int64")]
    end_index: u64,
}

fn int64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum N {
        S(String),
        U(u64),
    }
    match N::deserialize(d)? {
        N::U(n) => Ok(n),
        N::S(s) => s.parse().map_err(serde::de::Error::custom),
    }
}

pub fn blocks(json: &str) -> Result<(Vec<Block>, u32), ParseError> {
    let doc: Document = serde_json::from_str(json).map_err(|e| ParseError::InvalidDocAi(e.to_string()))?;
    let text = doc.text.ok_or_else(|| ParseError::InvalidDocAi("no `text` field".into()))?;
    if doc.pages.is_empty() {
        return Err(ParseError::InvalidDocAi("no `pages`".into()));
    }
    let chars: Vec<char> = text.chars().collect();
    let mut blocks = Vec::new();
    for (page_idx, page) in doc.pages.iter().enumerate() {
        for para in &page.paragraphs {
            let Some(anchor) = para.layout.as_ref().and_then(|l| l.text_anchor.as_ref()) else { continue };
            let mut s = String::new();
            for seg in &anchor.text_segments {
                let (a, b) = (seg.start_index as usize, seg.end_index as usize);
                if a > b || b > chars.len() {
                    return Err(ParseError::InvalidDocAi(format!(
                        "text segment [{a}, {b}) is outside the text ({} characters)",
                        chars.len()
                    )));
                }
                s.extend(&chars[a..b]);
            }
            if !s.trim().is_empty() {
                blocks.push(Block { page_idx: page_idx as u32, text: s });
            }
        }
    }
    Ok((blocks, doc.pages.len() as u32))
}

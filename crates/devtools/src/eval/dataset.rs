//! The datasets both evaluations read: BEIR-style `corpus.jsonl` and
//! `queries.jsonl` (and the answer evaluation's `answers.jsonl`), the
//! corpus as documents of the real pipeline, and the ingested documents
//! found again by corpus id.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context;
use serde::Deserialize;

use crate::ingest::CorpusItem;

#[derive(Deserialize)]
pub(super) struct CorpusDoc {
    #[serde(rename = "_id")]
    pub(super) id: String,
    #[serde(default)]
    title: String,
    text: String,
}

#[derive(Deserialize)]
pub(super) struct Query {
    #[serde(rename = "_id")]
    pub(super) id: String,
    pub(super) text: String,
}

/// A question's gold answer (`answers.jsonl`, the answer evaluation's).
#[derive(Deserialize)]
pub(super) struct GoldAnswer {
    #[serde(rename = "query-id")]
    pub(super) query_id: String,
    /// None: the passages do not answer the question. A question that asks
    /// several things gives a list: a passage and an answer per part.
    #[serde(rename = "corpus-id")]
    pub(super) corpus_id: Option<OneOrMany>,
    pub(super) answer: Option<OneOrMany>,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub(super) fn all(&self) -> Vec<&str> {
        match self {
            OneOrMany::One(s) => vec![s.as_str()],
            OneOrMany::Many(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

/// Each corpus entry becomes a Markdown document named `{id}.md`, its title
/// as heading.
pub(super) fn corpus_items(corpus: &[CorpusDoc]) -> Vec<CorpusItem> {
    corpus
        .iter()
        .map(|d| {
            let body = if d.title.trim().is_empty() { d.text.clone() } else { format!("# {}\n\n{}", d.title.trim(), d.text) };
            CorpusItem { filename: format!("{}.md", d.id), content_type: "text/markdown", bytes: body.into_bytes() }
        })
        .collect()
}

/// The workspace's documents by corpus id (through their `{id}.md` names).
pub(super) async fn documents_by_corpus_id(pool: &rag_store::sqlx::PgPool, workspace: &str) -> anyhow::Result<HashMap<String, uuid::Uuid>> {
    let names = rag_store::documents::list(pool, workspace).await?;
    Ok(names.into_iter().filter_map(|d| Some((d.filename?.strip_suffix(".md")?.to_string(), d.id))).collect())
}

pub(super) fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> anyhow::Result<Vec<T>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).with_context(|| format!("{}:{}", path.display(), i + 1)))
        .collect()
}

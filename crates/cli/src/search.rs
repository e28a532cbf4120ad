//! `rag-engine search`: ranked chunks with scores and positions.

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use rag_search::retriever::Mode;

use rag_app::config::{DatabaseSettings, EmbeddingSettings, RetrievalSettings, StageSettings};

#[derive(Args, Debug)]
pub struct SearchArgs {
    /// The query.
    query: String,
    /// Workspace to search (nothing outside it is ever returned).
    #[arg(long)]
    workspace: String,
    /// Chunks to return (default: RETRIEVAL_TOP_K).
    #[arg(long)]
    top_k: Option<usize>,
    /// Only these documents (repeatable).
    #[arg(long = "document")]
    documents: Vec<uuid::Uuid>,
    /// lexical, dense or hybrid.
    #[arg(long, default_value = "hybrid")]
    mode: Mode,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// What `search` reads: the database, the embedder and the retrieval
/// settings (the same retriever as the answerer's).
#[derive(clap::Args, Debug)]
pub struct SearchSettings {
    #[command(flatten)]
    pub database: DatabaseSettings,
    #[command(flatten)]
    pub embedding: EmbeddingSettings,
    #[command(flatten)]
    pub retrieval: RetrievalSettings,
}

pub async fn search(s: &SearchSettings, args: SearchArgs) -> anyhow::Result<ExitCode> {
    let pool = rag_store::connect(&s.database.store()).await.context("connecting to Postgres (DATABASE_URL)")?;
    // A remote embedder retries as the stages would (STAGE_* from the
    // environment, else their defaults).
    let retry = rag_app::config::from_env::<StageSettings>()?.retry();
    let mut retriever = s.retrieval.retriever_with(&s.embedding, pool, s.embedding.embedder(retry)?)?;
    // One query per process: loading the workspace's in-memory index
    // (seconds for a large one) would cost more than the SQL scorer, which
    // ranks the same.
    retriever.search_index = None;
    let top_k = args.top_k.unwrap_or(s.retrieval.retrieval_top_k).max(1);
    let result = retriever.retrieve(&args.workspace, &args.query, top_k, &args.documents, args.mode).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} result(s) for {:?} in {} ({:?}, query language {}{})",
        result.chunks.len(),
        args.query,
        args.workspace,
        result.mode,
        result.query_language.code(),
        if result.mode == Mode::Hybrid && !result.dense_used { ", lexical only: the embedder does not read it" } else { "" }
    );
    if let Some(f) = &result.fusion {
        println!(
            "fusion: dense side {:.0}%, lexical side {:.0}% x {:.0}% of the query's words matched (of the dense candidates, {:.0}% in the query's language, {:.0}% readable by the embedder); best hit ahead of the second by {:.0}% lexical, {:.0}% dense",
            f.dense_share * 100.0,
            (1.0 - f.dense_share) * 100.0,
            f.lexical_coverage * 100.0,
            f.same_language_share * 100.0,
            f.readable_share * 100.0,
            f.lexical_gap * 100.0,
            f.dense_gap * 100.0
        );
    }
    if let Some(r) = &result.rerank {
        match &r.error {
            None => println!("reranked by {} ({} candidates, {} ms)", r.model, r.candidates, r.ms),
            Some(e) => println!("not reranked ({e}): the fused order"),
        }
    }
    for (i, c) in result.chunks.iter().enumerate() {
        let h = &c.hit;
        // A presentation's pages are its slides (told by the file's name).
        let slides = h
            .filename
            .as_deref()
            .and_then(|f| rag_docparse::detect_format("application/octet-stream", f))
            .is_some_and(rag_docparse::Format::is_presentation);
        let pages = match (slides, h.page_start == h.page_end) {
            (true, true) => format!("slide {}", h.page_start + 1),
            (true, false) => format!("slides {}-{}", h.page_start + 1, h.page_end + 1),
            (false, true) => format!("p.{}", h.page_start + 1),
            (false, false) => format!("pp.{}-{}", h.page_start + 1, h.page_end + 1),
        };
        let ranks = [c.lexical_rank.map(|r| format!("lexical #{r}")), c.dense_rank.map(|r| format!("dense #{r}"))]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ");
        println!(
            "{:>2}. {:.4}  {}  {}  chars {}..{}  ({ranks})",
            i + 1,
            c.score,
            h.filename.as_deref().unwrap_or("-"),
            pages,
            h.char_start,
            h.char_end
        );
        println!("    {}  {}", h.document_id, h.chunk_id);
        let preview: String = h.content.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(160).collect();
        println!("    {preview}");
    }
    Ok(ExitCode::SUCCESS)
}

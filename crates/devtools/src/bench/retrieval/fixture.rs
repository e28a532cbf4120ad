//! The retrieval benchmark's fixture: generated chunks written through the
//! store functions the projector and the indexer use, and the queries
//! drawn from them (see `mod.rs` for what they model).

use fastrand::Rng;
use indicatif::ProgressBar;
use rag_chunking::Chunk;
use rag_events::{DocumentIngested, DocumentUploaded, Envelope};
use rag_store::pipeline::IndexedChunk;
use rag_store::sqlx::PgPool;

/// Bumped whenever the generator changes, so an old fixture is not reused.
// 2: drawn with fastrand (was a hand-written xorshift): other texts, so
// other workspaces; a fixture of version 1 is not reused.
const FIXTURE_VERSION: u32 = 2;
const CHUNKS_PER_DOCUMENT: usize = 10;
const WORDS_PER_CHUNK: usize = 110;
const CHUNKS_PER_WORKSPACE_AT_SCALE: usize = 10_000;
const CHUNKING_VERSION: &str = "bench-fixture";

pub(super) fn workspaces_for(chunks: usize) -> usize {
    if chunks >= 1_000_000 {
        chunks / CHUNKS_PER_WORKSPACE_AT_SCALE
    } else {
        1
    }
}

pub(super) fn workspace_name(chunks: usize, i: usize) -> String {
    format!("bench-retrieval-v{FIXTURE_VERSION}-{chunks}-{i:03}")
}

/// The fixture's vocabulary, its Zipf distribution and a random vector per word.
pub(super) struct Generator {
    words: Vec<String>,
    cumulative: Vec<f64>,
    vectors: Vec<Vec<f32>>,
}

const ONSETS: &[&str] =
    &["b", "c", "ch", "d", "đ", "g", "h", "k", "kh", "l", "m", "n", "ng", "nh", "ph", "qu", "r", "s", "t", "th", "tr", "v", "x"];
const NUCLEI: &[&str] = &["a", "e", "i", "o", "u", "ai", "ea", "ou", "io", "ee", "oa"];
const VI_NUCLEI: &[&str] = &["ă", "â", "ê", "ô", "ơ", "ư", "ươ", "iê", "uô", "á", "ạ", "ó", "ờ", "ủ", "ễ"];
const CODAS: &[&str] = &["", "", "c", "m", "n", "ng", "nh", "p", "t", "ch", "i", "o"];
const ENGLISH: &[&str] = &[
    "the", "of", "and", "revenue", "growth", "market", "risk", "interest", "rate", "board", "approved", "dividend", "export", "margin",
    "quarter", "report", "capital", "debt", "equity", "flow", "pressure", "boundary", "layer", "heat", "transfer", "wing", "tunnel",
];

impl Generator {
    pub(super) fn new(vocabulary: usize, dimension: usize) -> Self {
        let mut words: Vec<String> = Vec::with_capacity(vocabulary);
        let mut seen = std::collections::HashSet::new();
        let mut rng = Rng::with_seed(0x005e_ed0f_ba5e);
        for w in ENGLISH {
            if seen.insert(w.to_string()) {
                words.push(w.to_string());
            }
        }
        while words.len() < vocabulary {
            let pick = |rng: &mut Rng, set: &[&str]| set[rng.usize(..set.len())].to_string();
            // One word in four Vietnamese, the rest ASCII pseudo-words.
            let nuclei = if rng.usize(..4) == 0 { VI_NUCLEI } else { NUCLEI };
            let mut w = pick(&mut rng, ONSETS) + &pick(&mut rng, nuclei) + &pick(&mut rng, CODAS);
            if rng.usize(..4) == 0 {
                w += &pick(&mut rng, ENGLISH);
            }
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        // Zipf with exponent 1: word r (from 1) has weight 1/r.
        let mut cumulative = Vec::with_capacity(words.len());
        let mut total = 0.0;
        for r in 1..=words.len() {
            total += 1.0 / r as f64;
            cumulative.push(total);
        }
        for c in &mut cumulative {
            *c /= total;
        }
        let vectors = (0..if dimension == 0 { 0 } else { words.len() })
            .map(|i| {
                let mut rng = Rng::with_seed(0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1));
                (0..dimension).map(|_| (rng.f64() * 2.0 - 1.0) as f32).collect()
            })
            .collect();
        Generator { words, cumulative, vectors }
    }

    fn word(&self, rng: &mut Rng) -> usize {
        let u = rng.f64();
        self.cumulative.partition_point(|c| *c < u).min(self.words.len() - 1)
    }

    /// Word indexes of chunk `seed`.
    fn chunk_words(&self, seed: u64, n: usize) -> Vec<usize> {
        let mut rng = Rng::with_seed(seed);
        (0..n).map(|_| self.word(&mut rng)).collect()
    }

    fn text(&self, words: &[usize]) -> String {
        words.iter().map(|w| self.words[*w].as_str()).collect::<Vec<_>>().join(" ")
    }

    fn vector(&self, words: &[usize], dimension: usize) -> Option<Vec<f32>> {
        if dimension == 0 {
            return None;
        }
        let mut v = vec![0f32; dimension];
        for w in words {
            for (x, y) in v.iter_mut().zip(&self.vectors[*w]) {
                *x += y;
            }
        }
        rag_embed::l2_normalize(&mut v);
        Some(v)
    }
}

/// `n` queries over a fixture of `size` chunks: four words of a fixture
/// chunk each, from all over the fixture, with the chunk's index (the
/// query is asked in the workspace that holds it). English ones, which the
/// local encoder reads (a Vietnamese query is lexical only with it:
/// EMBEDDING_LANGUAGES).
pub(super) fn query_texts(generator: &Generator, size: usize, n: usize) -> Vec<(usize, String)> {
    (0..n)
        .map(|q| {
            let chunk = (q * 7919) % size;
            let words = generator.chunk_words(chunk as u64 + 1, WORDS_PER_CHUNK);
            let mut rng = Rng::with_seed(chunk as u64 ^ 0xABCD);
            let mut text = String::new();
            for _ in 0..50 {
                let picked: Vec<usize> = (0..4).map(|_| words[rng.usize(..words.len())]).collect();
                text = generator.text(&picked);
                if rag_retrieval::detect_language(&text) == rag_retrieval::Language::En {
                    break;
                }
            }
            (chunk, text)
        })
        .collect()
}

/// The fixture of `size` chunks and its queries as files, for the
/// LlamaIndex side of the bench: `chunks.jsonl` (one JSON string per
/// chunk, in fixture order), `vectors.f32` (little-endian, `dimension` per
/// chunk; empty when 0) and `fixture.json` (`dimension`, `queries`).
pub(crate) fn write_fixture_files(dir: &std::path::Path, size: usize, queries: usize, dimension: usize) -> anyhow::Result<()> {
    use std::io::Write;
    std::fs::create_dir_all(dir)?;
    let generator = Generator::new(30_000, dimension);
    let mut chunks = std::io::BufWriter::new(std::fs::File::create(dir.join("chunks.jsonl"))?);
    let mut vectors = std::io::BufWriter::new(std::fs::File::create(dir.join("vectors.f32"))?);
    for g in 0..size {
        let words = generator.chunk_words(g as u64 + 1, WORDS_PER_CHUNK);
        serde_json::to_writer(&mut chunks, &generator.text(&words))?;
        chunks.write_all(b"\n")?;
        for x in generator.vector(&words, dimension).unwrap_or_default() {
            vectors.write_all(&x.to_le_bytes())?;
        }
    }
    chunks.flush()?;
    vectors.flush()?;
    let queries: Vec<String> = query_texts(&generator, size, queries + 10).into_iter().map(|(_, q)| q).collect();
    std::fs::write(dir.join("fixture.json"), serde_json::to_vec(&serde_json::json!({"dimension": dimension, "queries": queries}))?)?;
    Ok(())
}

/// Writes one fixture workspace unless it is already complete.
pub(super) async fn ensure_workspace(
    pool: &PgPool,
    generator: &Generator,
    workspace: &str,
    first_chunk: usize,
    chunks: usize,
    model: Option<(&str, usize)>,
    bar: &ProgressBar,
) -> anyhow::Result<bool> {
    // Reused when complete and embedded with the same model; a lexical-only
    // run (no model) reuses any complete one: the texts come from the same
    // seeds whatever the model, and it searches no vectors (rebuilding an
    // embedded fixture for it cost the next run with the encoder a rebuild
    // of its own: minutes at 100,000 chunks).
    let (have, same_model) = rag_store::operations::chunk_count(pool, workspace, model.map(|(m, _)| m)).await?;
    if have == chunks as i64 && (model.is_none() || same_model == have) {
        bar.inc(chunks as u64);
        return Ok(false);
    }
    if have > 0 {
        // Say why a kept fixture is not reused (a run with another EMBEDDER
        // rebuilds it, and the next run with this one rebuilds it again).
        eprintln!(
            "bench retrieval: rebuilding {workspace}: it holds {have} chunks, {same_model} of them embedded with {}; {chunks} wanted",
            model.map_or("no model".to_string(), |(m, _)| m.to_string())
        );
    }
    rag_store::operations::delete_workspace_rows(pool, workspace).await?;
    let dimension = model.map(|(_, d)| d).unwrap_or(0);
    let documents = chunks.div_ceil(CHUNKS_PER_DOCUMENT);
    // Fifty documents per transaction: fewer commits, same rows.
    for batch in (0..documents).collect::<Vec<_>>().chunks(50) {
        let mut tx = pool.begin().await?;
        for d in batch {
            let document_id = uuid::Uuid::new_v4().to_string();
            let uploaded = DocumentUploaded {
                envelope: Envelope::originating(workspace, "rag-engine/bench"),
                document_id: document_id.clone(),
                blob_uri: format!("s3://bench-fixture/{workspace}/{d}"),
                filename: format!("fixture-{d}.txt"),
                content_type: "text/plain".into(),
                size_bytes: 0,
                sha256: String::new(),
                uploaded_by: "bench".into(),
                metadata: Default::default(),
                revision: 1,
                replaces_sha256: None,
            };
            rag_store::documents::apply_uploaded(&mut tx, &uploaded).await?;
            let mut owned: Vec<(Chunk, Option<Vec<f32>>)> = Vec::new();
            let mut offset = 0u64;
            for c in 0..CHUNKS_PER_DOCUMENT.min(chunks - d * CHUNKS_PER_DOCUMENT) {
                let seed = (first_chunk + d * CHUNKS_PER_DOCUMENT + c) as u64 + 1;
                let words = generator.chunk_words(seed, WORDS_PER_CHUNK);
                let text = generator.text(&words);
                let len = text.chars().count() as u64;
                owned.push((
                    Chunk {
                        chunk_id: rag_chunking::chunk_id(&document_id, CHUNKING_VERSION, offset, &text),
                        chunk_index: c as u32,
                        token_count: WORDS_PER_CHUNK as u32,
                        page_start: c as u32,
                        page_end: c as u32,
                        segment_start_index: c as u32,
                        segment_end_index: c as u32,
                        char_start: offset,
                        char_end: offset + len,
                        line_start: None,
                        line_end: None,
                        text,
                    },
                    generator.vector(&words, dimension),
                ));
                offset += len + 1;
            }
            let indexed: Vec<IndexedChunk<'_>> = owned
                .iter()
                .map(|(chunk, embedding)| {
                    let (terms, term_count) = rag_lexical::document_terms(&chunk.text, rag_retrieval::document_analysis(&chunk.text));
                    IndexedChunk { chunk, terms, term_count, embedding: embedding.clone() }
                })
                .collect();
            let at = chrono::Utc::now();
            rag_store::pipeline::replace_index(&mut tx, workspace, &document_id, CHUNKING_VERSION, model.map(|(m, _)| m), &indexed, at)
                .await?;
            let ingested = DocumentIngested {
                envelope: Envelope::originating(workspace, "rag-engine/bench"),
                document_id,
                chunking_version: CHUNKING_VERSION.into(),
                embedding_model: model.map(|(m, _)| m.to_string()),
                embedding_dimension: model.map(|(_, d)| d as i32),
                chunk_count: owned.len() as i32,
                failure: None,
                revision: 1,
            };
            rag_store::pipeline::apply_ingested(&mut tx, &ingested).await?;
            bar.inc(owned.len() as u64);
        }
        tx.commit().await?;
    }
    Ok(true)
}

/// Deletes every fixture workspace this command ever kept.
pub async fn drop_fixtures(pool: &PgPool) -> anyhow::Result<usize> {
    let workspaces = rag_store::operations::workspaces_with_prefix(pool, "bench-retrieval-").await?;
    for ws in &workspaces {
        eprintln!("dropping {ws}");
        rag_store::operations::delete_workspace_rows(pool, ws).await?;
    }
    Ok(workspaces.len())
}

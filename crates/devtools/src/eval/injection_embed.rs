//! The embeddings behind `rag-dev eval injection`: the in-process
//! multilingual-e5-small encoder, with an optional file cache between runs,
//! and the weights file as written (arrays of numbers on one line each).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use rag_answer::injection::classifier::ClassifierWeights;
use rag_app::config::Settings;
use rag_bert::SentenceEncoder;
use serde_json::Value;

/// The encoder with a cache of what it already embedded.
pub(super) struct Embeddings {
    encoder: SentenceEncoder,
    tag: String,
    cache: HashMap<String, Vec<f32>>,
    path: Option<PathBuf>,
    pub encoded: usize,
    pub seconds: f64,
}

impl Embeddings {
    pub fn load(dir: &Path, s: &Settings, path: Option<PathBuf>) -> anyhow::Result<Self> {
        let precision = s.embedding.embedding_precision.resolve();
        let encoder = SentenceEncoder::load_with(dir, s.embedding.embedding_threads, precision)
            .with_context(|| format!("loading the encoder in {}", dir.display()))?;
        anyhow::ensure!(encoder.name() == "multilingual-e5-small", "{} is {}, not multilingual-e5-small", dir.display(), encoder.name());
        let tag = format!("{}|{}|", encoder.name(), precision.as_str());
        let cache = match &path {
            Some(p) if p.exists() => read_cache(p)?,
            _ => HashMap::new(),
        };
        Ok(Embeddings { encoder, tag, cache, path, encoded: 0, seconds: 0.0 })
    }

    pub fn model(&self) -> &str {
        self.encoder.name()
    }

    /// One vector per sentence, of `prefix` + sentence.
    pub fn embed(&mut self, prefix: &str, sentences: &[&str], what: &str) -> anyhow::Result<Vec<Vec<f32>>> {
        let key = |s: &str| format!("{}{prefix}{s}", self.tag);
        let mut todo: Vec<&str> = sentences.iter().copied().filter(|s| !self.cache.contains_key(&key(s))).collect();
        todo.sort_unstable();
        todo.dedup();
        let start = Instant::now();
        for (k, batch) in todo.chunks(64).enumerate() {
            let texts: Vec<String> = batch.iter().map(|s| format!("{prefix}{s}")).collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let vectors = self.encoder.encode(&refs).context("embedding")?;
            for (s, v) in batch.iter().zip(vectors) {
                self.cache.insert(key(s), v);
            }
            let done = k * 64 + batch.len();
            let rate = done as f64 / start.elapsed().as_secs_f64().max(1e-9);
            eprint!("\rembedding {what} ({prefix:?}): {done}/{} ({rate:.1} sentences/s)   ", todo.len());
        }
        if !todo.is_empty() {
            eprintln!();
            self.encoded += todo.len();
            self.seconds += start.elapsed().as_secs_f64();
            if let Some(p) = &self.path {
                write_cache(p, &self.cache)?;
            }
        }
        sentences.iter().map(|s| self.cache.get(&key(s)).cloned().context("an embedding went missing")).collect()
    }
}

fn read_cache(path: &Path) -> anyhow::Result<HashMap<String, Vec<f32>>> {
    let mut bytes = vec![];
    std::fs::File::open(path)?.read_to_end(&mut bytes)?;
    let mut at = 0;
    let mut take = |n: usize| -> anyhow::Result<&[u8]> {
        let piece = bytes.get(at..at + n).context("truncated embedding cache")?;
        at += n;
        Ok(piece)
    };
    let mut cache = HashMap::new();
    let count = u32::from_le_bytes(take(4)?.try_into()?) as usize;
    for _ in 0..count {
        let len = u32::from_le_bytes(take(4)?.try_into()?) as usize;
        let key = String::from_utf8(take(len)?.to_vec())?;
        let dim = u32::from_le_bytes(take(4)?.try_into()?) as usize;
        let v = take(4 * dim)?.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        cache.insert(key, v);
    }
    Ok(cache)
}

fn write_cache(path: &Path, cache: &HashMap<String, Vec<f32>>) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).with_context(|| format!("writing {}", path.display()))?);
    out.write_all(&(cache.len() as u32).to_le_bytes())?;
    for (key, v) in cache {
        out.write_all(&(key.len() as u32).to_le_bytes())?;
        out.write_all(key.as_bytes())?;
        out.write_all(&(v.len() as u32).to_le_bytes())?;
        for x in v {
            out.write_all(&x.to_le_bytes())?;
        }
    }
    Ok(out.flush()?)
}

/// `classifier.json`'s text: indented objects, each array of numbers on
/// one line (a row of the hidden layer per line), numbers with the
/// digits of an f32.
pub(super) fn weights_text(weights: &ClassifierWeights) -> anyhow::Result<String> {
    fn write(v: &Value, indent: usize, out: &mut String) -> anyhow::Result<()> {
        let pad = " ".repeat(indent + 2);
        match v {
            Value::Object(map) => {
                out.push_str("{\n");
                for (k, (key, item)) in map.iter().enumerate() {
                    out.push_str(&format!("{pad}{}: ", serde_json::to_string(key)?));
                    write(item, indent + 2, out)?;
                    out.push_str(if k + 1 < map.len() { ",\n" } else { "\n" });
                }
                out.push_str(&format!("{}}}", " ".repeat(indent)));
            }
            Value::Array(items) if items.iter().any(|i| i.is_array() || i.is_object()) => {
                out.push_str("[\n");
                for (k, item) in items.iter().enumerate() {
                    out.push_str(&pad);
                    write(item, indent + 2, out)?;
                    out.push_str(if k + 1 < items.len() { ",\n" } else { "\n" });
                }
                out.push_str(&format!("{}]", " ".repeat(indent)));
            }
            // Weights are f32: their shortest form, not the f64 digits.
            Value::Number(n) if n.is_f64() => out.push_str(&format!("{}", n.as_f64().unwrap_or(0.0) as f32)),
            other => out.push_str(&serde_json::to_string(other)?),
        }
        Ok(())
    }
    let mut out = String::new();
    write(&serde_json::to_value(weights)?, 0, &mut out)?;
    out.push('\n');
    Ok(out)
}

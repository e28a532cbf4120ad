//! The pipeline's components built from the setting groups: parse limits,
//! OCR, chunking, the embedder, retrieval and the answer LLM.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};

use anyhow::Context;

use super::{
    AnswerSettings, EmbedderChoice, EmbeddingSettings, LexicalIndexChoice, OcrChoice, ParseSettings, ParserIsolationChoice,
    RetrievalSettings, RetryPolicy, Settings,
};

impl Settings {
    /// The embedder, retrying as the stages do.
    pub fn embedder(&self) -> anyhow::Result<rag_embed::Embedder> {
        self.embedding.embedder(self.stages.retry())
    }

    /// The retriever (lexical + the configured embedder, fused).
    pub fn retriever(&self, pool: rag_store::sqlx::PgPool) -> anyhow::Result<rag_search::retriever::Retriever> {
        self.retrieval.retriever_with(&self.embedding, pool, self.embedder()?)
    }

    /// The answer LLM, retrying as the stages do.
    pub fn answer_llm(&self) -> anyhow::Result<Option<rag_answer::llm::ChatClient>> {
        self.answers.answer_llm(self.stages.retry())
    }

    /// Full names of the consumer groups of every stage of this deployment.
    pub fn pipeline_groups(&self) -> anyhow::Result<Vec<String>> {
        let bus = self.bus();
        Ok(rag_stages::pipeline(&self.parsing.chunking_profile()?).iter().map(|stage| bus.group_of(&stage.group)).collect())
    }
}

impl ParseSettings {
    pub fn parse_limits(&self) -> rag_docparse::Limits {
        rag_docparse::Limits {
            max_bytes: self.parse_max_bytes,
            max_segment_chars: self.segment_max_chars,
            max_pages: self.parse_max_pages,
            max_sheet_cells: self.parse_max_sheet_cells,
            max_image_pixels: self.parse_max_image_pixels,
            max_output_ratio: self.parse_max_output_ratio,
            ocr_max_pages: self.ocr_max_pages,
            ocr_budget_secs: self.ocr_budget_secs,
            ..rag_docparse::Limits::default()
        }
    }

    /// The parse workers, or None with `PARSER_ISOLATION=none`.
    pub fn parse_workers(&self) -> anyhow::Result<Option<rag_stages::parse_worker::ParseWorkers>> {
        if self.parser_isolation == ParserIsolationChoice::None {
            tracing::warn!("PARSER_ISOLATION=none: documents are parsed in this process; a hostile upload can take it down");
            return Ok(None);
        }
        let exe = match &self.parser_worker_exe {
            Some(exe) => exe.clone(),
            None => std::env::current_exe().context("finding this executable to start parse workers (or set PARSER_WORKER_EXE)")?,
        };
        let limits = rag_stages::parse_worker::WorkerLimits {
            memory_bytes: self.parser_memory_mb.max(64) << 20,
            timeout: Duration::from_secs(self.parser_timeout_secs.max(1)),
            concurrency: self.parser_workers.max(1),
        };
        Ok(Some(rag_stages::parse_worker::ParseWorkers::new(exe, limits)))
    }

    /// The OCR engine, or None (with the reason logged) when off or missing.
    pub fn ocr(&self) -> Option<std::sync::Arc<rag_stages::ocr::TesseractOcr>> {
        if self.ocr == OcrChoice::Off {
            tracing::info!("OCR is off: PDF pages without a text layer are marked as having no text");
            return None;
        }
        match rag_stages::ocr::TesseractOcr::detect(&self.ocr_languages, self.ocr_dpi, Duration::from_secs(self.ocr_timeout_secs.max(1))) {
            Ok(ocr) => {
                tracing::info!(languages = ocr.languages(), "OCR available for PDF pages without a text layer");
                Some(std::sync::Arc::new(ocr))
            }
            Err(why) => {
                tracing::warn!(reason = %why, "OCR unavailable: PDF pages without a text layer are marked as having no text");
                None
            }
        }
    }

    pub fn chunking_profile(&self) -> anyhow::Result<rag_chunking::ChunkingProfile> {
        rag_chunking::profile(&self.chunking_profile).ok_or_else(|| {
            let known: Vec<String> = rag_chunking::profiles().iter().map(|p| p.id()).collect();
            anyhow::anyhow!("unknown CHUNKING_PROFILE {:?}; known: {}", self.chunking_profile, known.join(", "))
        })
    }
}

impl EmbeddingSettings {
    /// The token counter of the embedding model, or a word counter (with a
    /// warning) when no model directory is configured.
    pub fn token_counter(&self) -> anyhow::Result<std::sync::Arc<dyn rag_chunking::TokenCounter>> {
        let Some(dir) = self.model_dir() else {
            tracing::warn!("EMBEDDING_MODEL_DIR is not set: chunk budgets are counted in words, not word pieces");
            return Ok(std::sync::Arc::new(rag_chunking::WordCounter));
        };
        if rag_bert::is_packed_model_dir(dir) {
            return Ok(std::sync::Arc::new(E5PieceCounter(rag_bert::PieceCounter::load(dir)?)));
        }
        Ok(std::sync::Arc::new(rag_chunking::WordPieceCounter::from_file(&dir.join("tokenizer.json"))?))
    }

    /// What `EMBEDDER` means here: `auto` resolved against
    /// EMBEDDING_MODEL_DIR.
    pub fn embedder_choice(&self) -> EmbedderChoice {
        match self.embedder {
            EmbedderChoice::Auto if self.model_dir().is_none() => EmbedderChoice::None,
            EmbedderChoice::Auto => EmbedderChoice::Local,
            chosen => chosen,
        }
    }

    /// The configured embedder; a remote one retries as `retry` says.
    pub fn embedder(&self, retry: RetryPolicy) -> anyhow::Result<rag_embed::Embedder> {
        if self.embedder == EmbedderChoice::Auto && self.model_dir().is_none() {
            tracing::warn!(
                "no embedding model (EMBEDDING_MODEL_DIR is not set): lexical search only; scripts/stack up installs multilingual-e5-small and sets it in .local/env"
            );
        }
        match self.embedder_choice() {
            EmbedderChoice::Openai => {
                // Unset and set to the empty string (or 0) alike are missing.
                let base_url = self.embedding_base_url.as_deref().filter(|v| !v.trim().is_empty());
                let model = self.embedding_model.as_deref().filter(|v| !v.trim().is_empty());
                let dimension = self.embedding_dimension.filter(|d| *d > 0);
                let (Some(base_url), Some(model), Some(dimension)) = (base_url, model, dimension) else {
                    let missing: Vec<&str> = [
                        ("EMBEDDING_BASE_URL", base_url.is_none()),
                        ("EMBEDDING_MODEL", model.is_none()),
                        ("EMBEDDING_DIMENSION", dimension.is_none()),
                    ]
                    .into_iter()
                    .filter_map(|(name, miss)| miss.then_some(name))
                    .collect();
                    anyhow::bail!("EMBEDDER=openai needs {}", missing.join(", "));
                };
                let embedder = rag_embed::Embedder::openai(
                    rag_embed::OpenAiConfig {
                        base_url: base_url.to_string(),
                        model: model.to_string(),
                        api_key: self.embedding_api_key.clone().unwrap_or_else(|| SecretString::from(String::new())),
                        dimension,
                        batch_size: self.embedding_batch_size.max(1),
                        timeout: Duration::from_secs(self.embedding_timeout_secs.max(1)),
                        max_retries: retry.max_retries,
                        retry_backoff: retry.backoff,
                    },
                    self.embedding_input_convention.resolve(false),
                )?;
                Ok(embedder)
            }
            EmbedderChoice::Local => {
                let Some(dir) = self.model_dir() else {
                    anyhow::bail!("EMBEDDER=local needs EMBEDDING_MODEL_DIR (a sentence-transformers model directory)");
                };
                let precision = self.embedding_precision.resolve();
                let e5 = rag_bert::is_packed_model_dir(dir);
                let convention = self.embedding_input_convention.resolve(e5);
                if e5 && convention == rag_embed::InputConvention::None {
                    tracing::warn!("EMBEDDING_INPUT_CONVENTION=none with multilingual-e5: it was trained with `query: ` / `passage: ` prefixes (auto or prefix)");
                }
                let embedder = rag_embed::Embedder::local(dir, self.embedding_threads, precision, convention)?;
                if !embedder.is_accelerated() {
                    tracing::warn!(
                        "EMBEDDING_PRECISION=int8 on a CPU without AVX-512 VNNI: the portable integer kernel is slower than fp32"
                    );
                }
                if let Some((model, dimension)) = embedder.identity() {
                    tracing::info!(model, dimension, precision = precision.as_str(), "in-process embedder loaded");
                }
                Ok(embedder)
            }
            EmbedderChoice::None | EmbedderChoice::Auto => Ok(rag_embed::Embedder::none()),
        }
    }
}

impl RetrievalSettings {
    /// The retriever over an already loaded embedder.
    pub fn retriever_with(
        &self,
        embedding: &EmbeddingSettings,
        pool: rag_store::sqlx::PgPool,
        embedder: rag_embed::Embedder,
    ) -> anyhow::Result<rag_search::retriever::Retriever> {
        let languages = match embedding.embedding_languages.as_str() {
            "auto" => match &embedder {
                e if e.is_local() && !e.is_multilingual() => rag_retrieval::EmbedderLanguages::Only(vec![rag_retrieval::Language::En]),
                _ => rag_retrieval::EmbedderLanguages::All,
            },
            spec => rag_retrieval::EmbedderLanguages::parse(spec).map_err(|e| anyhow::anyhow!("EMBEDDING_LANGUAGES: {e}"))?,
        };
        Ok(rag_search::retriever::Retriever {
            pool: pool.clone(),
            embedder,
            languages,
            bm25: rag_store::search::Bm25 { k1: self.bm25_k1, b: self.bm25_b },
            candidates: self.retrieval_candidates.max(1),
            dense_weight: self.retrieval_dense_weight,
            reranker: self.reranker()?,
            rerank_candidates: self.rerank_candidates.max(1),
            restore_diacritics: self.retrieval_restore_diacritics,
            search_index: match self.lexical_index {
                LexicalIndexChoice::Memory => Some(std::sync::Arc::new(rag_search::search_index::SearchIndexes::new(
                    pool,
                    self.search_index_max_postings,
                    self.dense_in_memory_max_chunks,
                ))),
                LexicalIndexChoice::Postgres => None,
            },
        })
    }

    /// The reranker when RERANK_BASE_URL is set (with RERANK_MODEL).
    pub fn reranker(&self) -> anyhow::Result<Option<rag_embed::Reranker>> {
        let base_url = self.rerank_base_url.as_deref().map(str::trim).filter(|u| !u.is_empty());
        let model = self.rerank_model.as_deref().map(str::trim).filter(|m| !m.is_empty());
        match (base_url, model) {
            (None, None) => Ok(None),
            (Some(base_url), Some(model)) => {
                let reranker = rag_embed::Reranker::new(rag_embed::RerankConfig {
                    base_url: base_url.to_string(),
                    model: model.to_string(),
                    api_key: self.rerank_api_key.clone().filter(|k| !k.expose_secret().is_empty()),
                    timeout: Duration::from_millis(self.rerank_timeout_ms.max(1)),
                })?;
                tracing::info!(model, "reranker configured");
                Ok(Some(reranker))
            }
            _ => anyhow::bail!("the reranker needs RERANK_BASE_URL and RERANK_MODEL together"),
        }
    }
}

impl AnswerSettings {
    /// The answer LLM when ANSWER_LLM_BASE_URL, _MODEL and _API_KEY are all set.
    pub fn answer_llm(&self, retry: RetryPolicy) -> anyhow::Result<Option<rag_answer::llm::ChatClient>> {
        // clap refuses one or two of the three (`requires_all`); a variable
        // set to the empty string counts as unset, as it always has.
        let base_url = self.answer_llm_base_url.as_ref().filter(|v| !v.trim().is_empty());
        let model = self.answer_llm_model.as_ref().filter(|v| !v.trim().is_empty());
        let api_key = self.answer_llm_api_key.as_ref().filter(|v| !v.expose_secret().is_empty());
        let (base_url, model, api_key) = match (base_url, model, api_key) {
            (Some(base_url), Some(model), Some(api_key)) => (base_url, model, api_key),
            (None, None, None) => {
                tracing::info!("no answer LLM configured: answers are extractive");
                return Ok(None);
            }
            _ => anyhow::bail!("the answer LLM needs ANSWER_LLM_BASE_URL, ANSWER_LLM_MODEL and ANSWER_LLM_API_KEY together"),
        };
        let client = rag_answer::llm::ChatClient::new(rag_answer::llm::ChatConfig {
            base_url: base_url.clone(),
            model: model.clone(),
            api_key: api_key.clone(),
            max_tokens: (self.answer_llm_max_tokens > 0).then_some(self.answer_llm_max_tokens),
            temperature: Some(self.answer_llm_temperature),
            timeout: Duration::from_secs(self.answer_llm_timeout_secs.max(1)),
            max_retries: retry.max_retries,
            retry_backoff: retry.backoff,
            seed: Some(self.answer_llm_seed),
            cache_prompt: self.answer_llm_cache_prompt,
            prefill: self.answer_llm_prefill,
            stream: self.answer_llm_stream,
        })?;
        tracing::info!(model = %model, "answer LLM configured");
        Ok(Some(client))
    }

    /// Characters of evidence an answer's prompt may hold:
    /// `ANSWER_EVIDENCE_TOKENS`, and never more than what `RAG_LLM_CONTEXT`
    /// leaves after the answer's tokens and about 700 tokens of
    /// instructions, history and question. A token is taken as 3
    /// characters (Vietnamese runs near 2.5 with Qwen's tokenizer, English
    /// near 4): a budget, not an exact count.
    pub fn evidence_chars(&self) -> usize {
        let room = self.rag_llm_context.saturating_sub(self.answer_llm_max_tokens).saturating_sub(700);
        (self.answer_evidence_tokens.min(room) as usize) * 3
    }

    pub fn answer_fallback(&self) -> rag_answer::LlmFallback {
        self.answer_llm_fallback.into()
    }

    /// The decision's threshold per form: the shipped defaults, then
    /// `ANSWER_ABSTAIN_THRESHOLD` for every form, then
    /// `ANSWER_ABSTAIN_THRESHOLD_CROSS_LANGUAGE` for envi and vien, then
    /// the forms `ANSWER_ABSTAIN_THRESHOLDS` names.
    pub fn abstain_thresholds(&self) -> anyhow::Result<rag_answer::decision::FormThresholds> {
        use rag_answer::decision::QuestionForm;
        let mut t =
            self.answer_abstain_threshold.map_or(rag_answer::decision::DEFAULT_THRESHOLDS, rag_answer::decision::FormThresholds::uniform);
        if let Some(cross) = self.answer_abstain_threshold_cross_language {
            t.set(QuestionForm::EnVi, cross);
            t.set(QuestionForm::ViEn, cross);
        }
        t.apply(&self.answer_abstain_thresholds).map_err(|e| anyhow::anyhow!("ANSWER_ABSTAIN_THRESHOLDS: {e}"))?;
        Ok(t)
    }
}

/// Chunk budgets in multilingual-e5's own pieces.
struct E5PieceCounter(rag_bert::PieceCounter);

impl rag_chunking::TokenCounter for E5PieceCounter {
    fn count(&self, text: &str) -> usize {
        // The unigram search has a piece or <unk> for every character, so
        // it does not fail on text; a word count is the safe side if it did.
        self.0.count(text).unwrap_or_else(|_| text.split_whitespace().count())
    }
}

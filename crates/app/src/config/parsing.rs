//! The parser stage (limits, isolation, OCR) and the chunker.

use clap::Args;

use super::{OcrChoice, ParserIsolationChoice};

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Parsing and chunking (environment variable, default)")]
pub struct ParseSettings {
    /// Largest document the parser reads, in bytes (bigger ones fail with `too_large`).
    #[arg(long, env = "PARSE_MAX_BYTES", global = true, default_value_t = 100 * 1024 * 1024)]
    pub parse_max_bytes: u64,
    /// Most pages of a document (more fail with `too_many_pages`).
    #[arg(long, env = "PARSE_MAX_PAGES", global = true, default_value_t = 2_000)]
    pub parse_max_pages: u32,
    /// Most non-empty cells of one spreadsheet sheet (XLSX, XLS, ODS, CSV, TSV); a larger sheet fails with `too_many_cells`.
    #[arg(long, env = "PARSE_MAX_SHEET_CELLS", global = true, default_value_t = 1_000_000)]
    pub parse_max_sheet_cells: u64,
    /// Most pixels of one image (one page of a TIFF), read from its header before anything is decoded; a larger one (a decompression bomb, say a 20,000 × 20,000 PNG) fails with `image_too_large`.
    #[arg(long, env = "PARSE_MAX_IMAGE_PIXELS", global = true, default_value_t = 50_000_000)]
    pub parse_max_image_pixels: u64,
    /// Text a document may produce, as a multiple of its size in bytes (and at least 4 Mi characters); more fails with `output_too_large`.
    #[arg(long, env = "PARSE_MAX_OUTPUT_RATIO", global = true, default_value_t = 16)]
    pub parse_max_output_ratio: u64,
    /// Where documents are parsed: `process` (a child process per document with memory and time limits: a hostile upload cannot take the service down) or `none` (in this process; only for trusted input).
    #[arg(long, env = "PARSER_ISOLATION", global = true, default_value = "process")]
    pub parser_isolation: ParserIsolationChoice,
    /// Address space of one parse worker (and of each OCR program it runs), in MiB; over it the document fails with `out_of_memory`.
    #[arg(long, env = "PARSER_MEMORY_MB", global = true, default_value_t = 2048)]
    pub parser_memory_mb: u64,
    /// Wall-clock time to parse one document, OCR included, in seconds; over it the document fails with `parser_timeout`.
    #[arg(long, env = "PARSER_TIMEOUT_SECS", global = true, default_value_t = 600)]
    pub parser_timeout_secs: u64,
    /// Parse workers running at once in this process.
    #[arg(long, env = "PARSER_WORKERS", global = true, default_value_t = 2)]
    pub parser_workers: usize,
    /// Executable started as the parse worker. Unset: this executable.
    #[arg(long, env = "PARSER_WORKER_EXE", global = true)]
    pub parser_worker_exe: Option<std::path::PathBuf>,
    /// Tries of a document whose parser dies before it fails with `parser_crashed` and is dead-lettered (counted in Postgres, across restarts).
    #[arg(long, env = "PARSER_MAX_ATTEMPTS", global = true, default_value_t = 2)]
    pub parser_max_attempts: u32,
    /// Longest segment in characters; longer paragraphs split at sentence boundaries.
    #[arg(long, env = "SEGMENT_MAX_CHARS", global = true, default_value_t = 600)]
    pub segment_max_chars: usize,
    /// Chunking profile `name@version` the chunker runs (shipped: default@1, fine@1).
    #[arg(long, env = "CHUNKING_PROFILE", global = true, default_value = "default@1")]
    pub chunking_profile: String,
    /// OCR of PDF pages without a text layer and of images (PNG, JPEG, TIFF, WebP): `auto` (tesseract + pdftoppm when installed) or `off`.
    #[arg(long, env = "OCR", global = true, default_value = "auto")]
    pub ocr: OcrChoice,
    /// Tesseract languages, `+`-separated (narrowed to those installed).
    #[arg(long, env = "OCR_LANGUAGES", global = true, default_value = "vie+eng")]
    pub ocr_languages: String,
    /// Rendering resolution of a page for OCR, in dots per inch.
    #[arg(long, env = "OCR_DPI", global = true, default_value_t = 300)]
    pub ocr_dpi: u32,
    /// Deadline for the OCR of one page, in seconds.
    #[arg(long, env = "OCR_TIMEOUT_SECS", global = true, default_value_t = 120)]
    pub ocr_timeout_secs: u64,
    /// Pages of one document read by OCR at most; later pages stay without text.
    #[arg(long, env = "OCR_MAX_PAGES", global = true, default_value_t = 100)]
    pub ocr_max_pages: u32,
    /// OCR time of one document, all pages together, in seconds; pages after it stay without text.
    #[arg(long, env = "OCR_BUDGET_SECS", global = true, default_value_t = 300)]
    pub ocr_budget_secs: u64,
}

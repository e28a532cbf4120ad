//! The parser's failures, each with its stable code.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("the file is empty")]
    Empty,
    #[error("unsupported content type {content_type:?} ({filename})")]
    UnsupportedContentType { content_type: String, filename: String },
    #[error("the file is {size} bytes, over the limit of {limit}")]
    TooLarge { size: u64, limit: u64 },
    #[error("the text is not valid UTF-8 (first bad byte at {0})")]
    InvalidUtf8(usize),
    #[error("corrupt PDF: {0}")]
    CorruptPdf(String),
    #[error("the PDF is encrypted and cannot be read without a password")]
    EncryptedPdf,
    #[error("corrupt DOCX: {0}")]
    CorruptDocx(String),
    #[error("corrupt presentation: {0}")]
    CorruptPresentation(String),
    #[error("the presentation is password-protected (encrypted) and cannot be read without its password")]
    EncryptedPresentation,
    #[error("decompression bomb: {0}")]
    DecompressionBomb(String),
    #[error("invalid Document AI JSON: {0}")]
    InvalidDocAi(String),
    #[error("no text could be extracted ({0})")]
    NoText(String),
    #[error("the document has {pages} pages, over the limit of {limit}")]
    TooManyPages { pages: u64, limit: u32 },
    #[error("the document expands to more than {limit} characters of text, out of proportion to its size")]
    OutputTooLarge { limit: u64 },
    #[error("corrupt spreadsheet: {0}")]
    CorruptSpreadsheet(String),
    #[error("the workbook is password-protected (encrypted) and cannot be read without its password")]
    EncryptedSpreadsheet,
    #[error("sheet {sheet:?} has {cells} or more non-empty cells, over the limit of {limit} (PARSE_MAX_SHEET_CELLS)")]
    TooManyCells { sheet: String, cells: u64, limit: u64 },
    #[error("corrupt image: {0}")]
    CorruptImage(String),
    #[error("page {page} of the image is {width} × {height} pixels, over the limit of {limit} pixels (PARSE_MAX_IMAGE_PIXELS): refused before decoding (a decompression bomb is a small file of a huge image)")]
    ImageTooLarge { page: u32, width: u32, height: u32, limit: u64 },
    #[error("page {page} of the image ({width} × {height} pixels of {color}) decodes to {bytes} bytes, over the limit of {limit} bytes (4 bytes a pixel of PARSE_MAX_IMAGE_PIXELS): refused before decoding")]
    ImageTooDeep { page: u32, width: u32, height: u32, color: String, bytes: u64, limit: u64 },
}

impl ParseError {
    /// Stable machine-readable code, carried in DocumentParsed.failure.
    pub fn code(&self) -> &'static str {
        match self {
            ParseError::Empty => "empty_file",
            ParseError::UnsupportedContentType { .. } => "unsupported_content_type",
            ParseError::TooLarge { .. } => "too_large",
            ParseError::InvalidUtf8(_) => "invalid_utf8",
            ParseError::CorruptPdf(_) => "corrupt_pdf",
            ParseError::EncryptedPdf => "encrypted_pdf",
            ParseError::CorruptDocx(_) => "corrupt_docx",
            ParseError::CorruptPresentation(_) => "corrupt_presentation",
            ParseError::EncryptedPresentation => "encrypted_presentation",
            ParseError::DecompressionBomb(_) => "decompression_bomb",
            ParseError::InvalidDocAi(_) => "invalid_docai",
            ParseError::NoText(_) => "no_text",
            ParseError::TooManyPages { .. } => "too_many_pages",
            ParseError::OutputTooLarge { .. } => "output_too_large",
            ParseError::CorruptSpreadsheet(_) => "corrupt_spreadsheet",
            ParseError::EncryptedSpreadsheet => "encrypted_spreadsheet",
            ParseError::TooManyCells { .. } => "too_many_cells",
            ParseError::CorruptImage(_) => "corrupt_image",
            ParseError::ImageTooLarge { .. } | ParseError::ImageTooDeep { .. } => "image_too_large",
        }
    }
}

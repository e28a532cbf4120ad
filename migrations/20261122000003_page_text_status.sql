-- DocumentParsed v2: which pages were read by OCR and which have no text.
ALTER TABLE documents
    ADD COLUMN pages_without_text INTEGER[] NOT NULL DEFAULT '{}',
    ADD COLUMN ocr_pages          INTEGER[] NOT NULL DEFAULT '{}';

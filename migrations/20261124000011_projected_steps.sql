-- Which success events of a document are projected: bit 0 DocumentUploaded,
-- 1 DocumentParsed, 2 DocumentChunked, 3 DocumentIngested. The four are on
-- four topics, projected side by side, so a later one can land first (the
-- ingest outran the projection of its DocumentParsed by 0.1 s in a test).
-- A success status now only shows once every step before it is projected:
-- `ingested` means the filename, pages, segments and mappings are there.
ALTER TABLE documents ADD COLUMN projected_steps SMALLINT NOT NULL DEFAULT 0;
UPDATE documents d SET projected_steps =
      (CASE WHEN d.uploaded_at IS NOT NULL THEN 1 ELSE 0 END)
    | (CASE WHEN d.page_count IS NOT NULL THEN 2 ELSE 0 END)
    | (CASE WHEN EXISTS (SELECT 1 FROM document_versions v WHERE v.document_id = d.id) THEN 4 ELSE 0 END)
    | (CASE WHEN d.active_chunking_version IS NOT NULL THEN 8 ELSE 0 END);

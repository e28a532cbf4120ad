-- When a revision stopped being what search reads (the time of the
-- ingestion that superseded it): retention drops the text of superseded
-- revisions no answer cites, some time after (REVISION_RETENTION).
ALTER TABLE document_revisions ADD COLUMN superseded_at TIMESTAMPTZ;
UPDATE document_revisions r SET superseded_at = d.updated_at
FROM documents d WHERE d.id = r.document_id AND d.revision IS NOT NULL AND r.revision < d.revision;

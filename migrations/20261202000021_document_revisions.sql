-- Revisions (issue 60): a document keeps its id when its bytes change. Each
-- revision is parsed, chunked and indexed beside the one before; search
-- switches to the newest ingested revision in one step (its chunks are
-- stored under their own index version, `rag_model::index_version`), and a
-- citation names the revision it quoted, whose segments stay.

-- The revision search reads (set when a revision is ingested) and the
-- newest revision seen; the status shown is the newest revision's.
ALTER TABLE documents ADD COLUMN revision INTEGER;
ALTER TABLE documents ADD COLUMN latest_revision INTEGER NOT NULL DEFAULT 1;
UPDATE documents SET revision = 1 WHERE active_chunking_version IS NOT NULL;

ALTER TABLE segments ADD COLUMN revision INTEGER NOT NULL DEFAULT 1;
ALTER TABLE segments DROP CONSTRAINT segments_pkey;
ALTER TABLE segments ADD PRIMARY KEY (document_id, revision, segment_index);

-- A version's revision orders it before its chunking time: a replay that
-- re-chunks an old revision after the newest never makes it searchable.
ALTER TABLE document_versions ADD COLUMN revision INTEGER NOT NULL DEFAULT 1;

-- What each revision was: its upload and the parse facts a citation into
-- it needs (its pages' sizes for the boxes).
CREATE TABLE document_revisions (
    document_id   UUID    NOT NULL,
    revision      INTEGER NOT NULL,
    workspace_id  TEXT    NOT NULL,
    filename      TEXT,
    content_type  TEXT,
    size_bytes    BIGINT,
    sha256        TEXT,
    blob_uri      TEXT,
    uploaded_at   TIMESTAMPTZ,
    page_count    INTEGER,
    char_count    BIGINT,
    line_count    BIGINT,
    full_text_uri TEXT,
    pages         JSONB NOT NULL DEFAULT '[]'::jsonb,
    PRIMARY KEY (document_id, revision)
);

INSERT INTO document_revisions (document_id, revision, workspace_id, filename, content_type, size_bytes, sha256,
                                blob_uri, uploaded_at, page_count, char_count, line_count, full_text_uri, pages)
SELECT id, 1, workspace_id, filename, content_type, size_bytes, sha256, blob_uri, uploaded_at, page_count,
       char_count, line_count, full_text_uri, pages
FROM documents WHERE status <> 'deleted';

-- The upload door's allocation of revision numbers: two changes uploaded
-- before the first is projected still get two numbers. Not a read model
-- (a rebuild keeps it); a number is never handed out twice.
CREATE TABLE revision_allocations (
    document_id   UUID    PRIMARY KEY,
    last_revision INTEGER NOT NULL
);

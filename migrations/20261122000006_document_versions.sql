-- Each chunking version of a document and when it was chunked (the time
-- of its DocumentChunked event). A DocumentIngested flips the document to
-- its version only if no later-chunked version is active, and removes the
-- versions chunked before it: the outcome depends on event times, not on
-- the order the projection reads topics in (a rebuild reads them in phases).
CREATE TABLE document_versions (
    document_id      UUID        NOT NULL,
    workspace_id     TEXT        NOT NULL,
    chunking_version TEXT        NOT NULL,
    chunked_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (document_id, chunking_version)
);

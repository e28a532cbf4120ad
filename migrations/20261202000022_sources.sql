-- Sources (issue 60): a workspace follows a folder or an S3 prefix. Its
-- files become documents, a changed file a new revision of its document, a
-- removed file a DocumentDeleted. Operator state, not a read model (a
-- rebuild keeps it): what each source has seen is its checkpoint, so a
-- sync killed at any moment and run again announces nothing twice (event
-- ids are derived from the source, the key and the content hash) and
-- misses no change.
CREATE TABLE sources (
    id                UUID PRIMARY KEY,
    workspace_id      TEXT        NOT NULL,
    kind              TEXT        NOT NULL CHECK (kind IN ('folder', 's3')),
    -- A folder's absolute path, or s3://bucket/prefix.
    location          TEXT        NOT NULL,
    created_by        TEXT        NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    sync_started_at   TIMESTAMPTZ,
    sync_completed_at TIMESTAMPTZ,
    last_error        TEXT,
    -- The last complete sync's counts.
    files_seen        INTEGER     NOT NULL DEFAULT 0,
    files_added       INTEGER     NOT NULL DEFAULT 0,
    files_changed     INTEGER     NOT NULL DEFAULT 0,
    files_removed     INTEGER     NOT NULL DEFAULT 0,
    files_failed      INTEGER     NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX sources_location ON sources (workspace_id, kind, location);

-- One row per file a source has listed.
CREATE TABLE source_files (
    source_id       UUID        NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    key             TEXT        NOT NULL,
    -- Bumped when the file is removed: a file added again under the same
    -- key is a new document (a deleted one stays deleted).
    generation      INTEGER     NOT NULL DEFAULT 0,
    document_id     UUID        NOT NULL,
    -- What the listing said (an ETag, or a file's size and mtime): the
    -- same listing again is not fetched.
    listed_version  TEXT,
    size_bytes      BIGINT,
    -- The content announced, and its revision (0: none yet).
    sha256          TEXT,
    revision        INTEGER     NOT NULL DEFAULT 0,
    -- About to be announced: written before the event is produced, so a
    -- sync killed in between announces the same revision again.
    pending_sha256  TEXT,
    pending_revision INTEGER,
    state           TEXT        NOT NULL CHECK (state IN ('present', 'removed', 'failed')),
    failure         TEXT,
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (source_id, key)
);

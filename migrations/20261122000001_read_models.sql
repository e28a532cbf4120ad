-- Read models of rag-engine. Every table can be rebuilt by replaying the
-- topics; the projector and the indexer are their only writers.

CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- Kafka offsets owned by Postgres: a Kafka -> Postgres stage writes its rows
-- and advances next_offset in one transaction (compare-and-set), so a crash
-- never loses or doubles a row.
CREATE TABLE consumer_offsets (
    consumer_group TEXT    NOT NULL,
    topic          TEXT    NOT NULL,
    partition      INTEGER NOT NULL,
    next_offset    BIGINT  NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, topic, partition)
);

-- Status lifecycle: uploaded -> parsed -> chunked -> ingested, or failed.
-- status_rank makes the lifecycle monotonic: a late, earlier event never
-- moves a document back.
CREATE TABLE documents (
    id                      UUID PRIMARY KEY,
    workspace_id            TEXT NOT NULL,
    filename                TEXT,
    content_type            TEXT,
    size_bytes              BIGINT,
    sha256                  TEXT,
    blob_uri                TEXT,
    uploaded_by             TEXT,
    metadata                JSONB NOT NULL DEFAULT '{}'::jsonb,
    status                  TEXT NOT NULL CHECK (status IN ('uploaded', 'parsed', 'chunked', 'ingested', 'failed', 'deleted')),
    status_rank             SMALLINT NOT NULL,
    failure_code            TEXT,
    failure_reason          TEXT,
    parser                  TEXT,
    page_count              INTEGER,
    segment_count           INTEGER,
    char_count              BIGINT,
    full_text_uri           TEXT,
    segments_uri            TEXT,
    active_chunking_version TEXT,
    chunk_count             INTEGER,
    embedding_model         TEXT,
    embedding_dimension     INTEGER,
    correlation_id          TEXT,
    uploaded_at             TIMESTAMPTZ,
    updated_at              TIMESTAMPTZ NOT NULL,
    deleted_at              TIMESTAMPTZ
);
CREATE INDEX documents_workspace ON documents (workspace_id, uploaded_at DESC);

-- The raw-text viewer: segments tile the document's full text exactly.
-- Offsets count Unicode scalar values.
CREATE TABLE segments (
    document_id   UUID    NOT NULL,
    segment_index INTEGER NOT NULL,
    workspace_id  TEXT    NOT NULL,
    page_idx      INTEGER NOT NULL,
    char_start    BIGINT  NOT NULL,
    char_end      BIGINT  NOT NULL,
    text          TEXT    NOT NULL,
    PRIMARY KEY (document_id, segment_index)
);

-- Where each chunk comes from (seed 002), per chunking version.
CREATE TABLE chunk_mappings (
    chunk_id            TEXT PRIMARY KEY,
    document_id         UUID    NOT NULL,
    workspace_id        TEXT    NOT NULL,
    chunking_version    TEXT    NOT NULL,
    chunk_index         INTEGER NOT NULL,
    page_start          INTEGER NOT NULL,
    page_end            INTEGER NOT NULL,
    segment_start_index INTEGER NOT NULL,
    segment_end_index   INTEGER NOT NULL,
    char_start          BIGINT  NOT NULL,
    char_end            BIGINT  NOT NULL
);
CREATE INDEX chunk_mappings_document ON chunk_mappings (document_id, chunking_version, chunk_index);

-- The search index; the indexer is its sole writer. Vectors of different
-- models never mix: embedding_model is part of the index identity, and
-- each (model, dimension) gets its own partial HNSW index when first used.
CREATE TABLE search_chunks (
    chunk_id            TEXT PRIMARY KEY,
    workspace_id        TEXT    NOT NULL,
    document_id         UUID    NOT NULL,
    chunking_version    TEXT    NOT NULL,
    chunk_index         INTEGER NOT NULL,
    content             TEXT    NOT NULL,
    lexical             TSVECTOR,
    embedding_model     TEXT,
    embedding_dimension INTEGER,
    embedding           VECTOR,
    indexed_at          TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX search_chunks_scope ON search_chunks (workspace_id, document_id, chunking_version);
CREATE INDEX search_chunks_lexical ON search_chunks USING GIN (lexical);

CREATE TABLE conversations (
    id           UUID PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    title        TEXT,
    created_by   TEXT,
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX conversations_workspace ON conversations (workspace_id, created_at DESC);

CREATE TABLE messages (
    id              UUID PRIMARY KEY,
    conversation_id UUID NOT NULL,
    workspace_id    TEXT NOT NULL,
    role            TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content         TEXT NOT NULL DEFAULT '',
    status          TEXT NOT NULL CHECK (status IN ('pending', 'done', 'failed')),
    metadata        JSONB NOT NULL DEFAULT '{}'::jsonb,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX messages_conversation ON messages (conversation_id, created_at);

-- BM25 needs term frequencies, chunk lengths and document frequencies per
-- workspace: an inverted index in Postgres, written by the indexer from the
-- terms rag-lexical produces (no stemming; diacritics kept, plus folded
-- '~' variants). Replaces the tsvector column, whose 'simple' parser cannot
-- give BM25 statistics.
DROP INDEX IF EXISTS search_chunks_lexical;
ALTER TABLE search_chunks DROP COLUMN IF EXISTS lexical;
ALTER TABLE search_chunks ADD COLUMN term_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE search_chunks ADD COLUMN page_start INTEGER NOT NULL DEFAULT 0;
ALTER TABLE search_chunks ADD COLUMN page_end INTEGER NOT NULL DEFAULT 0;
ALTER TABLE search_chunks ADD COLUMN char_start BIGINT NOT NULL DEFAULT 0;
ALTER TABLE search_chunks ADD COLUMN char_end BIGINT NOT NULL DEFAULT 0;

CREATE TABLE search_terms (
    chunk_id     TEXT    NOT NULL REFERENCES search_chunks (chunk_id) ON DELETE CASCADE,
    workspace_id TEXT    NOT NULL,
    term         TEXT    NOT NULL,
    tf           INTEGER NOT NULL,
    PRIMARY KEY (chunk_id, term)
);
CREATE INDEX search_terms_lookup ON search_terms (workspace_id, term);

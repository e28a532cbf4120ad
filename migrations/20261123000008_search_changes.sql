-- Which documents' searchable chunks changed, and in which transaction, so
-- a process that keeps a workspace's lexical index in memory
-- (rag-lexindex) can catch up with Postgres before each query by reloading
-- only those documents.
--
-- Triggers, not calls in the store functions: every statement that adds,
-- removes or re-points chunks (indexer, projector, purge, workspace
-- deletion) is recorded, including ones written later. The transaction id
-- says when: a reader takes the xmin of its snapshot as its horizon (every
-- transaction below it has ended), and next time reloads the documents
-- changed by transactions at or above it. Insert-only (a row per document
-- and transaction), so writers never wait on each other's change rows and
-- the triggers add no lock that could order against the rows the
-- statement itself locks; superseded rows are pruned by readers.
CREATE TABLE search_changes (
    workspace_id TEXT NOT NULL,
    document_id  UUID NOT NULL,
    xid          BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, document_id, xid)
);
CREATE INDEX search_changes_since ON search_changes (workspace_id, xid);

-- TRUNCATE (a rebuild) fires no row triggers: it bumps the epoch instead,
-- and readers drop everything they hold.
CREATE TABLE search_epoch (
    id    BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
    epoch BIGINT NOT NULL
);
INSERT INTO search_epoch (id, epoch) VALUES (TRUE, 1);

CREATE FUNCTION search_changes_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_changes (workspace_id, document_id, xid)
    SELECT DISTINCT r.workspace_id, r.document_id, pg_current_xact_id()::text::bigint FROM changed_rows r
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

-- Only what decides searchability: the status (deleted) and the active
-- chunking version; the projector's other updates are not changes.
CREATE FUNCTION search_changes_record_documents() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_changes (workspace_id, document_id, xid)
    SELECT DISTINCT n.workspace_id, n.id, pg_current_xact_id()::text::bigint
    FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE n.status IS DISTINCT FROM o.status
       OR n.active_chunking_version IS DISTINCT FROM o.active_chunking_version
       OR n.workspace_id IS DISTINCT FROM o.workspace_id
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE FUNCTION search_changes_record_removed_documents() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_changes (workspace_id, document_id, xid)
    SELECT DISTINCT r.workspace_id, r.id, pg_current_xact_id()::text::bigint FROM changed_rows r
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE FUNCTION search_epoch_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE search_epoch SET epoch = epoch + 1;
    RETURN NULL;
END $$;

-- A trigger with transition tables has one event each.
CREATE TRIGGER search_chunks_inserted AFTER INSERT ON search_chunks
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION search_changes_record();
CREATE TRIGGER search_chunks_deleted AFTER DELETE ON search_chunks
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION search_changes_record();
CREATE TRIGGER search_chunks_updated AFTER UPDATE ON search_chunks
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION search_changes_record();
-- Status (deleted) and the active chunking version decide what is searchable.
CREATE TRIGGER documents_updated AFTER UPDATE ON documents
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION search_changes_record_documents();
CREATE TRIGGER documents_deleted AFTER DELETE ON documents
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION search_changes_record_removed_documents();
CREATE TRIGGER search_chunks_truncated AFTER TRUNCATE ON search_chunks
    FOR EACH STATEMENT EXECUTE FUNCTION search_epoch_bump();
CREATE TRIGGER documents_truncated AFTER TRUNCATE ON documents
    FOR EACH STATEMENT EXECUTE FUNCTION search_epoch_bump();

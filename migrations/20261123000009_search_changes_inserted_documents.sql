-- A documents row inserted already searchable (no writer does this today:
-- the active version is always set by an UPDATE) is recorded too, so a
-- future writer cannot bypass the in-memory lexical indexes.
CREATE FUNCTION search_changes_record_inserted_documents() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_changes (workspace_id, document_id, xid)
    SELECT DISTINCT r.workspace_id, r.id, pg_current_xact_id()::text::bigint FROM changed_rows r
    WHERE r.active_chunking_version IS NOT NULL
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER documents_inserted AFTER INSERT ON documents
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION search_changes_record_inserted_documents();

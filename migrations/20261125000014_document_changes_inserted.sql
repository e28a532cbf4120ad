-- The workspace's document status stream (GET
-- /v1/workspaces/{ws}/documents/events) follows search_changes too: every
-- status change of a documents row is recorded there already
-- (documents_updated), but an inserted row only when it was searchable.
-- Recording every inserted row lets the stream see an upload's first
-- status; an in-memory search index that reloads such a document finds no
-- chunks for it yet, which costs nothing.
CREATE OR REPLACE FUNCTION search_changes_record_inserted_documents() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_changes (workspace_id, document_id, xid)
    SELECT DISTINCT r.workspace_id, r.id, pg_current_xact_id()::text::bigint FROM changed_rows r
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

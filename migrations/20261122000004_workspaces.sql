-- Workspaces and who owns them. The API writes this table directly: no
-- event carries ownership, so it is a source table, not a projection, and
-- `rebuild read-models` leaves it alone. Pipeline rows keep referring to a
-- workspace by its id (TEXT), so upstream producers and the CLI may use
-- workspaces that have no row here; the API only shows rows it owns.
CREATE TABLE workspaces (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    owner_id   TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX workspaces_owner ON workspaces (owner_id, created_at DESC, id);

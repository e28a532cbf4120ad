-- API keys: named, long-lived bearer credentials a user creates for the
-- tools they connect (an OpenAI-compatible client, an MCP agent). A source
-- table written by the API and the CLI, like workspaces (not a read model:
-- no event carries a secret). Only the SHA-256 of the secret is kept; the
-- public `lookup` finds the row, the hash is compared in constant time.
CREATE TABLE IF NOT EXISTS api_keys (
    id            uuid PRIMARY KEY,
    user_id       text NOT NULL,
    name          text NOT NULL,
    -- NULL: every workspace of the user; else only this one.
    workspace_id  text,
    lookup        text NOT NULL UNIQUE,
    secret_sha256 bytea NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    revoked_at    timestamptz,
    last_used_at  timestamptz
);
CREATE INDEX IF NOT EXISTS api_keys_by_user ON api_keys (user_id, created_at DESC);

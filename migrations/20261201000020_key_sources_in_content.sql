-- Whether the OpenAI-compatible chat endpoint writes an answer's sources
-- into the reply's text (a Markdown list after the answer) for callers
-- with this key. On by default: a chat front-end or framework that shows
-- only `content` then shows where the answer came from. A client that
-- reads the structured `citations` turns it off for its key (or per
-- request, `sources_in_content: false`).
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS sources_in_content boolean NOT NULL DEFAULT true;

-- The parser's attempts per DocumentUploaded, counted before each attempt:
-- a document that takes its parser down (or the whole process, when the
-- parser runs in it) is retried a bounded number of times across restarts,
-- then dead-lettered, instead of taking it down again on every restart.
-- Stage state, not a read model: a rebuild leaves it alone. A row lives
-- only while its event is being parsed.
CREATE TABLE parse_attempts (
    event_id   text PRIMARY KEY,
    attempts   integer NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

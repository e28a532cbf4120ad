-- When a document failed (the failing event's time; the projection time for
-- a dead letter). A success event that occurred later (a redriven dead
-- letter's downstream output, a replay) recovers the document from a
-- failure; earlier events never do.
ALTER TABLE documents ADD COLUMN failed_at TIMESTAMPTZ;

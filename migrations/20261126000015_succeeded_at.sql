-- When the latest success step of a document occurred (the event's time).
-- Topics are projected independently, so a redriven DocumentParsed (which
-- occurred before the failure it caused) can land after the
-- DocumentChunked and DocumentIngested it led to (which occurred after the
-- failure). Those later steps cannot show while the run from the upload is
-- broken, and the parsed step alone cannot recover a failure it predates:
-- the document stayed failed forever. A failure is now recovered when the
-- run is unbroken and any of its success steps occurred after the failure.
ALTER TABLE documents ADD COLUMN succeeded_at TIMESTAMPTZ;

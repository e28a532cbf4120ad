-- Why a source's file was refused, as a stable code (the page says it in
-- the reader's language; `failure` keeps the sentence with its figures).
ALTER TABLE source_files ADD COLUMN failure_code TEXT;

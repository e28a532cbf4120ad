-- Sentences of a document written to the model rather than to a reader
-- ("Ignore all previous instructions...", rag_answer::injection), as the
-- chunker counted them (DocumentChunked v2). NULL: chunked before the
-- count existed. Kept out of every answer's evidence; here so an operator
-- can find such files (docs/operations.md).
ALTER TABLE documents ADD COLUMN IF NOT EXISTS instructions_found integer;

-- A chunk's postings move into its row (terms and their frequencies as two
-- parallel arrays, terms sorted) and search_terms goes. One row per
-- (chunk, term) with two B-tree indexes and a foreign key cost the indexer
-- ~16 µs per posting, ~9 ms per 7-chunk document: 60% of the lexical
-- ingest's time in Postgres. The in-memory index reads the arrays as they
-- are; LEXICAL_INDEX=postgres unnests them (it scans the workspace's
-- chunks, as it did in effect: its query terms are in most chunks).
ALTER TABLE search_chunks ADD COLUMN terms TEXT[] NOT NULL DEFAULT '{}';
ALTER TABLE search_chunks ADD COLUMN tfs INTEGER[] NOT NULL DEFAULT '{}';
UPDATE search_chunks c SET terms = p.terms, tfs = p.tfs
FROM (SELECT chunk_id, array_agg(term ORDER BY term) AS terms, array_agg(tf ORDER BY term) AS tfs
      FROM search_terms GROUP BY chunk_id) p
WHERE p.chunk_id = c.chunk_id;
DROP TABLE search_terms;

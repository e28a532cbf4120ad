-- Where text is: line ranges of the full text for segments and chunks, the
-- boxes of each segment's line fragments, and each page's size as displayed
-- (DocumentParsed v3). Boxes are in the page's unit, origin top-left, y down.

ALTER TABLE documents ADD COLUMN line_count BIGINT;
ALTER TABLE documents ADD COLUMN pages JSONB NOT NULL DEFAULT '[]'::jsonb;

ALTER TABLE segments ADD COLUMN line_start INTEGER;
ALTER TABLE segments ADD COLUMN line_end INTEGER;
-- [{page_idx, char_start, char_end, x0, y0, x1, y1, axis, edges}], one per
-- piece of line; [] for formats without pages.
ALTER TABLE segments ADD COLUMN boxes JSONB NOT NULL DEFAULT '[]'::jsonb;

ALTER TABLE chunk_mappings ADD COLUMN line_start INTEGER;
ALTER TABLE chunk_mappings ADD COLUMN line_end INTEGER;

-- Carried into the search index so the answer prompt can tag each source
-- with its page and lines without another lookup.
ALTER TABLE search_chunks ADD COLUMN line_start INTEGER;
ALTER TABLE search_chunks ADD COLUMN line_end INTEGER;

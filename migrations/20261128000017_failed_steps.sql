-- Which steps of a document failed: bit 0 DocumentUploaded, 1
-- DocumentParsed, 2 DocumentChunked, 3 DocumentIngested, as in
-- projected_steps. A failure was recovered by time (a success that occurred
-- after it, migration 20261126000015), which a second failure, a dead
-- letter stamped with the database's clock, or downstream steps occurring
-- before a dead letter could defeat. Now a success of the failed step
-- itself clears its bit, and a document recovers once none is left: the
-- success and the failure of one step are on one topic partition, so
-- "after" is the topic's order.
ALTER TABLE documents ADD COLUMN failed_steps SMALLINT NOT NULL DEFAULT 0;
-- Documents failed before this: the failed step is the first one missing
-- from the run after the upload; a document failed with its run complete
-- (a failed re-chunking, or one left failed by the old rule) recovers when
-- it is chunked and ingested again (a replay of chunking).
UPDATE documents SET failed_steps = CASE
        WHEN projected_steps & 1 = 0 THEN 1
        WHEN projected_steps & 2 = 0 THEN 2
        WHEN projected_steps & 4 = 0 THEN 4
        WHEN projected_steps & 8 = 0 THEN 8
        ELSE 12 END
    WHERE status = 'failed';

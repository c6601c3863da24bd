-- As migrations/sqlite/0008_insight_ids_from_event_ids.sql: an insight's id is made from its
-- evaluation's id, so the unique constraint on insight_id goes, and so do event_id and
-- position, which the slot already gives. insight_id is kept only for ids not made that way,
-- under a partial unique index that rows with a made id never touch.
-- SQLite rebuilds the table; PostgreSQL changes it in place to the same end state.
ALTER TABLE insights DROP CONSTRAINT insights_insight_id_key;
ALTER TABLE insights ALTER COLUMN insight_id DROP NOT NULL;
ALTER TABLE insights DROP COLUMN event_id;
ALTER TABLE insights DROP COLUMN position;
CREATE UNIQUE INDEX insights_by_stored_id ON insights (insight_id) WHERE insight_id IS NOT NULL;

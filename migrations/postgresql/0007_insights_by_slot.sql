-- As migrations/sqlite/0007_insights_by_slot.sql: insights are keyed by their slot (the
-- evaluation's number times 8 plus the insight's position) instead of by an index on event_id,
-- and the ON DELETE CASCADE goes with that index.
-- SQLite fills the new table from the old through the evaluations' rowids, which PostgreSQL
-- does not have. No PostgreSQL database held insights at this version (the PostgreSQL store
-- came later), so the old table is replaced; should one hold rows, the migration stops rather
-- than lose them.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM insights) THEN
        RAISE EXCEPTION 'insights holds rows: migration 0007 cannot give them slots on PostgreSQL';
    END IF;
END
$$;
DROP TABLE insights;
CREATE TABLE insights (
    slot           bigint PRIMARY KEY,      -- the evaluation's number * 8 + position
    insight_id     text NOT NULL UNIQUE,
    event_id       text NOT NULL,
    position       bigint NOT NULL CHECK (position BETWEEN 0 AND 7),
    type           text NOT NULL,
    schema_version bigint NOT NULL,
    model_version  text,
    value          text,                    -- unknown | medium | high, or NULL on error
    error_code     text,
    reasons        text NOT NULL DEFAULT '' -- comma-separated reason codes
);

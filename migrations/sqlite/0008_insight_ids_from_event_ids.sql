-- An insight's id is now made from its evaluation's id (EvaluationIdentifiers): the evaluation's
-- id ends in 0 and the insight at position p has the same id ending in p + 1. The store finds
-- an insight through its evaluation's event_id and its slot, so the unique index on insight_id,
-- one more B-tree written on every commit, goes; so do event_id and position, which the slot
-- already gives (the evaluation's rowid * 8 + position).
-- insight_id is kept only for ids not made that way (every insight stored before this
-- migration), under a partial index that rows with a made id never touch.
CREATE TABLE insights_v8 (
    slot           INTEGER PRIMARY KEY,     -- the evaluation's rowid * 8 + position
    insight_id     TEXT,                    -- NULL when made from the evaluation's id
    type           TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    model_version  TEXT,
    value          TEXT,                    -- unknown | medium | high, or NULL on error
    error_code     TEXT,
    reasons        TEXT NOT NULL DEFAULT '' -- comma-separated reason codes
) STRICT;
INSERT INTO insights_v8 (slot, insight_id, type, schema_version, model_version, value, error_code, reasons)
    SELECT slot, insight_id, type, schema_version, model_version, value, error_code, reasons FROM insights;
DROP TABLE insights;
ALTER TABLE insights_v8 RENAME TO insights;
CREATE UNIQUE INDEX insights_by_stored_id ON insights (insight_id) WHERE insight_id IS NOT NULL;

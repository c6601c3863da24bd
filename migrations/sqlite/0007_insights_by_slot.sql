-- An evaluation's insights are found by their slot instead of by an index on event_id: the
-- slot is the evaluation's rowid times 8 plus the insight's position, the table's integer key.
-- That index was one more B-tree written on every commit (worth ~7 % of W2's requests per
-- second: docs/performance.md, round 6), and with it goes the ON DELETE CASCADE that needed it:
-- retention deletes an evaluation's insights by their slots, in the same transaction.
-- Insight ids stay unique, and found, through their own index (labels).
CREATE TABLE insights_by_slot (
    slot           INTEGER PRIMARY KEY,     -- the evaluation's rowid * 8 + position
    insight_id     TEXT NOT NULL UNIQUE,
    event_id       TEXT NOT NULL,
    position       INTEGER NOT NULL CHECK (position BETWEEN 0 AND 7),
    type           TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    model_version  TEXT,
    value          TEXT,                    -- unknown | medium | high, or NULL on error
    error_code     TEXT,
    reasons        TEXT NOT NULL DEFAULT '' -- comma-separated reason codes
) STRICT;
INSERT INTO insights_by_slot (slot, insight_id, event_id, position, type, schema_version, model_version, value,
                              error_code, reasons)
    SELECT e.rowid * 8 + i.position, i.insight_id, i.event_id, i.position, i.type, i.schema_version, i.model_version,
           i.value, i.error_code, i.reasons
    FROM insights i JOIN evaluations e ON e.event_id = i.event_id;
DROP TABLE insights;
ALTER TABLE insights_by_slot RENAME TO insights;

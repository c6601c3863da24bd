-- Rate limits: an admin reset of a caller's reporting penalty forgives the evaluations
-- before it, so the penalty does not come straight back from the same overdue reports.
ALTER TABLE callers ADD COLUMN penalty_reset_at INTEGER;

-- Reporting compliance is counted per caller over recent evaluations.
CREATE INDEX evaluations_by_caller_created ON evaluations (caller_id, created_at);

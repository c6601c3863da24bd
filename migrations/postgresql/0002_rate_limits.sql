-- Rate limits (migrations/sqlite/0002_rate_limits.sql): an admin reset of a caller's reporting
-- penalty forgives the evaluations before it.
ALTER TABLE callers ADD COLUMN penalty_reset_at bigint;

-- Reporting compliance is counted per caller over recent evaluations.
CREATE INDEX evaluations_by_caller_created ON evaluations (caller_id, created_at);

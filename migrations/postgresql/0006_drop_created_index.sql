-- As migrations/sqlite/0006_drop_created_index.sql: retention and the velocity rebuild read
-- each caller's range of evaluations_by_caller_created instead.
DROP INDEX evaluations_by_created;

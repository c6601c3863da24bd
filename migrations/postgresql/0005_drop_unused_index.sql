-- As migrations/sqlite/0005_drop_unused_index.sql: evaluations_by_caller_due serves no query.
DROP INDEX IF EXISTS evaluations_by_caller_due;

-- evaluations_by_caller_due (caller_id, report_by) serves no query: reporting statistics select
-- by (caller_id, created_at) and read report_by per row. Each evaluation insert maintained it
-- for nothing (one of eight B-trees written per evaluation).
DROP INDEX IF EXISTS evaluations_by_caller_due;

-- Each evaluation wrote seven B-trees, and every group commit rewrites the last page of each
-- (docs/performance.md, round 6). evaluations_by_created goes: retention and the velocity
-- rebuild read each caller's range of evaluations_by_caller_created instead.
DROP INDEX evaluations_by_created;

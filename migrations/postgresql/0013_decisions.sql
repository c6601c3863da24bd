-- The decision of each evaluation (PRODUCT.md §12), stored with it and never its raw context:
-- the action as a code in precedence order (0 proceed, 1 confirm, 2 confirmOutOfBand, 3 block),
-- the ids of the rules that decided it, comma-separated (NULL when none), and the version of the
-- policy that made it. Evaluations stored before this migration have no decision (all NULL).
-- Columns without a default: adding them rewrites nothing.
ALTER TABLE evaluations ADD COLUMN decision_action bigint;
ALTER TABLE evaluations ADD COLUMN decision_reasons text;
ALTER TABLE evaluations ADD COLUMN policy_version text;

-- Each evaluation gets a number, from which its insights' slots are made (the number times 8
-- plus the position, migration 0007): what SQLite's rowid is there. An identity column, so
-- that instances writing at once never take the same number; a unique index, so that an
-- insight's evaluation is found from its slot.
ALTER TABLE evaluations ADD COLUMN number bigint GENERATED ALWAYS AS IDENTITY;
CREATE UNIQUE INDEX evaluations_by_number ON evaluations (number);

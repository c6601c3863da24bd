-- SQLite's 0022 drops its index of receipt heads by time (its one writer stores them in time
-- order, which the purge follows instead). PostgreSQL keeps receipt_heads_by_time: several
-- instances' writers interleave their heads in the table. The file keeps both engines'
-- migrations in one numbering.
SELECT 1;

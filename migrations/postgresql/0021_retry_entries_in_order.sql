-- SQLite's 0021 drops its retry entries' key index for an index the daemon keeps in memory (one
-- process per SQLite database). PostgreSQL's instances share the table, and its unique key is
-- what lets exactly one of two instances store an evaluation under one requestId: nothing
-- changes here; the file keeps both engines' migrations in one numbering.
SELECT 1;

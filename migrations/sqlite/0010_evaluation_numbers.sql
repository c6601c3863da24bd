-- PostgreSQL's 0010 gives each evaluation a number for its insights' slots (migration 0007):
-- on SQLite the rowid is that number already. Nothing changes here; the file keeps both
-- engines' migrations in one numbering.
SELECT 1;

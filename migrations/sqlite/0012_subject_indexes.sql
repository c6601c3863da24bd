-- A subject's evaluations (PRODUCT.md §15: transparency, erasure) are found through the subject
-- index, a side file beside the database kept by a background thread (SQLiteSubjectIndex,
-- docs/architecture.md "The subject index"), not through indexes of this database: three
-- random-key B-tree inserts in every evaluation's commit cost the single writer most of its
-- throughput (docs/performance.md, "Issue 26"). This migration keeps its number beside
-- PostgreSQL's 0012, which does index the hashes in the database.
SELECT 1;

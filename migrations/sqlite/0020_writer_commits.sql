-- PostgreSQL's 0017 lets the writer of each instance learn whether a batch committed when its
-- connection broke after sending it (a failover). SQLite's writer is in the process, and a
-- commit it was told of is on disk: nothing changes here; the file keeps both engines'
-- migrations in one numbering.
SELECT 1;

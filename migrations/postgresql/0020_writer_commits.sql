-- Each instance's writer marks every batch it sends with the batch's number, in the batch's own
-- transaction: one row per writer, updated by each commit. When the writer's connection breaks
-- after a batch was sent (the server crashed, or failed over to a standby), whether the batch
-- committed is unknown; the writer then reads its row on a server that takes writes (after a
-- failover, the promoted standby): the batch committed if and only if the row holds its number.
-- Reading it takes the row's lock, so a batch still running on that server is waited for, and
-- the read is itself a commit, acknowledged only once the synchronous standby holds it and so
-- everything before it (docs/deployment.md, "Failover").
-- A writer deletes its row when it stops; rows of writers that crashed are deleted after 7 days.
CREATE TABLE writer_commits (
    writer text PRIMARY KEY,
    batch bigint NOT NULL,
    committed_at bigint NOT NULL
);

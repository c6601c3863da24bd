-- Retry entries in the order they are stored, without an index on the request key: the key is an
-- HMAC, and a B-tree over it made every evaluation dirty a random page of it in every commit.
-- The daemon keeps where each key's row is in memory (RetryKeyIndex, read from this table when
-- the store opens: one process per database); the oldest entries are the first to expire (one
-- consumption grace for all), and each insert deletes the oldest two once they have.
-- request_key: HMAC-SHA256 under the tenant's hash key of (caller id, requestId); one live entry
-- per key, checked by the writer through the index before it inserts.
-- digest, answer, expires_at: as in 0019.
CREATE TABLE retry_entries_in_order (
    request_key BLOB NOT NULL,
    digest BLOB NOT NULL,
    event_id TEXT NOT NULL,
    answer BLOB NOT NULL,
    expires_at INTEGER NOT NULL,
    entry INTEGER PRIMARY KEY  -- the rowid, declared so that no VACUUM renumbers the rows the daemon's index names
) STRICT;
INSERT INTO retry_entries_in_order (request_key, digest, event_id, answer, expires_at)
    SELECT request_key, digest, event_id, answer, expires_at FROM retry_entries ORDER BY expires_at;
DROP TABLE retry_entries;
ALTER TABLE retry_entries_in_order RENAME TO retry_entries;

-- The hash keys the store has seen, by key id only (migrations/sqlite/0011_hash_keys.sql).
-- Every instance's keyring must share a key with them, or the instance refuses to start.
CREATE TABLE hash_keys (
    key_id text PRIMARY KEY,
    registered_at bigint NOT NULL
);

-- The hash keys the store has seen, by key id only (a key id is a one-way fingerprint of its
-- key: docs/privacy.md). An instance whose keyring shares no key with them refuses to start, so
-- a wrong key file cannot silently hash people differently from the stored data.
CREATE TABLE hash_keys (
    key_id TEXT PRIMARY KEY,
    registered_at INTEGER NOT NULL
);

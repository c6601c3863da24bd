-- A subject's evaluations (PRODUCT.md §15: transparency, erasure) are found by its keyed hash:
-- one index per kind, newest first within a hash by creation time (and the rowid every SQLite
-- index ends with). Partial: an evaluation without that identifier writes nothing to the index.
-- The environment and the caller's tenant are checked on the rows found (a subject's hashes are
-- its tenant's own; only its evaluations in the other environment are read and skipped).
CREATE INDEX evaluations_by_account ON evaluations (account_hash, created_at) WHERE account_hash IS NOT NULL;
CREATE INDEX evaluations_by_device ON evaluations (device_hash, created_at) WHERE device_hash IS NOT NULL;
CREATE INDEX evaluations_by_counterparty ON evaluations (counterparty_hash, created_at)
    WHERE counterparty_hash IS NOT NULL;

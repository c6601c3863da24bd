-- A subject's evaluations (PRODUCT.md §15: transparency, erasure) are found by its keyed hash:
-- one partial index per kind, by creation time within a hash; evaluations of one millisecond
-- are put in order of their number from the few rows the index gives. (The embedded SQLite store
-- keeps these keys in a side file off its commit path instead: migrations/sqlite/0012.)
CREATE INDEX evaluations_by_account ON evaluations (account_hash, created_at) WHERE account_hash IS NOT NULL;
CREATE INDEX evaluations_by_device ON evaluations (device_hash, created_at) WHERE device_hash IS NOT NULL;
CREATE INDEX evaluations_by_counterparty ON evaluations (counterparty_hash, created_at)
    WHERE counterparty_hash IS NOT NULL;

-- A chain of receipt heads per instance, tenant and environment (docs/api.md, "Receipts"): each
-- group commit signs one tree of each tenant's answers in each environment it holds, chained to
-- that tenant's and environment's previous head on the instance, so that the heads a tenant
-- reads (GET /v1/receipts/heads, its own chains only) say nothing of other tenants' volume or
-- timing. The head's payload names its tenant and environment.
-- tenant, environment: the chain's; empty text for the heads made before this migration, whose
-- trees mixed every tenant's answers and whose payload names none: they stay as they are, one
-- chain per instance, still verified by insightctl receipts verify. The new chains start at
-- sequence 0 (previous null).
-- The table is made again for its new key, the rows copied in their order (the retention purge
-- takes heads oldest first in rowid order, migration 0022), the new columns last (as
-- PostgreSQL's ALTER TABLE puts them).
CREATE TABLE receipt_heads_by_chain (
    instance TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    made_at INTEGER NOT NULL,
    jws TEXT NOT NULL,
    leaves BLOB NOT NULL,
    tenant TEXT NOT NULL DEFAULT '',
    environment TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (instance, tenant, environment, sequence)
);
INSERT INTO receipt_heads_by_chain (instance, sequence, made_at, jws, leaves)
    SELECT instance, sequence, made_at, jws, leaves FROM receipt_heads ORDER BY rowid;
DROP TABLE receipt_heads;
ALTER TABLE receipt_heads_by_chain RENAME TO receipt_heads;
-- A retry entry names its head's chain too (0023 named the instance and the sequence); empty for
-- an entry that names a head of no tenant.
ALTER TABLE retry_entries ADD COLUMN head_tenant TEXT;
ALTER TABLE retry_entries ADD COLUMN head_environment TEXT;
UPDATE retry_entries SET head_tenant = '', head_environment = '' WHERE head_instance IS NOT NULL;

-- A chain of receipt heads per instance, tenant and environment (docs/api.md, "Receipts"): each
-- group commit signs one tree of each tenant's answers in each environment it holds, chained to
-- that tenant's and environment's previous head on the instance, so that the heads a tenant
-- reads (GET /v1/receipts/heads, its own chains only) say nothing of other tenants' volume or
-- timing. The head's payload names its tenant and environment.
-- tenant, environment: the chain's; empty text for the heads made before this migration, whose
-- trees mixed every tenant's answers and whose payload names none: they stay as they are, one
-- chain per instance, still verified by insightctl receipts verify. The new chains start at
-- sequence 0 (previous null).
ALTER TABLE receipt_heads ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE receipt_heads ADD COLUMN environment text NOT NULL DEFAULT '';
ALTER TABLE receipt_heads DROP CONSTRAINT receipt_heads_pkey;
ALTER TABLE receipt_heads ADD PRIMARY KEY (instance, tenant, environment, sequence);
-- A retry entry names its head's chain too (0023 named the instance and the sequence); empty for
-- an entry that names a head of no tenant.
ALTER TABLE retry_entries ADD COLUMN head_tenant text;
ALTER TABLE retry_entries ADD COLUMN head_environment text;
UPDATE retry_entries SET head_tenant = '', head_environment = '' WHERE head_instance IS NOT NULL;

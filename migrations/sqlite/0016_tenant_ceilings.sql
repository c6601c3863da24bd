-- Tenant ceilings (docs/api.md, "Tenants"): the highest rate and burst the operator lets a
-- tenant's admins give any of its callers (insightctl tenants update NAME --max-rate
-- --max-burst). A tenant without a row, or a NULL column, has no ceiling on it. Setting a
-- ceiling lowers the tenant's callers above it in the same transaction.
CREATE TABLE tenant_ceilings (
    tenant    TEXT PRIMARY KEY,
    max_rate  REAL,
    max_burst INTEGER
) STRICT;

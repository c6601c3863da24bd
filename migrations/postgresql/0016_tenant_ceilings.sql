-- Tenant ceilings (migrations/sqlite/0016_tenant_ceilings.sql): the highest rate and burst the
-- operator lets a tenant's admins give any of its callers; NULL: no ceiling on it.
CREATE TABLE tenant_ceilings (
    tenant    text PRIMARY KEY,
    max_rate  double precision,
    max_burst bigint
);

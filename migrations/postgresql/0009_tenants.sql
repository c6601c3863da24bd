-- Tenants (migrations/sqlite/0009_tenants.sql): every caller belongs to one; the callers that
-- existed before belong to 'default'.
ALTER TABLE callers ADD COLUMN tenant text NOT NULL DEFAULT 'default';
CREATE INDEX callers_by_tenant ON callers (tenant);

-- An opt-out belongs to the tenant whose caller recorded it. renewed_at: the last time the
-- person asked for this state; retention counts from it.
ALTER TABLE subject_authorizations ADD COLUMN tenant text NOT NULL DEFAULT 'default';
ALTER TABLE subject_authorizations ADD COLUMN renewed_at bigint NOT NULL DEFAULT 0;
UPDATE subject_authorizations SET renewed_at = requested_at;
CREATE INDEX subject_authorizations_by_renewed ON subject_authorizations (renewed_at);

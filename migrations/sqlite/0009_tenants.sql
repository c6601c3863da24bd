-- Tenants (docs/api.md, "Tenants"): every caller belongs to one; the callers that existed before
-- belong to 'default', whose identifier hashes are the keyring's own (so their data stays valid).
ALTER TABLE callers ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
CREATE INDEX callers_by_tenant ON callers (tenant);

-- An opt-out belongs to the tenant whose caller recorded it (its hashes are that tenant's).
-- renewed_at: the last time the person asked for this state; retention counts from it, so an
-- opt-out the person keeps asserting is never purged, and one nobody repeated for the
-- retention period is.
ALTER TABLE subject_authorizations ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
ALTER TABLE subject_authorizations ADD COLUMN renewed_at INTEGER NOT NULL DEFAULT 0;
UPDATE subject_authorizations SET renewed_at = requested_at;
CREATE INDEX subject_authorizations_by_renewed ON subject_authorizations (renewed_at);

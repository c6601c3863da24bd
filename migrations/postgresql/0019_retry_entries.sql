-- Retries of an evaluation (docs/api.md, "Retries"): an evaluation whose request named a
-- requestId keeps, in its transaction, what a retry of that request is answered from, until its
-- consumption deadline (expires_at, Unix ms).
-- request_key: HMAC-SHA256 under the tenant's hash key of (caller id, requestId): the requestId, which
-- may be an identifier, is never stored; one live entry per key (a second insert fails, and its
-- request is answered as a retry of the first).
-- digest: the keyed digest of the request's bytes, which a retry must repeat.
-- answer: the answer's bytes without its requestId member (no identifier: docs/privacy.md).
-- Each insert deletes the same key's expired entry and up to two other expired ones, so the
-- table holds about one consumption grace of entries.
CREATE TABLE retry_entries (
    request_key bytea PRIMARY KEY,
    digest bytea NOT NULL,
    event_id text NOT NULL,
    answer bytea NOT NULL,
    expires_at bigint NOT NULL
);
CREATE INDEX retry_entries_by_expiry ON retry_entries (expires_at);

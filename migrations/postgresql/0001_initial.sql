-- insightd schema for PostgreSQL, version 1: the tables of migrations/sqlite/0001_initial.sql
-- (INTEGER → bigint, TEXT → text, BLOB → bytea, REAL → double precision).
-- Times are milliseconds since the Unix epoch (UTC). No raw identifier, interaction event or
-- feature is ever stored: subjects appear only as keyed hashes (bytea, HMAC-SHA256).

CREATE TABLE callers (
    caller_id   text PRIMARY KEY,
    name        text NOT NULL,
    environment text NOT NULL CHECK (environment IN ('production', 'sandbox')),
    roles       text NOT NULL,              -- comma-separated: evaluate,labels,admin
    rate        double precision NOT NULL CHECK (rate > 0),
    burst       bigint NOT NULL CHECK (burst >= 1),
    created_at  bigint NOT NULL
);

-- An API key is "ik_<key_id>_<secret>"; only SHA-256(secret) is kept.
CREATE TABLE api_keys (
    key_id      text PRIMARY KEY,
    caller_id   text NOT NULL REFERENCES callers (caller_id),
    secret_hash bytea NOT NULL,
    created_at  bigint NOT NULL,
    revoked_at  bigint
);
CREATE INDEX api_keys_by_caller ON api_keys (caller_id);

CREATE TABLE evaluations (
    event_id          text PRIMARY KEY,
    caller_id         text NOT NULL,
    environment       text NOT NULL,
    category          text NOT NULL,
    created_at        bigint NOT NULL,
    report_by         bigint NOT NULL,
    hash_key_id       text,
    account_hash      bytea,
    device_hash       bytea,
    counterparty_hash bytea
);
CREATE INDEX evaluations_by_created ON evaluations (created_at);
CREATE INDEX evaluations_by_caller_due ON evaluations (caller_id, report_by);

CREATE TABLE insights (
    insight_id     text PRIMARY KEY,
    event_id       text NOT NULL REFERENCES evaluations (event_id) ON DELETE CASCADE,
    position       bigint NOT NULL,
    type           text NOT NULL,
    schema_version bigint NOT NULL,
    model_version  text,
    value          text,                    -- unknown | medium | high, or NULL on error
    error_code     text,
    reasons        text NOT NULL DEFAULT '' -- comma-separated reason codes
);
CREATE INDEX insights_by_event ON insights (event_id);

CREATE TABLE consumption_reports (
    event_id    text PRIMARY KEY REFERENCES evaluations (event_id) ON DELETE CASCADE,
    status      text NOT NULL,
    insight_ids text NOT NULL,              -- comma-separated, as reported
    reported_at bigint NOT NULL,
    timeliness  text NOT NULL CHECK (timeliness IN ('onTime', 'late'))
);

-- Labels may outlive the evaluation they describe (retention), so no foreign key.
CREATE TABLE labels (
    insight_id    text PRIMARY KEY,
    environment   text NOT NULL,
    caller_id     text NOT NULL,
    outcome       text NOT NULL,
    fraud_type    text,
    discovered_at text NOT NULL,            -- YYYY-MM-DD
    received_at   bigint NOT NULL
);

-- Label submissions by Idempotency-Key. The key is caller-controlled text, so only its hash is kept.
CREATE TABLE label_submissions (
    caller_id   text NOT NULL,
    key_hash    bytea NOT NULL,
    body_hash   bytea NOT NULL,
    results     text NOT NULL,              -- comma-separated per-item result statuses
    created_at  bigint NOT NULL,
    PRIMARY KEY (caller_id, key_hash)
);

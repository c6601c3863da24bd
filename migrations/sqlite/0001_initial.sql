-- insightd schema, version 1.
-- Times are milliseconds since the Unix epoch (UTC). No raw identifier, interaction event or
-- feature is ever stored: subjects appear only as keyed hashes (BLOB, HMAC-SHA256).

CREATE TABLE callers (
    caller_id   TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    environment TEXT NOT NULL CHECK (environment IN ('production', 'sandbox')),
    roles       TEXT NOT NULL,              -- comma-separated: evaluate,labels,admin
    rate        REAL NOT NULL CHECK (rate > 0),
    burst       INTEGER NOT NULL CHECK (burst >= 1),
    created_at  INTEGER NOT NULL
) STRICT;

-- An API key is "ik_<key_id>_<secret>"; only SHA-256(secret) is kept.
CREATE TABLE api_keys (
    key_id      TEXT PRIMARY KEY,
    caller_id   TEXT NOT NULL REFERENCES callers (caller_id),
    secret_hash BLOB NOT NULL,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
) STRICT;
CREATE INDEX api_keys_by_caller ON api_keys (caller_id);

CREATE TABLE evaluations (
    event_id          TEXT PRIMARY KEY,
    caller_id         TEXT NOT NULL,
    environment       TEXT NOT NULL,
    category          TEXT NOT NULL,
    created_at        INTEGER NOT NULL,
    report_by         INTEGER NOT NULL,
    hash_key_id       TEXT,
    account_hash      BLOB,
    device_hash       BLOB,
    counterparty_hash BLOB
) STRICT;
CREATE INDEX evaluations_by_created ON evaluations (created_at);
CREATE INDEX evaluations_by_caller_due ON evaluations (caller_id, report_by);

CREATE TABLE insights (
    insight_id     TEXT PRIMARY KEY,
    event_id       TEXT NOT NULL REFERENCES evaluations (event_id) ON DELETE CASCADE,
    position       INTEGER NOT NULL,
    type           TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    model_version  TEXT,
    value          TEXT,                    -- unknown | medium | high, or NULL on error
    error_code     TEXT,
    reasons        TEXT NOT NULL DEFAULT '' -- comma-separated reason codes
) STRICT;
CREATE INDEX insights_by_event ON insights (event_id);

CREATE TABLE consumption_reports (
    event_id    TEXT PRIMARY KEY REFERENCES evaluations (event_id) ON DELETE CASCADE,
    status      TEXT NOT NULL,
    insight_ids TEXT NOT NULL,              -- comma-separated, as reported
    reported_at INTEGER NOT NULL,
    timeliness  TEXT NOT NULL CHECK (timeliness IN ('onTime', 'late'))
) STRICT;

-- Labels may outlive the evaluation they describe (retention), so no foreign key.
CREATE TABLE labels (
    insight_id    TEXT PRIMARY KEY,
    environment   TEXT NOT NULL,
    caller_id     TEXT NOT NULL,
    outcome       TEXT NOT NULL,
    fraud_type    TEXT,
    discovered_at TEXT NOT NULL,            -- YYYY-MM-DD
    received_at   INTEGER NOT NULL
) STRICT;

-- Label submissions by Idempotency-Key. The key is caller-controlled text, so only its hash is kept.
CREATE TABLE label_submissions (
    caller_id   TEXT NOT NULL,
    key_hash    BLOB NOT NULL,
    body_hash   BLOB NOT NULL,
    results     TEXT NOT NULL,              -- comma-separated per-item result statuses
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (caller_id, key_hash)
) STRICT;

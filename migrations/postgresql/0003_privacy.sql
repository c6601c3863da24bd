-- Privacy and data lifecycle (migrations/sqlite/0003_privacy.sql).

-- A person's choice to switch insights off (or back on), by keyed hash of the subject.
-- A denial takes effect at effective_at (after the cooldown); an authorization at once.
CREATE TABLE subject_authorizations (
    environment  text NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('account', 'device')),
    subject_hash bytea NOT NULL,
    hash_key_id  text NOT NULL,
    status       text NOT NULL CHECK (status IN ('denied', 'authorized')),
    requested_at bigint NOT NULL,
    effective_at bigint NOT NULL,
    PRIMARY KEY (environment, kind, subject_hash)
);

-- Labels keep what model metrics need once retention has deleted the evaluation.
ALTER TABLE labels ADD COLUMN category text;
ALTER TABLE labels ADD COLUMN model_version text;
ALTER TABLE labels ADD COLUMN value text;
CREATE INDEX labels_by_received ON labels (received_at);
CREATE INDEX label_submissions_by_created ON label_submissions (created_at);

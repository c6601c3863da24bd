-- Privacy and data lifecycle.

-- A person's choice to switch insights off (or back on), by keyed hash of the subject.
-- A denial takes effect at effective_at (after the cooldown); an authorization at once.
CREATE TABLE subject_authorizations (
    environment  TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('account', 'device')),
    subject_hash BLOB NOT NULL,
    hash_key_id  TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('denied', 'authorized')),
    requested_at INTEGER NOT NULL,
    effective_at INTEGER NOT NULL,
    PRIMARY KEY (environment, kind, subject_hash)
) STRICT;

-- Labels keep what model metrics need once retention has deleted the evaluation: the value
-- the insight answered, the model version and the category.
ALTER TABLE labels ADD COLUMN category TEXT;
ALTER TABLE labels ADD COLUMN model_version TEXT;
ALTER TABLE labels ADD COLUMN value TEXT;
CREATE INDEX labels_by_received ON labels (received_at);
CREATE INDEX label_submissions_by_created ON label_submissions (created_at);

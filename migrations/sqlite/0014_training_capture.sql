-- Training capture (PRODUCT.md §13, docs/privacy.md "Training capture: what is kept and why"):
-- a caller opts in (training_capture 1), and then each of its evaluations that had interaction
-- features keeps the model's input beside it: the feature vector, never events, identifiers or
-- subject hashes. A row is keyed by its evaluation's rowid, so that retention and erasure,
-- which find evaluations by rowid, delete it with them; it names the served coaching insight
-- (the id labels name) and what the export groups by. Kept INSIGHTD_TRAINING_CAPTURE_DAYS.
ALTER TABLE callers ADD COLUMN training_capture INTEGER NOT NULL DEFAULT 0;
CREATE TABLE training_vectors (
    evaluation    INTEGER PRIMARY KEY,      -- the evaluation's rowid
    insight_id    TEXT NOT NULL,            -- the served coaching insight (labels name it)
    tenant        TEXT NOT NULL,
    environment   TEXT NOT NULL,
    category      TEXT NOT NULL,
    model_version TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    features      BLOB NOT NULL             -- float64 little-endian per feature, FeatureVector order; NaN = missing
) STRICT;
CREATE INDEX training_vectors_by_created ON training_vectors (created_at);

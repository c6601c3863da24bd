-- Training capture (PRODUCT.md §13, docs/privacy.md "Training capture: what is kept and why"):
-- a caller opts in (training_capture 1), and then each of its evaluations that had interaction
-- features keeps the model's input beside it: the feature vector, never events, identifiers or
-- subject hashes. A row is keyed by its evaluation's number, so that retention and erasure
-- delete it with its evaluation; it names the served coaching insight (the id labels name) and
-- what the export groups by. Kept INSIGHTD_TRAINING_CAPTURE_DAYS.
ALTER TABLE callers ADD COLUMN training_capture bigint NOT NULL DEFAULT 0;
CREATE TABLE training_vectors (
    evaluation    bigint PRIMARY KEY,       -- the evaluation's number
    insight_id    text NOT NULL,            -- the served coaching insight (labels name it)
    tenant        text NOT NULL,
    environment   text NOT NULL,
    category      text NOT NULL,
    model_version text NOT NULL,
    created_at    bigint NOT NULL,
    features      bytea NOT NULL            -- float64 little-endian per feature, FeatureVector order; NaN = missing
);
CREATE INDEX training_vectors_by_created ON training_vectors (created_at);

-- Velocity (migrations/sqlite/0004_velocity.sql): what the tracker recorded for each
-- evaluation, so that its counters can be rebuilt from the store.
ALTER TABLE evaluations ADD COLUMN tracked_value text;               -- unknown | medium | high, or NULL
ALTER TABLE evaluations ADD COLUMN raised_by_velocity bigint NOT NULL DEFAULT 0;

-- Velocity: what the tracker recorded for each evaluation, so that its counters can be rebuilt
-- from the store after a restart exactly as they were built live.
ALTER TABLE evaluations ADD COLUMN tracked_value TEXT;               -- unknown | medium | high, or NULL
ALTER TABLE evaluations ADD COLUMN raised_by_velocity INTEGER NOT NULL DEFAULT 0;

-- The capture kit that produced an evaluation's interaction (interaction.source, issue 35): its
-- platform (web, ios, android, other), and its name and version as the caller's tokens (letters,
-- digits, . _ + -, at most 32 each; refused when they look like personal data). The
-- model-performance report splits each version's row by them, so that a kit version that moves
-- the scores shows. Never the events. NULL when the caller named no source, and for every
-- evaluation stored before this migration.
ALTER TABLE evaluations ADD COLUMN source_platform TEXT;
ALTER TABLE evaluations ADD COLUMN source_kit TEXT;
ALTER TABLE evaluations ADD COLUMN source_version TEXT;

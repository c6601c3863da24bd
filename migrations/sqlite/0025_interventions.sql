-- Interventions (issue 46; docs/api.md "Interventions"): what the caller did with an evaluation,
-- recorded with its consumption report, so that a claim can show which specific warning was
-- shown, when, and what the person did. Closed codes, the operator's template ids and times
-- (Unix ms) only. All NULL when the report recorded no intervention, and for every report stored
-- before this migration; kept and deleted with the report (retention cascades from the
-- evaluation; an erasure unlinks the evaluation and keeps its report).
ALTER TABLE consumption_reports ADD COLUMN intervention TEXT;           -- scamWarning, …, none
ALTER TABLE consumption_reports ADD COLUMN template_id TEXT;
ALTER TABLE consumption_reports ADD COLUMN template_version INTEGER;
ALTER TABLE consumption_reports ADD COLUMN shown_at INTEGER;
ALTER TABLE consumption_reports ADD COLUMN response TEXT;               -- proceeded, abandoned, …
ALTER TABLE consumption_reports ADD COLUMN hold_started_at INTEGER;
ALTER TABLE consumption_reports ADD COLUMN hold_ended_at INTEGER;
ALTER TABLE consumption_reports ADD COLUMN hold_told_at INTEGER;

-- Each tenant's catalogue of interventions, per environment: the operator's templates of
-- warnings and questionnaires, with the scam types each targets (comma-separated codes) and a
-- short description (operator text, no personal data). An entry never changes: a new wording is
-- a new version, an old one is retired (retired_at) and kept, so that every report (and later
-- every evidence bundle) finds the entry it names.
CREATE TABLE intervention_templates (
    tenant      TEXT NOT NULL,
    environment TEXT NOT NULL,
    template_id TEXT NOT NULL,
    version     INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    scam_types  TEXT NOT NULL,
    description TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    retired_at  INTEGER,
    PRIMARY KEY (tenant, environment, template_id, version)
) STRICT;

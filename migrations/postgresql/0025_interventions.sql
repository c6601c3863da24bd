-- Interventions (issue 46; docs/api.md "Interventions"): what the caller did with an evaluation,
-- recorded with its consumption report, so that a claim can show which specific warning was
-- shown, when, and what the person did. Closed codes, the operator's template ids and times
-- (Unix ms) only. All NULL when the report recorded no intervention, and for every report stored
-- before this migration; kept and deleted with the report (retention cascades from the
-- evaluation; an erasure unlinks the evaluation and keeps its report).
-- Columns without a default: adding them rewrites nothing.
ALTER TABLE consumption_reports ADD COLUMN intervention text;           -- scamWarning, …, none
ALTER TABLE consumption_reports ADD COLUMN template_id text;
ALTER TABLE consumption_reports ADD COLUMN template_version bigint;
ALTER TABLE consumption_reports ADD COLUMN shown_at bigint;
ALTER TABLE consumption_reports ADD COLUMN response text;               -- proceeded, abandoned, …
ALTER TABLE consumption_reports ADD COLUMN hold_started_at bigint;
ALTER TABLE consumption_reports ADD COLUMN hold_ended_at bigint;
ALTER TABLE consumption_reports ADD COLUMN hold_told_at bigint;

-- Each tenant's catalogue of interventions, per environment (migrations/sqlite/0025_interventions.sql).
CREATE TABLE intervention_templates (
    tenant      text NOT NULL,
    environment text NOT NULL,
    template_id text NOT NULL,
    version     bigint NOT NULL,
    kind        text NOT NULL,
    scam_types  text NOT NULL,
    description text NOT NULL,
    created_at  bigint NOT NULL,
    retired_at  bigint,
    PRIMARY KEY (tenant, environment, template_id, version)
);

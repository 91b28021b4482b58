-- Worker run records and archived conversations (issue 14).
--
-- worker_runs: one row per maintenance run (decay, promote, archive, dedup, ...): when, for whom, what it examined
-- and changed (summary), and what `agentx-memory worker undo RUN_ID` needs to restore the state before it (changes:
-- a JSON array, one element per changed item with its value before the run). A run undone keeps its row, with
-- status 'undone' and what the undo did.
CREATE TABLE IF NOT EXISTS worker_runs (
    run_id       TEXT PRIMARY KEY,
    job          TEXT NOT NULL,
    user_id      TEXT,
    started_at   TIMESTAMPTZ NOT NULL,
    finished_at  TIMESTAMPTZ,
    status       TEXT NOT NULL,
    summary      JSONB NOT NULL DEFAULT '{}'::jsonb,
    changes      JSONB NOT NULL DEFAULT '[]'::jsonb,
    undone_at    TIMESTAMPTZ,
    undo_summary JSONB
);
CREATE INDEX IF NOT EXISTS idx_worker_runs_job ON worker_runs (job, started_at DESC);

-- Conversations past retention are archived: their turns leave default recall and stay in the log.
ALTER TABLE conversation_logs ADD COLUMN IF NOT EXISTS archived BOOLEAN NOT NULL DEFAULT FALSE;

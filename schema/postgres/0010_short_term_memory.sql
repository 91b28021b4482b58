-- The short-term tier (seed 002 "AgentShortTermMemory", issue 16): per-session entries with a TTL, counted on every
-- read. One row per (user, session, key); an expired row reads as absent and waits for the ``short_term`` job, which
-- promotes rows read often (access_count >= short_term.promote_access_count) to long-term facts and deletes expired
-- rows read less. The two indexes let that job find both kinds without scanning the table.
CREATE TABLE IF NOT EXISTS short_term_memory (
    user_id          TEXT NOT NULL,
    session_id       TEXT NOT NULL,
    memory_key       TEXT NOT NULL,
    agent_id         TEXT,
    memory_value     JSONB NOT NULL,
    memory_type      TEXT NOT NULL CHECK (memory_type IN
                         ('task_context', 'conversation', 'tool_result', 'reflection', 'observation')),
    ttl_seconds      INTEGER NOT NULL CHECK (ttl_seconds > 0),
    expires_at       TIMESTAMPTZ NOT NULL,
    access_count     INTEGER NOT NULL DEFAULT 0 CHECK (access_count >= 0),
    last_accessed_at TIMESTAMPTZ,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    PRIMARY KEY (user_id, session_id, memory_key)
);
CREATE INDEX IF NOT EXISTS idx_short_term_expires ON short_term_memory (expires_at);
CREATE INDEX IF NOT EXISTS idx_short_term_access ON short_term_memory (access_count);

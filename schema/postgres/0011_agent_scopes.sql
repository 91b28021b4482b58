-- Agents (seeds 001 and 002, issue 16): a memory may be written by one of the user's agents (agent_id) and be
-- private to it (scope 'agent') or shared by all the user's agents (scope 'global'). Rows written before agents
-- existed are the user's own: no agent, global. Reads as an agent see global rows and their own private ones; the
-- predicate runs on the user's rows the other indexes already found, so it needs no index of its own.
ALTER TABLE conversation_logs ADD COLUMN IF NOT EXISTS agent_id TEXT;
ALTER TABLE conversation_logs ADD COLUMN IF NOT EXISTS scope TEXT NOT NULL DEFAULT 'global'
    CHECK (scope IN ('agent', 'global'));
ALTER TABLE memory_timeline ADD COLUMN IF NOT EXISTS agent_id TEXT;
ALTER TABLE memory_timeline ADD COLUMN IF NOT EXISTS scope TEXT NOT NULL DEFAULT 'global'
    CHECK (scope IN ('agent', 'global'));

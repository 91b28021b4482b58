-- Shared memory pools (seed 002, issue 16): data agents of one user share under an access control list. A pool
-- belongs to its user (the tenant, the seed's "account") and its owner agent; its data is one JSON object, written
-- with optimistic concurrency (version goes up by one per write, a write naming an older version is refused).
-- access_control is {"read": [agent ids], "write": [agent ids], "public_read": bool}; write implies read. A pool
-- past expires_at is treated as absent by every read and write and deleted by the cleanup job.
CREATE TABLE IF NOT EXISTS memory_pools (
    user_id          TEXT NOT NULL,
    pool_id          TEXT NOT NULL,
    pool_type        TEXT NOT NULL
        CHECK (pool_type IN ('shared', 'agent_private', 'team_shared', 'task_scoped')),
    scope            TEXT NOT NULL CHECK (scope IN ('global', 'account', 'team', 'agent', 'task')),
    owner_agent_id   TEXT NOT NULL,
    data             JSONB NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(data) = 'object'),
    access_control   JSONB NOT NULL DEFAULT '{"read": [], "write": [], "public_read": false}'::jsonb,
    version          INTEGER NOT NULL DEFAULT 1 CHECK (version >= 1),
    expires_at       TIMESTAMPTZ,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    read_count       BIGINT NOT NULL DEFAULT 0,
    write_count      BIGINT NOT NULL DEFAULT 0,
    last_accessed_at TIMESTAMPTZ,
    PRIMARY KEY (user_id, pool_id)
);
-- The expiry sweep finds expired pools of every user without a scan.
CREATE INDEX IF NOT EXISTS idx_memory_pools_expires ON memory_pools (expires_at) WHERE expires_at IS NOT NULL;

-- agentx-memory PostgreSQL schema, version 1 (spec 003 "PostgreSQL Schema").
-- The runner replaces :embedding_dim with the configured embedding dimension (an integer setting, never user data)
-- and runs this file with search_path set to the configured schema, then public (where pgvector lives).
--
-- Deviations from spec 003, on purpose:
--  * conversation_id is VARCHAR(200), not UUID: agents bring their own ids (UUIDs are accepted as text).
--  * every table carries user_id: every query filters by user inside the query.
--  * conversation_logs has turn_id (the graph Turn id), projected (graph projection done, for reconcile()),
--    and content_tsv, a generated tsvector with a GIN index (PostgreSQL full text is our strongest lexical signal).
--  * vector indexes are HNSW, not IVFFlat: IVFFlat built on an empty table learns no useful lists.

CREATE TABLE IF NOT EXISTS agentx_meta (
    key   VARCHAR(100) PRIMARY KEY,
    value JSONB NOT NULL
);

CREATE TABLE IF NOT EXISTS conversation_logs (
    id              BIGSERIAL PRIMARY KEY,
    turn_id         VARCHAR(100) NOT NULL UNIQUE,
    user_id         VARCHAR(100) NOT NULL,
    conversation_id VARCHAR(200) NOT NULL,
    turn_index      INTEGER NOT NULL,
    timestamp       TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    role            VARCHAR(20) NOT NULL,
    content         TEXT NOT NULL,
    content_hash    VARCHAR(64),
    token_count     INTEGER,
    model           VARCHAR(100),
    channel         VARCHAR(100) NOT NULL DEFAULT '_global',
    metadata        JSONB NOT NULL DEFAULT '{}',
    embedding       vector(:embedding_dim),
    projected       BOOLEAN NOT NULL DEFAULT FALSE,
    content_tsv     tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    UNIQUE (conversation_id, turn_index)
);

CREATE INDEX IF NOT EXISTS idx_logs_timestamp ON conversation_logs USING BRIN (timestamp);
CREATE INDEX IF NOT EXISTS idx_logs_conversation ON conversation_logs (conversation_id);
CREATE INDEX IF NOT EXISTS idx_logs_channel ON conversation_logs (channel);
CREATE INDEX IF NOT EXISTS idx_logs_user_channel_time ON conversation_logs (user_id, channel, timestamp);
CREATE INDEX IF NOT EXISTS idx_logs_unprojected ON conversation_logs (id) WHERE NOT projected;
CREATE INDEX IF NOT EXISTS idx_logs_content_tsv ON conversation_logs USING GIN (content_tsv);
CREATE INDEX IF NOT EXISTS idx_logs_embedding ON conversation_logs USING hnsw (embedding vector_cosine_ops);

CREATE TABLE IF NOT EXISTS memory_timeline (
    id               BIGSERIAL PRIMARY KEY,
    user_id          VARCHAR(100) NOT NULL,
    memory_type      VARCHAR(50) NOT NULL,
    neo4j_node_id    VARCHAR(100),
    event_time       TIMESTAMPTZ NOT NULL,
    summary          TEXT,
    embedding        vector(:embedding_dim),
    importance_score FLOAT DEFAULT 0.5,
    access_count     INTEGER DEFAULT 0,
    last_accessed    TIMESTAMPTZ,
    channel          VARCHAR(100) NOT NULL DEFAULT '_global',
    archived         BOOLEAN DEFAULT FALSE,
    metadata         JSONB NOT NULL DEFAULT '{}',
    summary_tsv      tsvector GENERATED ALWAYS AS (to_tsvector('english', coalesce(summary, ''))) STORED
);

CREATE UNIQUE INDEX IF NOT EXISTS idx_timeline_node ON memory_timeline (memory_type, neo4j_node_id);
CREATE INDEX IF NOT EXISTS idx_timeline_time ON memory_timeline USING BRIN (event_time);
CREATE INDEX IF NOT EXISTS idx_timeline_type ON memory_timeline (memory_type);
CREATE INDEX IF NOT EXISTS idx_timeline_importance ON memory_timeline (importance_score DESC);
CREATE INDEX IF NOT EXISTS idx_timeline_channel ON memory_timeline (channel);
CREATE INDEX IF NOT EXISTS idx_timeline_user_channel_time ON memory_timeline (user_id, channel, event_time);
CREATE INDEX IF NOT EXISTS idx_timeline_summary_tsv ON memory_timeline USING GIN (summary_tsv);
CREATE INDEX IF NOT EXISTS idx_timeline_embedding ON memory_timeline USING hnsw (embedding vector_cosine_ops);

CREATE TABLE IF NOT EXISTS tool_invocations (
    id              BIGSERIAL PRIMARY KEY,
    invocation_id   VARCHAR(100) NOT NULL UNIQUE,
    user_id         VARCHAR(100) NOT NULL,
    conversation_id VARCHAR(200) NOT NULL,
    turn_index      INTEGER NOT NULL,
    turn_id         VARCHAR(100),
    timestamp       TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    tool_name       VARCHAR(100) NOT NULL,
    task_type       VARCHAR(100),
    tool_input      JSONB NOT NULL,
    tool_output     JSONB,
    success         BOOLEAN,
    latency_ms      INTEGER,
    error_message   TEXT,
    channel         VARCHAR(100) NOT NULL DEFAULT '_global'
);

CREATE INDEX IF NOT EXISTS idx_tools_conversation ON tool_invocations (conversation_id);
CREATE INDEX IF NOT EXISTS idx_tools_name ON tool_invocations (tool_name);
CREATE INDEX IF NOT EXISTS idx_tools_timestamp ON tool_invocations USING BRIN (timestamp);
CREATE INDEX IF NOT EXISTS idx_tools_channel ON tool_invocations (channel);
CREATE INDEX IF NOT EXISTS idx_tools_user_channel ON tool_invocations (user_id, channel, tool_name);

CREATE TABLE IF NOT EXISTS user_profiles (
    user_id             VARCHAR(100) PRIMARY KEY,
    created_at          TIMESTAMPTZ DEFAULT NOW(),
    updated_at          TIMESTAMPTZ DEFAULT NOW(),
    preferences         JSONB DEFAULT '{}',
    expertise_areas     JSONB DEFAULT '[]',
    communication_style JSONB DEFAULT '{}',
    metadata            JSONB DEFAULT '{}'
);

CREATE TABLE IF NOT EXISTS memory_audit_log (
    id                           BIGSERIAL,
    timestamp                    TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    operation                    VARCHAR(50) NOT NULL,
    memory_type                  VARCHAR(50) NOT NULL,
    user_id                      VARCHAR(100),
    session_id                   VARCHAR(100),
    conversation_id              VARCHAR(200),
    source_channel               VARCHAR(100),
    target_channels              TEXT[],
    query_text                   TEXT,
    result_count                 INTEGER,
    latency_ms                   INTEGER,
    success                      BOOLEAN DEFAULT TRUE,
    error_message                TEXT,
    promoted_from_channel        VARCHAR(100),
    promotion_confidence         FLOAT,
    promotion_access_count       INTEGER,
    promotion_conversation_count INTEGER,
    config_snapshot              JSONB DEFAULT '{}',
    metadata                     JSONB DEFAULT '{}',
    PRIMARY KEY (id, timestamp)
) PARTITION BY RANGE (timestamp);

CREATE INDEX IF NOT EXISTS idx_audit_user ON memory_audit_log (user_id, timestamp);
CREATE INDEX IF NOT EXISTS idx_audit_session ON memory_audit_log (session_id, timestamp);
CREATE INDEX IF NOT EXISTS idx_audit_operation ON memory_audit_log (operation, timestamp);
CREATE INDEX IF NOT EXISTS idx_audit_memory_type ON memory_audit_log (memory_type, timestamp);
CREATE INDEX IF NOT EXISTS idx_audit_source_channel ON memory_audit_log (source_channel, timestamp);

-- Daily partitions: memory_audit_log_YYYYMMDD holds [day, day + 1) in UTC.
CREATE OR REPLACE FUNCTION create_audit_partitions(days_ahead INTEGER, from_day DATE DEFAULT (NOW() AT TIME ZONE 'UTC')::date)
RETURNS INTEGER LANGUAGE plpgsql AS $$
DECLARE
    day DATE;
    part TEXT;
    created INTEGER := 0;
BEGIN
    FOR i IN 0..days_ahead LOOP
        day := from_day + i;
        part := 'memory_audit_log_' || to_char(day, 'YYYYMMDD');
        IF to_regclass(format('%I.%I', current_schema(), part)) IS NULL THEN
            EXECUTE format(
                'CREATE TABLE IF NOT EXISTS %I.%I PARTITION OF %I.memory_audit_log FOR VALUES FROM (%L) TO (%L)',
                current_schema(), part, current_schema(),
                (day::timestamp AT TIME ZONE 'UTC'), ((day + 1)::timestamp AT TIME ZONE 'UTC'));
            created := created + 1;
        END IF;
    END LOOP;
    RETURN created;
END;
$$;

CREATE OR REPLACE FUNCTION drop_old_audit_partitions(retention_days INTEGER)
RETURNS INTEGER LANGUAGE plpgsql AS $$
DECLARE
    part RECORD;
    cutoff DATE := (NOW() AT TIME ZONE 'UTC')::date - retention_days;
    dropped INTEGER := 0;
BEGIN
    FOR part IN
        SELECT c.relname
        FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_class p ON p.oid = i.inhparent
        JOIN pg_namespace n ON n.oid = p.relnamespace
        WHERE p.relname = 'memory_audit_log' AND n.nspname = current_schema()
          AND c.relname ~ '^memory_audit_log_[0-9]{8}$'
    LOOP
        IF to_date(right(part.relname, 8), 'YYYYMMDD') < cutoff THEN
            EXECUTE format('DROP TABLE %I.%I', current_schema(), part.relname);
            dropped := dropped + 1;
        END IF;
    END LOOP;
    RETURN dropped;
END;
$$;

SELECT create_audit_partitions(7, (NOW() AT TIME ZONE 'UTC')::date - 1);

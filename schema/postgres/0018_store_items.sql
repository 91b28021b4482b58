-- Namespaced items (issue 18, the LangGraph store): JSON documents under a key of a namespace path of one user, for
-- the facade's put_item / get_item / search_items / list_item_namespaces and agentx_memory.integrations.langgraph.
--
-- One row per (user, namespace, key). ``namespace`` is the path below the user (it may be empty). ``agent_id`` is the
-- agent the item belongs to (NULL: the user's, read by every agent of the user), ``channel`` the channel it was
-- filed under. ``search_text`` is what was embedded for semantic search (NULL: the item is not searchable by
-- meaning); ``embedding`` its vector. A re-embed re-types the column and empties it (sql/reembed.RETYPED_TABLES);
-- the next search by meaning embeds those rows again from ``search_text``.
--
-- ``ttl_minutes`` / ``expires_at``: an item with a TTL expires that long after its last write or read (a read
-- refreshes it when asked to); an expired row reads as absent and is deleted by the user's next write.
--
-- No HNSW index on purpose: a search is always within one user (and a namespace prefix), ranked exactly, as the
-- episodic summaries are; an approximate index filtered afterwards would drop matches.
CREATE TABLE IF NOT EXISTS store_items (
    user_id      TEXT NOT NULL,
    namespace    TEXT[] NOT NULL,
    item_key     TEXT NOT NULL,
    agent_id     TEXT,
    channel      TEXT NOT NULL DEFAULT '_global',
    value        JSONB NOT NULL CHECK (jsonb_typeof(value) = 'object'),
    search_text  TEXT,
    embedding    vector(:embedding_dim),
    ttl_minutes  DOUBLE PRECISION CHECK (ttl_minutes > 0),
    expires_at   TIMESTAMPTZ,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    PRIMARY KEY (user_id, namespace, item_key)
);
CREATE INDEX IF NOT EXISTS idx_store_items_expires ON store_items (user_id, expires_at) WHERE expires_at IS NOT NULL;

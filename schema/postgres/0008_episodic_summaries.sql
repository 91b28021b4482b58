-- Episodic summaries (spec 000 "Episodic Memory", issue 15): one summary per conversation, with its key decisions,
-- the entities it mentioned and the tools it called, embedded for "similar past conversations". Kept per user and
-- channel; a conversation summarized again replaces its row.
CREATE TABLE IF NOT EXISTS episodic_summaries (
    user_id            TEXT NOT NULL,
    conversation_id    TEXT NOT NULL,
    channel            TEXT NOT NULL,
    summary            TEXT NOT NULL,
    key_decisions      JSONB NOT NULL DEFAULT '[]'::jsonb,
    entities_mentioned JSONB NOT NULL DEFAULT '[]'::jsonb,
    tools_called       JSONB NOT NULL DEFAULT '[]'::jsonb,
    turn_count         INTEGER NOT NULL,
    method             TEXT NOT NULL,
    embedding          vector(:embedding_dim),
    created_at         TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    updated_at         TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    PRIMARY KEY (user_id, conversation_id)
);
CREATE INDEX IF NOT EXISTS idx_episodic_summaries_embedding ON episodic_summaries
    USING hnsw (embedding vector_cosine_ops);

-- Saved working memory (seed 002 "persist_to_database" / "load_from_database", issue 19): one row per
-- (user, channel, conversation), replaced on each save. ``entries`` holds every Redis key of that session (recent
-- turns, context values with their per-field expiry, goal, thoughts, the spec-000 conversation hash, the injection
-- ledger) as plain JSON, each with the time it had left to live when saved; ``saved_at`` says when.
CREATE TABLE IF NOT EXISTS working_memory_saves (
    user_id          TEXT NOT NULL,
    channel          TEXT NOT NULL,
    conversation_id  TEXT NOT NULL,
    entries          JSONB NOT NULL,
    saved_at         TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    PRIMARY KEY (user_id, channel, conversation_id)
);

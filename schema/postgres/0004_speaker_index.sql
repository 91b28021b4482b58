-- Who spoke a turn (metadata.speaker), case-folded, per user: the speaker boost asks "is this name a participant of
-- this user's conversations?" with an index lookup instead of scanning the user's turns.
CREATE INDEX IF NOT EXISTS idx_logs_user_speaker ON conversation_logs (user_id, lower(metadata->>'speaker'))
    WHERE metadata ? 'speaker';

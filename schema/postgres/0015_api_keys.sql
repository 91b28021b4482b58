-- API keys of the REST service (issue 18): each key acts for one user, optionally as one agent of the user and
-- only in some channels. Only a hash of the key is kept (``key_hash``: SHA-256 of the whole token, hex): the token
-- itself is shown once, when the key is made. ``key_id`` is the public part of the token (``axm_<key_id>_<secret>``)
-- that finds the row; the hash is then compared in constant time. A revoked key keeps its row (``revoked_at``) so
-- ``keys list`` can still say what it was.
CREATE TABLE IF NOT EXISTS api_keys (
    key_id       TEXT PRIMARY KEY,
    key_hash     TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    agent_id     TEXT,
    channels     TEXT[] NOT NULL DEFAULT '{}',
    name         TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    revoked_at   TIMESTAMPTZ
);

CREATE INDEX IF NOT EXISTS idx_api_keys_user ON api_keys (user_id, created_at);

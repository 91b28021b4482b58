-- The turns' full-text index keyed by user. The lexical leg of recall finds a user's turns that say any word of the
-- question; through a GIN index of context_tsv alone, PostgreSQL read each word's posting list over every user's
-- turns and intersected it with the user's rows (100k-turn bench, busiest user, a five-word question: 15,091 postings
-- for 1,565 of the user's turns), so the search grew with the whole table, not with the user. user_lexemes() is a
-- turn's lexemes each prefixed with its user (the id's length, a colon, the id: no two users share a prefix, and no
-- hash function is needed, which FIPS builds may refuse), and the index of it hands a question's words (prefixed the
-- same way, sql/search.py) the posting lists of that user's turns alone. The search still filters by user_id.
CREATE OR REPLACE FUNCTION user_lexemes(user_id text, doc tsvector) RETURNS tsvector
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN array_to_tsvector(ARRAY(
        SELECT length(user_id) || ':' || user_id || lexeme FROM unnest(tsvector_to_array(doc)) AS lexeme));

CREATE INDEX IF NOT EXISTS idx_logs_user_lexemes ON conversation_logs USING GIN (user_lexemes(user_id, context_tsv));

-- Nothing searches context_tsv through its own index any more; keeping it up to date cost every turn written.
DROP INDEX IF EXISTS idx_logs_context_tsv;

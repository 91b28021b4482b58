-- The turns' full-text index keyed by user. The lexical leg of recall finds a user's turns that say any word of the
-- question; through a GIN index of context_tsv alone, PostgreSQL read each word's posting list over every user's
-- turns and intersected it with the user's rows (100k-turn bench, busiest user, a five-word question: 15,091 postings
-- for 1,565 of the user's turns), so the search grew with the whole table, not with the user. user_lexemes() is a
-- turn's lexemes each prefixed with user_key(), 8 characters of the user id's SHA-256 (a fixed length, so a long id
-- does not lengthen every lexeme; not md5, which FIPS builds refuse), and the index of it hands a question's words
-- (prefixed the same way, sql/search.py) the posting lists of that user's turns alone. Two users whose keys collide
-- only share posting lists: the search still filters by user_id, so the key never keeps tenants apart.
-- (convert_to is declared STABLE for its encoding lookup; with the encoding named, its result depends on the id alone.)
CREATE OR REPLACE FUNCTION user_key(user_id text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN left(encode(sha256(convert_to(user_id, 'UTF8')), 'base64'), 8);

-- A lexeme the prefix would take past PostgreSQL's 2,046 bytes is left out (the question's side leaves it out too),
-- and so are the last lexemes of a turn whose prefixed copy would pass a tsvector's 1 MB: such a turn is still
-- stored whole, and found by its other words.
CREATE OR REPLACE FUNCTION user_lexemes(user_id text, doc tsvector) RETURNS tsvector
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN array_to_tsvector(ARRAY(
        SELECT keyed.lexeme FROM (
            SELECT k.key || lexeme AS lexeme,
                   sum(octet_length(lexeme) + 16) OVER (ORDER BY lexeme) AS bytes
            FROM (SELECT user_key(user_id) AS key) AS k, unnest(tsvector_to_array(doc)) AS lexeme) AS keyed
        WHERE octet_length(keyed.lexeme) <= 2046 AND keyed.bytes < 1000000));

CREATE INDEX IF NOT EXISTS idx_logs_user_lexemes ON conversation_logs USING GIN (user_lexemes(user_id, context_tsv));

-- Nothing searches context_tsv through its own index any more; keeping it up to date cost every turn written.
DROP INDEX IF EXISTS idx_logs_context_tsv;

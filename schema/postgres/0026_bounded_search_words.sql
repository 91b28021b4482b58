-- A text's words are indexed as far as one tsvector holds them. PostgreSQL refuses a tsvector whose lexemes and
-- positions pass 1 MB ("string is too long for tsvector", SQLSTATE 54000), and a text of mostly distinct words
-- reaches that well under a turn's 1 MiB limit (90,000 different 8-letter words, 810 KB of text, make 1.08 MB of
-- tsvector). Such a turn's insert failed with a storage error, and so did a question, a fact's summary or a
-- neighbour's insert whose context took in those words. Now the text is stored whole and searched by its first words
-- that fit (the vector leg reads its passages as before).

-- The most bytes of text whose tsvector always fits: a lexeme costs its bytes, padded to two, plus two bytes of count
-- and two a position, at most three times the text it came from (a one-letter word and its space). A function, so the
-- three uses below name one value (PostgreSQL folds it into a constant where it is inlined).
CREATE OR REPLACE FUNCTION tsvector_safe_text_bytes() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 349525;

-- The words of a text past what a tsvector holds, cut to the longest prefix (in steps of a quarter) whose tsvector
-- PostgreSQL accepts. Only search_words() calls it, for texts over tsvector_safe_text_bytes(). (Given the bound, its
-- body names nothing outside pg_catalog whatever the search_path.)
CREATE OR REPLACE FUNCTION words_that_fit(words text, safe_bytes integer) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
BEGIN
    LOOP
        IF octet_length(words) <= safe_bytes THEN
            RETURN words;
        END IF;
        BEGIN
            PERFORM to_tsvector('english', words);
            RETURN words;
        EXCEPTION WHEN program_limit_exceeded THEN
            words := left(words, length(words) * 3 / 4);
        END;
    END LOOP;
END
$$;

-- 0021's search_words() under its own name: a slash, and a dot between two letters or digits, split words.
CREATE OR REPLACE FUNCTION split_search_words(text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN regexp_replace(translate($1, '/', ' '), '([[:alnum:]])\.(?=[[:alnum:]])', '\1 ', 'g');

-- search_words() as in 0021, its result bounded by words_that_fit(). Every generated column and query that indexes
-- text goes through it, so each is bounded the same way, and a question is cut exactly as a turn of the same text.
-- Not STRICT any more: PostgreSQL inlines a STRICT SQL function only when its body is strict too, and a CASE is not
-- (called instead of inlined it cost 17 % more to index 100k short turns); NULL still gives NULL.
CREATE OR REPLACE FUNCTION search_words(text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN octet_length($1) <= tsvector_safe_text_bytes() THEN split_search_words($1)
        ELSE words_that_fit(split_search_words($1), tsvector_safe_text_bytes())
    END;

-- A turn's own words (weight A) and its neighbours' (weight B) may each fit and still pass 1 MB together: the
-- neighbours' words are then cut (in steps of a quarter) until both fit; the turn's own always do. (It is given
-- their tsvector and words, not the texts, so its body names nothing outside pg_catalog whatever the search_path.)
CREATE OR REPLACE FUNCTION context_that_fits(mine tsvector, theirs text) RETURNS tsvector
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
BEGIN
    LOOP
        BEGIN
            RETURN mine || setweight(to_tsvector('english', theirs), 'B');
        EXCEPTION WHEN program_limit_exceeded THEN
            theirs := left(theirs, length(theirs) * 3 / 4);
        END;
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION turn_context_tsv(own text, before text, after text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN coalesce(octet_length(own), 0) + coalesce(octet_length(before), 0) + coalesce(octet_length(after), 0)
             <= tsvector_safe_text_bytes()
            THEN setweight(to_tsvector('english', search_words(own)), 'A')
                 || setweight(to_tsvector('english', search_words(coalesce(before, '') || ' ' || coalesce(after, ''))), 'B')
        ELSE context_that_fits(setweight(to_tsvector('english', search_words(own)), 'A'),
                               search_words(coalesce(before, '') || ' ' || coalesce(after, '')))
    END;

-- A turn's keyed lexemes (0025) past a tsvector's 1 MB are left out from its last words, not from the end of the
-- alphabet: a turn too wordy to key whole is found by its first words, as its own tsvector above. (A keyed lexeme
-- costs its bytes, the key's 8 among them, and one of padding at most; a lexeme without positions nothing more.) A
-- turn whose keyed lexemes all fit, every turn but such a one, is keyed without ordering them (keying 100k short turns'
-- contexts: 5.0 s as 0025 did, 5.8 s when every turn took the ordered path).
CREATE OR REPLACE FUNCTION user_lexemes(user_id text, doc tsvector) RETURNS tsvector
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN array_to_tsvector(CASE
        WHEN (SELECT sum(octet_length(lexeme) + 9) FROM unnest(tsvector_to_array(doc)) AS lexeme) <= 1048575
            THEN ARRAY(SELECT k.key || lexeme FROM (SELECT user_key(user_id) AS key) AS k,
                                                 unnest(tsvector_to_array(doc)) AS lexeme
                       WHERE octet_length(lexeme) <= 2046 - 8)
        ELSE ARRAY(
            SELECT keyed.lexeme FROM (
                SELECT k.key || word.lexeme AS lexeme,
                       sum(octet_length(word.lexeme) + 9) OVER (ORDER BY word.positions[1] NULLS LAST, word.lexeme)
                           AS bytes
                FROM (SELECT user_key(user_id) AS key) AS k, unnest(doc) AS word) AS keyed
            WHERE octet_length(keyed.lexeme) <= 2046 AND keyed.bytes <= 1048575)
    END);

-- The index holds each turn's keyed lexemes as the old definition chose them; a turn past 1 MB of them would keep its
-- alphabetically first ones in it. Rebuilt once (about as long as 0025's build: 5 s per 100k turns here).
REINDEX INDEX idx_logs_user_lexemes;

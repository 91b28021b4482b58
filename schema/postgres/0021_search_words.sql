-- The words turns and memory summaries are searched by. PostgreSQL's text parser keeps "maxima/minima", "CI/CD",
-- "/api/login" whole as one file-path token, and "socket.io", "io.on" or "Node.js" whole as a host name, so neither
-- word of them matched a question that says them apart ("Have I completed any maxima or minima problems?" missed "I
-- completed 7 maxima/minima problems"). In BEAM's technical chats 11,000 words are such paths and 41,000 such host
-- names. search_words() splits them, a slash anywhere and a dot between two letters or digits, before the turn text
-- and the question are made into words (sql/search.py, sql/conversation_log.py); the question goes through the same
-- function, so "socket.io" in a question still matches "socket.io" in a turn. The timeline's summaries (facts,
-- entities) are searched by the same words.
CREATE OR REPLACE FUNCTION search_words(text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN regexp_replace(translate($1, '/', ' '), '([[:alnum:]])\.(?=[[:alnum:]])', '\1 ', 'g');

-- A turn's full-text context from its content and its neighbours' (either may be NULL): its own words with weight A,
-- theirs with weight B. The one definition the insert, the recompute of a batch's stored neighbours
-- (sql/conversation_log.py) and the re-index below share.
CREATE OR REPLACE FUNCTION turn_context_tsv(own text, before text, after text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN setweight(to_tsvector('english', search_words(own)), 'A')
        || setweight(to_tsvector('english', search_words(coalesce(before, '') || ' ' || coalesce(after, ''))), 'B');

-- Every stored turn re-indexed with it (its neighbours as 0002 found them) ...
UPDATE conversation_logs AS c
SET context_tsv = turn_context_tsv(c.content, p.content, n.content)
FROM conversation_logs AS self
LEFT JOIN conversation_logs AS p ON p.conversation_id = self.conversation_id AND p.turn_index = self.turn_index - 1
LEFT JOIN conversation_logs AS n ON n.conversation_id = self.conversation_id AND n.turn_index = self.turn_index + 1
WHERE self.id = c.id;

-- ... and its own words alone (the phrase signal and the length BM25 normalises by). Dropping and adding the generated
-- column (not SET EXPRESSION, PostgreSQL 17+) rewrites the table once, which also leaves none of the row versions the
-- update above made behind in the indexes.
DROP INDEX IF EXISTS idx_logs_content_tsv;
ALTER TABLE conversation_logs DROP COLUMN content_tsv;
ALTER TABLE conversation_logs
    ADD COLUMN content_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', search_words(content))) STORED;
CREATE INDEX idx_logs_content_tsv ON conversation_logs USING GIN (content_tsv);

-- The timeline's summaries likewise (a fact may say "deploys with Node.js" as well as a turn).
DROP INDEX IF EXISTS idx_timeline_summary_tsv;
ALTER TABLE memory_timeline DROP COLUMN summary_tsv;
ALTER TABLE memory_timeline
    ADD COLUMN summary_tsv tsvector
        GENERATED ALWAYS AS (to_tsvector('english', search_words(coalesce(summary, '')))) STORED;
CREATE INDEX idx_timeline_summary_tsv ON memory_timeline USING GIN (summary_tsv);

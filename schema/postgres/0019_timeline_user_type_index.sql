-- The recall's full-text leg over facts and entities (LEXICAL_TIMELINE) reads one user's rows of two memory types in
-- the channels searched. The timeline holds every turn too (most of its rows), so without this index PostgreSQL
-- intersected the user's rows of every type with every user's facts and entities (both bitmaps thousands of rows
-- long) before it checked a single summary; keyed by user and type, the index hands it that user's facts and
-- entities alone (100k-turn bench, busiest user: 2.3 -> 0.5 ms a search).
CREATE INDEX IF NOT EXISTS idx_timeline_user_type_channel ON memory_timeline (user_id, memory_type, channel);

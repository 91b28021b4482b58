-- A turn's row keeps its vector in the row. pgvector stores vectors EXTERNAL, and PostgreSQL moves a row's largest
-- such values to the TOAST table once the row passes 2 kB: a 384-dimension vector is 1.5 kB, so with the turn's text,
-- its two tsvectors and its metadata 95 % of the bench's turns (14 words each) had their vector out of line, and the
-- exact scan of a user's turns read every vector through the TOAST index. With rows kept whole up to 4 kB (vectors of
-- up to ~800 dimensions beside a short turn; a long turn's text is compressed and moved out first, as before), the
-- turn-candidates statement of a user with 3,900 / 7,600 / 11,100 turns took 19 / 27 / 31 ms instead of 23 / 37 / 43
-- (100k bench, copies of the same rows). Rows written before this keep their out-of-line vectors until rewritten
-- (VACUUM FULL conversation_logs, in a maintenance window: it locks the table), so upgrading does not stall on it.
ALTER TABLE conversation_logs SET (toast_tuple_target = 4080);

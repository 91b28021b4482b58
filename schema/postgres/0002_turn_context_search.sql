-- Neighbour-context full text: each turn is indexed together with its previous and next turn of the same
-- conversation: its own words with weight A, the neighbours' with weight B (ts_rank weighs A 1.0, B 0.4). Answers
-- often sit across a question/answer pair, so the context finds the right turn when its own words do not
-- (measured on LoCoMo: docs/benchmarks.md). Maintained by the write path (sql/search.py UPDATE_CONTEXT_TSV) in the
-- same transaction as the insert.
ALTER TABLE conversation_logs ADD COLUMN IF NOT EXISTS context_tsv tsvector;
CREATE INDEX IF NOT EXISTS idx_logs_context_tsv ON conversation_logs USING GIN (context_tsv);
UPDATE conversation_logs AS c
SET context_tsv = setweight(to_tsvector('english', c.content), 'A')
               || setweight(to_tsvector('english', coalesce(p.content, '') || ' ' || coalesce(n.content, '')), 'B')
FROM conversation_logs AS self
LEFT JOIN conversation_logs AS p ON p.conversation_id = self.conversation_id AND p.turn_index = self.turn_index - 1
LEFT JOIN conversation_logs AS n ON n.conversation_id = self.conversation_id AND n.turn_index = self.turn_index + 1
WHERE self.id = c.id AND c.context_tsv IS NULL;

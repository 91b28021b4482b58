-- Re-embedding after a model change (issue 16): a staging slot beside every re-embedded vector column.
--
-- embedding_next holds the vector of the *target* model while a re-embed runs; the live embedding column keeps
-- serving recall until the switch. It is typed `vector` without a dimension on purpose: this file runs once, long
-- before anyone knows the target model's dimension, and pgvector accepts any dimension in an untyped column (it needs
-- one only to build an index, and nothing searches the staging slot). The switch re-types it to vector(D), which
-- pgvector checks row by row, before it becomes the live column.
--
-- embedding_next_src is a hash of (target model, dimension, source text) the staged vector was made from: a row
-- whose text changed since it was staged, or staged for another target, no longer matches and is staged again.
--
-- memory_timeline.embedding gets no slot: the engine never writes it (every value is NULL), so the switch only
-- re-types it.
ALTER TABLE conversation_logs ADD COLUMN IF NOT EXISTS embedding_next vector;
ALTER TABLE conversation_logs ADD COLUMN IF NOT EXISTS embedding_next_src TEXT;
ALTER TABLE episodic_summaries ADD COLUMN IF NOT EXISTS embedding_next vector;
ALTER TABLE episodic_summaries ADD COLUMN IF NOT EXISTS embedding_next_src TEXT;

-- memory_timeline.embedding keeps each fact's, entity's and goal's vector (spec 003 lists the column and an index on
-- it), but no statement searches the timeline by vector: recall ranks facts and entities in the graph, and reads the
-- timeline only by its full-text summaries. Its HNSW index was still updated by every fact, entity and goal written.
-- What that costs depends on the vectors: with bench scale's corpus (templated claims, tightly clustered) learn_facts
-- got 8 % faster on Neo4j and no faster on FalkorDB; with unclustered vectors it was most of learn_facts' time (4,003
-- facts in 8.7 s with the index, 3.3 s without, on Neo4j). The column stays (AgentMemory.timeline reports
-- has_embedding); an index for a vector search of the timeline belongs with the search that would read it.
DROP INDEX IF EXISTS idx_timeline_embedding;

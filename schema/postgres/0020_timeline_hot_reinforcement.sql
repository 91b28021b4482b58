-- Every recall counts an access on the facts and entities it returned (Timeline.reinforce: access_count + 1,
-- last_accessed = now). With last_accessed inside idx_timeline_rot_candidates, each of those updates changed an
-- indexed value, so none could be a heap-only (HOT) update: every row written anew into all eleven indexes,
-- the HNSW graph of the embeddings among them (100k-turn bench, median user: 20 rows, 10,600 buffers, 9.3 ms of
-- server time a recall, 0 HOT updates in 441,000). The rot index is now keyed by event_time, when the memory was
-- recorded (a fact's creation, an entity's first sighting): it is used only after that, so the rows idle since a
-- bound are among those recorded before it, and the job's read filters the rest (timeline.ROT_CANDIDATES). Free
-- space on each page lets the new row version stay on its page; it applies to pages written from now on.
DROP INDEX IF EXISTS idx_timeline_rot_candidates;
CREATE INDEX idx_timeline_rot_candidates ON memory_timeline (event_time, id)
    WHERE memory_type IN ('fact', 'entity') AND archived IS NOT TRUE;
ALTER TABLE memory_timeline SET (fillfactor = 80);

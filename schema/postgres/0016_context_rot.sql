-- Context-rot archival (seed 002, issue 19): the daily context_rot job reads the facts and entities idle since a
-- bound, oldest first, in pages (keyset on the idle time and id). This partial index is that read: only unarchived
-- facts and entities, keyed by when each was last used (its last access, else its first write), so the job never
-- scans the timeline's turns and goals nor the rows it archived already.
CREATE INDEX IF NOT EXISTS idx_timeline_rot_candidates
    ON memory_timeline ((coalesce(last_accessed, event_time)), id)
    WHERE memory_type IN ('fact', 'entity') AND archived IS NOT TRUE;

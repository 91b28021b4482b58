-- Reconcile quarantine (issue 11, items 2 and 18).
--
-- A log row that reconcile cannot project (its stored data is refused by the graph, cannot be read back, or fails
-- the id rules that keep values known to crash the graph server away from it) used to stay unprojected, so every
-- run retried it and, failing, left every other unprojected row behind. Such a row is now quarantined: why it
-- failed and when are recorded here, later runs skip it, and reconcile reports it. Clearing projection_error
-- (SET projection_error = NULL, projection_failed_at = NULL) puts a row back in the queue.
ALTER TABLE conversation_logs ADD COLUMN IF NOT EXISTS projection_error TEXT;
ALTER TABLE conversation_logs ADD COLUMN IF NOT EXISTS projection_failed_at TIMESTAMPTZ;

-- The reconcile queue: unprojected and not quarantined; and the quarantine itself (small, read for the report).
DROP INDEX IF EXISTS idx_logs_unprojected;
CREATE INDEX IF NOT EXISTS idx_logs_unprojected ON conversation_logs (id)
    WHERE NOT projected AND projection_error IS NULL;
CREATE INDEX IF NOT EXISTS idx_logs_quarantined ON conversation_logs (id) WHERE projection_error IS NOT NULL;

-- "projected" now means "in the graph and on the timeline": the store path marks a turn projected only after its
-- memory_timeline row is written. Turns marked projected before that (a crash or a PostgreSQL outage between the two
-- writes left some without a timeline row) go back to the queue once, so reconcile re-projects them (MERGE by id:
-- harmless) and writes their timeline rows (keep-first: idempotent).
UPDATE conversation_logs AS c SET projected = FALSE
WHERE c.projected AND NOT EXISTS (
    SELECT 1 FROM memory_timeline AS m WHERE m.memory_type = 'episodic' AND m.neo4j_node_id = c.turn_id
);

-- The reconcile queue of turns as its own table (issue 17: ingest).
--
-- A stored turn was written twice: inserted with projected = FALSE, then, once in the graph and on the timeline,
-- updated to projected = TRUE. `projected` sat in the predicate of idx_logs_unprojected, so that update could never
-- be HOT: it wrote a second version of the row and put it into every index of the table again, the HNSW graph of its
-- vector and both full-text GIN indexes among them (on a copy of the table, 29 % of the insert's own time).
--
-- A turn not yet projected is now a row of turn_projection_queue. A trigger queues every row the log takes, in the
-- inserting transaction, however it was written (the API, a restore, a row written by hand), as the column's default
-- did; the store path deletes the queue rows once its turns are in the graph and on the timeline, and the log row is
-- written once. Quarantine stays on the log row: reconcile skips a queued row with a projection_error, and setting
-- projection_error back to NULL returns it to the queue, as before.
CREATE TABLE IF NOT EXISTS turn_projection_queue (
    log_id BIGINT PRIMARY KEY REFERENCES conversation_logs (id) ON DELETE CASCADE
);

CREATE OR REPLACE FUNCTION queue_turn_projection() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO turn_projection_queue (log_id) VALUES (NEW.id);
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS queue_turn_projection ON conversation_logs;
CREATE TRIGGER queue_turn_projection AFTER INSERT ON conversation_logs
    FOR EACH ROW EXECUTE FUNCTION queue_turn_projection();

-- an installation that still has the column: its unprojected rows move to the queue, then the column goes
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
               AND table_name = 'conversation_logs' AND column_name = 'projected') THEN
        INSERT INTO turn_projection_queue (log_id) SELECT id FROM conversation_logs WHERE NOT projected
        ON CONFLICT DO NOTHING;
        DROP INDEX IF EXISTS idx_logs_unprojected;
        ALTER TABLE conversation_logs DROP COLUMN projected;
    END IF;
END $$;

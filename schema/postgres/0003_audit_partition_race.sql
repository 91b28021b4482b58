-- Two sessions creating the same day's audit partition at once: the loser's CREATE used to fail with
-- duplicate_table; now it counts as already there.
CREATE OR REPLACE FUNCTION create_audit_partitions(days_ahead INTEGER, from_day DATE DEFAULT (NOW() AT TIME ZONE 'UTC')::date)
RETURNS INTEGER LANGUAGE plpgsql AS $$
DECLARE
    day DATE;
    part TEXT;
    created INTEGER := 0;
BEGIN
    FOR i IN 0..days_ahead LOOP
        day := from_day + i;
        part := 'memory_audit_log_' || to_char(day, 'YYYYMMDD');
        IF to_regclass(format('%I.%I', current_schema(), part)) IS NULL THEN
            BEGIN
                EXECUTE format(
                    'CREATE TABLE %I.%I PARTITION OF %I.memory_audit_log FOR VALUES FROM (%L) TO (%L)',
                    current_schema(), part, current_schema(),
                    (day::timestamp AT TIME ZONE 'UTC'), ((day + 1)::timestamp AT TIME ZONE 'UTC'));
                created := created + 1;
            EXCEPTION WHEN duplicate_table OR unique_violation THEN
                NULL;  -- another session created it a moment ago
            END;
        END IF;
    END LOOP;
    RETURN created;
END;
$$;

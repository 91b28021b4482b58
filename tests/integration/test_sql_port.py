"""The PostgreSQL port on the session's embedded PostgreSQL: the error seam, the timeline's conflict policy and the
audit partitions' upkeep. No graph is involved, so these tests run once (not per graph backend).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from agentx_memory.audit import MemoryAuditLogger
from agentx_memory.errors import ConflictError, StorageError, StorageUnavailableError
from agentx_memory.settings import load_settings
from agentx_memory.sql import PostgresStore, Timeline, TimelineEntry, migrate
from agentx_memory.sql.errors import pg_errors
from agentx_memory.sql.postgres import drop_schema
from agentx_memory.sql.timeline import CONFLICT_POLICY, OnConflict
from tests.conftest import TEST_DIMENSION, TEST_MODEL, make_settings, run

StoreTest = Callable[[PostgresStore], Awaitable[Any]]


@pytest.fixture
def with_store(embedded_stack, embedded_home):
    """Runs ``body(store)`` on a pooled store over a freshly migrated schema (dropped afterwards)."""
    dsn = embedded_stack[1].postgres_dsn
    schema = make_settings(embedded_home).postgres.db_schema

    async def go(body: StoreTest) -> Any:
        await migrate(dsn, schema, dimension=TEST_DIMENSION, model=TEST_MODEL)
        store = PostgresStore(dsn, db_schema=schema, min_size=1, max_size=2)
        await store.open()
        try:
            return await body(store)
        finally:
            await store.close()

    yield lambda body: run(go(body))

    run(drop_schema(dsn, schema))


# --- the error seam --------------------------------------------------------------------------------------------------

_INSERT_TOOL = ("INSERT INTO tool_invocations (invocation_id, user_id, conversation_id, turn_index, tool_name,"
                " tool_input) VALUES ('i1', 'alice', 'c1', 0, 'search', '{}')")


def test_a_unique_violation_is_a_conflict_error_from_the_driver_error(with_store):
    async def body(store: PostgresStore) -> BaseException:
        await store.execute(_INSERT_TOOL)
        with pytest.raises(ConflictError) as caught:
            async with pg_errors("writing tool_invocations"), store.connection() as conn:
                await conn.execute(_INSERT_TOOL)
        return caught.value

    error = with_store(body)
    assert isinstance(error.__cause__, psycopg.errors.UniqueViolation)
    assert "writing tool_invocations" in str(error)


def test_the_store_itself_goes_through_the_seam(with_store):
    async def body(store: PostgresStore) -> tuple[BaseException, BaseException]:
        await store.execute(_INSERT_TOOL)
        with pytest.raises(ConflictError) as conflict:
            await store.execute(_INSERT_TOOL, what="recording a tool call")
        with pytest.raises(StorageError) as bad:
            await store.fetch("SELECT FROM WHERE nothing")
        return conflict.value, bad.value

    conflict, bad = with_store(body)
    assert isinstance(conflict.__cause__, psycopg.errors.UniqueViolation) and "recording a tool call" in str(conflict)
    assert type(bad) is StorageError and isinstance(bad.__cause__, psycopg.errors.SyntaxError)


@pytest.mark.parametrize(("sqlstate", "driver_error", "ours"), [
    ("foreign_key_violation", psycopg.errors.ForeignKeyViolation, ConflictError),
    ("exclusion_violation", psycopg.errors.ExclusionViolation, ConflictError),
    ("serialization_failure", psycopg.errors.SerializationFailure, StorageError),
    ("deadlock_detected", psycopg.errors.DeadlockDetected, StorageError),
    ("check_violation", psycopg.errors.CheckViolation, StorageError),
    ("undefined_table", psycopg.errors.UndefinedTable, StorageError),
    # past one of PostgreSQL's limits ("string is too long for tsvector", "stack depth limit exceeded"): the input's
    # doing, which no retry mends; it read as an unreachable server
    ("program_limit_exceeded", psycopg.errors.ProgramLimitExceeded, StorageError),
    ("statement_too_complex", psycopg.errors.StatementTooComplex, StorageError),
])
def test_server_errors_map_to_the_error_tree(with_store, sqlstate, driver_error, ours):
    raise_it = f"DO $$ BEGIN RAISE EXCEPTION 'raised on purpose' USING ERRCODE = '{sqlstate}'; END $$"

    async def body(store: PostgresStore) -> BaseException:
        with pytest.raises(ours) as caught:
            async with pg_errors("testing the seam"), store.connection() as conn:
                await conn.execute(raise_it.encode())
        return caught.value

    error = with_store(body)
    assert type(error) is ours and isinstance(error.__cause__, driver_error)
    assert "testing the seam" in str(error) and "raised on purpose" in str(error)


def test_an_unreachable_server_is_storage_unavailable(tmp_path):
    async def body() -> None:
        async with pg_errors("connecting"):
            await psycopg.AsyncConnection.connect(f"host={tmp_path} dbname=x user=x connect_timeout=2")

    with pytest.raises(StorageUnavailableError) as caught:
        run(body())
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)


def test_errors_of_our_own_tree_pass_through_the_seam_untouched():
    original = ConflictError("raised inside the block")

    async def body() -> None:
        async with pg_errors("anything"):
            raise original

    with pytest.raises(ConflictError) as caught:
        run(body())
    assert caught.value is original


# --- the timeline's one writer ---------------------------------------------------------------------------------------

FIRST_TIME = datetime(2024, 5, 1, tzinfo=UTC)


def _entry(memory_type: str, summary: str, importance: float, channel: str, *, event_time: datetime = FIRST_TIME,
           **metadata: Any) -> TimelineEntry:
    return TimelineEntry(memory_type=memory_type, node_id="n1", user_id="alice", channel=channel,
                         event_time=event_time, summary=summary, importance=importance, metadata=metadata)


async def _timeline_rows(store: PostgresStore) -> dict[str, dict[str, Any]]:
    rows = await store.fetch("SELECT memory_type, summary, importance_score, channel, metadata, event_time"
                             " FROM memory_timeline WHERE neo4j_node_id = 'n1'")
    return {r["memory_type"]: r for r in rows}


def test_the_timeline_conflict_policy_is_one_table():
    assert CONFLICT_POLICY == {"episodic": OnConflict.KEEP_FIRST, "goal": OnConflict.KEEP_FIRST,
                               "entity": OnConflict.REFRESH, "fact": OnConflict.REFRESH}


def test_timeline_writes_keep_or_refresh_by_memory_type(with_store):
    async def body(store: PostgresStore) -> dict[str, dict[str, Any]]:
        timeline = Timeline(store)
        types = list(CONFLICT_POLICY)
        await timeline.write([_entry(t, "first", 0.5, "p", v=1) for t in types])
        later = datetime(2025, 1, 1, tzinfo=UTC)
        await timeline.write([_entry(t, "second " + "x" * 2000, 0.9, "_global", event_time=later, v=2) for t in types])
        return await _timeline_rows(store)

    rows = with_store(body)
    for memory_type, policy in CONFLICT_POLICY.items():
        row = rows[memory_type]
        if policy is OnConflict.KEEP_FIRST:
            assert (row["summary"], row["importance_score"], row["channel"]) == ("first", 0.5, "p"), memory_type
        else:
            assert row["summary"] == ("second " + "x" * 2000)[:1000], memory_type
            assert (row["importance_score"], row["channel"]) == (0.9, "_global"), memory_type
        # what no policy touches: the first write's metadata and event time
        assert row["metadata"] == {"v": 1} and row["event_time"] == FIRST_TIME, memory_type


def test_a_memory_type_without_a_policy_writes_nothing(with_store):
    async def body(store: PostgresStore) -> dict[str, dict[str, Any]]:
        with pytest.raises(KeyError):
            await Timeline(store).write([_entry("fact", "ok", 0.5, "p"), _entry("mystery", "?", 0.5, "p")])
        return await _timeline_rows(store)

    assert with_store(body) == {}


# --- audit partitions ------------------------------------------------------------------------------------------------

def test_the_audit_logger_maintains_partitions(with_store):
    today = datetime.now(UTC).date()

    async def body(store: PostgresStore) -> tuple[tuple[int, int], tuple[int, int], list[str]]:
        audit = MemoryAuditLogger(store, load_settings())
        old = today - timedelta(days=400)
        await store.fetch("SELECT create_audit_partitions(2, %s::date)", (old,))
        first = await audit.maintain_partitions(ahead_days=10, retention_days=365)
        again = await audit.maintain_partitions(ahead_days=10, retention_days=365)
        rows = await store.fetch("SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
                                 " JOIN pg_class p ON p.oid = i.inhparent"
                                 " JOIN pg_namespace n ON n.oid = p.relnamespace"
                                 " WHERE p.relname = 'memory_audit_log' AND n.nspname = current_schema()")
        return first, again, sorted(r["relname"] for r in rows)

    first, again, partitions = with_store(body)
    # the migration made yesterday .. today + 6; ten days ahead (today .. today + 10) adds today + 7 .. today + 10;
    # the three 400-day-old ones (old .. old + 2) go
    assert first == (4, 3) and again == (0, 0)
    assert partitions == [f"memory_audit_log_{today + timedelta(days=i):%Y%m%d}" for i in range(-1, 11)]


def test_vectors_leave_the_store_as_lists_in_text_and_binary_results(with_store):
    async def body(store: PostgresStore) -> list[Any]:
        query = "SELECT '[1,2.5,-3]'::vector AS v"
        rows = await store.fetch(query)
        async with store.connection() as conn, conn.cursor(binary=True) as cur:
            await cur.execute(query)
            binary = await cur.fetchone()
        return [rows[0]["v"], binary["v"] if binary else None]

    assert with_store(body) == [[1.0, 2.5, -3.0], [1.0, 2.5, -3.0]]


def test_a_timeline_refresh_never_rewrites_another_users_row(with_store):
    async def body(store: PostgresStore) -> dict[str, dict[str, Any]]:
        timeline = Timeline(store)
        await timeline.write([_entry("fact", "alice's claim", 0.5, "p")])
        await timeline.write([dataclasses.replace(_entry("fact", "bob's claim", 0.9, "_global"), user_id="bob")])
        return await _timeline_rows(store)

    row = with_store(body)["fact"]
    assert (row["summary"], row["importance_score"], row["channel"]) == ("alice's claim", 0.5, "p")


def test_a_paged_statement_runs_until_a_page_comes_back_short(with_store):
    async def body(store: PostgresStore) -> tuple[list[int], int]:
        await store.execute("CREATE TABLE paged (n int)")
        await store.execute("INSERT INTO paged SELECT generate_series(1, 7)")
        deleted = await store.fetch_pages(
            "DELETE FROM paged WHERE n IN (SELECT n FROM paged WHERE n > %(above)s ORDER BY n LIMIT %(limit)s)"
            " RETURNING n", {"above": 1}, page_size=3)
        left = (await store.fetch("SELECT count(*) AS c FROM paged"))[0]["c"]
        return sorted(r["n"] for r in deleted), left

    assert with_store(body) == ([2, 3, 4, 5, 6, 7], 1)  # pages of 3, 3, then an empty one

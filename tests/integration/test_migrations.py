"""PostgreSQL migrations on the session's embedded PostgreSQL 18 + pgvector, and the CLI that applies them.

Each test migrates its own schema (from the ``settings`` fixture, dropped afterwards).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import psycopg
import pytest

from agentx_memory.errors import EmbeddingDimensionMismatchError, StorageUnavailableError
from agentx_memory.sql.postgres import PostgresStore, drop_schema, migrate, pending_migrations, schema_dir
from tests.conftest import TEST_DIMENSION, cli_env, make_settings, run

MODEL = "hash:test"

#: spec 003 "PostgreSQL Schema": every table with (at least) the spec's columns
SPEC_COLUMNS = {
    "conversation_logs": {
        "id", "conversation_id", "turn_index", "timestamp", "role", "content", "content_hash", "token_count", "model",
        "channel", "metadata", "embedding",
    },
    "memory_timeline": {
        "id", "memory_type", "neo4j_node_id", "event_time", "summary", "embedding", "importance_score",
        "access_count", "last_accessed", "channel", "archived", "metadata",
    },
    "tool_invocations": {
        "id", "conversation_id", "turn_index", "timestamp", "tool_name", "tool_input", "tool_output", "success",
        "latency_ms", "error_message", "channel",
    },
    "user_profiles": {
        "user_id", "created_at", "updated_at", "preferences", "expertise_areas", "communication_style", "metadata",
    },
    "memory_audit_log": {
        "id", "timestamp", "operation", "memory_type", "user_id", "session_id", "conversation_id", "source_channel",
        "target_channels", "query_text", "result_count", "latency_ms", "success", "error_message",
        "promoted_from_channel", "promotion_confidence", "promotion_access_count", "promotion_conversation_count",
        "config_snapshot", "metadata",
    },
    "schema_version": {"version", "description", "applied_at"},
}

#: spec 003 index names (B-tree unless said otherwise), plus our full-text columns' GIN indexes
SPEC_INDEXES = {
    "idx_logs_timestamp": ("conversation_logs", "brin"),
    "idx_logs_conversation": ("conversation_logs", "btree"),
    "idx_logs_channel": ("conversation_logs", "btree"),
    "idx_logs_embedding": ("conversation_logs", "hnsw"),
    "idx_logs_content_tsv": ("conversation_logs", "gin"),
    "idx_timeline_time": ("memory_timeline", "brin"),
    "idx_timeline_type": ("memory_timeline", "btree"),
    "idx_timeline_importance": ("memory_timeline", "btree"),
    "idx_timeline_channel": ("memory_timeline", "btree"),
    "idx_timeline_summary_tsv": ("memory_timeline", "gin"),
    "idx_tools_conversation": ("tool_invocations", "btree"),
    "idx_tools_name": ("tool_invocations", "btree"),
    "idx_tools_timestamp": ("tool_invocations", "brin"),
    "idx_tools_channel": ("tool_invocations", "btree"),
    "idx_audit_user": ("memory_audit_log", "btree"),
    "idx_audit_session": ("memory_audit_log", "btree"),
    "idx_audit_operation": ("memory_audit_log", "btree"),
    "idx_audit_memory_type": ("memory_audit_log", "btree"),
    "idx_audit_source_channel": ("memory_audit_log", "btree"),
}


@pytest.fixture
def pg(embedded_stack, embedded_home):
    """(dsn, fresh schema name) on the session's embedded PostgreSQL; the schema is dropped afterwards."""
    _, endpoints = embedded_stack
    schema = make_settings(embedded_home).postgres.db_schema
    yield endpoints.postgres_dsn, schema

    run(drop_schema(endpoints.postgres_dsn, schema))


def fetch(dsn: str, query: str, params=()) -> list[tuple]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(query, params).fetchall()


def migration_versions() -> list[int]:
    return sorted(int(p.name[:4]) for p in (schema_dir() / "postgres").glob("[0-9][0-9][0-9][0-9]_*.sql"))


# --- the runner ----------------------------------------------------------------------------------------------------

def test_migrate_twice_applies_nothing_the_second_time(pg):
    dsn, schema = pg
    versions = migration_versions()
    assert versions and versions[0] == 1
    assert run(pending_migrations(dsn, schema)) == versions
    assert run(migrate(dsn, schema, dimension=TEST_DIMENSION, model=MODEL)) == versions
    assert run(pending_migrations(dsn, schema)) == []
    assert run(migrate(dsn, schema, dimension=TEST_DIMENSION, model=MODEL)) == []
    rows = fetch(dsn, f'SELECT version, description, applied_at FROM "{schema}".schema_version ORDER BY version')
    assert [r[0] for r in rows] == versions
    assert rows[0][1] == "initial" and rows[0][2] is not None


def test_schema_version_records_version_1(pg):
    dsn, schema = pg
    run(migrate(dsn, schema, dimension=TEST_DIMENSION, model=MODEL))

    async def version():
        store = PostgresStore(dsn, db_schema=schema, min_size=0, max_size=1)
        await store.open()
        try:
            return await store.schema_version()
        finally:
            await store.close()

    assert run(version()) == max(migration_versions()) >= 1
    assert fetch(dsn, f'SELECT count(*) FROM "{schema}".schema_version WHERE version = 1') == [(1,)]


def test_an_unmigrated_schema_has_no_version(pg):
    dsn, schema = pg

    async def version():
        store = PostgresStore(dsn, db_schema=schema, min_size=0, max_size=1)
        await store.open()
        try:
            return await store.schema_version()
        finally:
            await store.close()

    assert run(version()) is None


def test_spec_tables_and_columns_exist(pg):
    dsn, schema = pg
    run(migrate(dsn, schema, dimension=TEST_DIMENSION, model=MODEL))
    rows = fetch(dsn, "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = %s",
                 (schema,))
    columns: dict[str, set[str]] = {}
    for table, column in rows:
        columns.setdefault(table, set()).add(column)
    for table, wanted in SPEC_COLUMNS.items():
        assert table in columns, f"table {table} missing"
        assert wanted <= columns[table], f"{table} lacks {sorted(wanted - columns[table])}"
    # our additions: full-text columns generated from the text, the graph id, and the reconcile queue beside the log
    assert {"content_tsv", "turn_id", "user_id"} <= columns["conversation_logs"]
    assert "projected" not in columns["conversation_logs"]  # migration 0023: the log row is not updated to say it
    assert columns["turn_projection_queue"] == {"log_id"}
    assert "summary_tsv" in columns["memory_timeline"]
    generated = fetch(dsn, "SELECT table_name, column_name, is_generated FROM information_schema.columns "
                           "WHERE table_schema = %s AND column_name IN ('content_tsv', 'summary_tsv')", (schema,))
    assert {(t, c, g) for t, c, g in generated} == {("conversation_logs", "content_tsv", "ALWAYS"),
                                                    ("memory_timeline", "summary_tsv", "ALWAYS")}


def test_a_short_turns_vector_stays_in_its_row(pg):
    """Migration 0024: pgvector stores vectors EXTERNAL, and a row past 2 kB had its 1.5 kB vector moved to the TOAST
    table, so every exact scan of a user's turns went through the TOAST index for each vector. Rows are now kept whole
    up to 4 kB, and a long turn's text is what moves out."""
    dsn, schema = pg
    run(migrate(dsn, schema, dimension=384, model=MODEL))
    vector = "[" + ",".join(["0.05"] * 384) + "]"
    context = " ".join(f"word{i}" for i in range(40))  # the neighbours' words of a turn, as the log indexes them
    with psycopg.connect(dsn, autocommit=True, options=f"-c search_path={schema},public") as conn:
        for index, (turn_id, content) in enumerate((
                ("short", "We hiked in the hills today, it was muddy but gorgeous. " * 2),
                ("long", "a long answer with many words " * 2000))):
            conn.execute(
                "INSERT INTO conversation_logs (turn_id, user_id, conversation_id, turn_index, role, content, "
                "metadata, embedding, context_tsv) VALUES (%s, 'u', 'c', %s, 'user', %s, %s, %s::vector, "
                "setweight(to_tsvector('english', %s), 'A') || setweight(to_tsvector('english', %s), 'B'))",
                (turn_id, index, content, json.dumps({"speaker": "sam", "dia_id": "D1:3"}), vector, content, context))
        rows = dict(conn.execute(
            "SELECT turn_id, pg_column_toast_chunk_id(embedding) IS NOT NULL FROM conversation_logs").fetchall())
        sizes = dict(conn.execute("SELECT turn_id, pg_column_size(t.*) FROM conversation_logs t").fetchall())
    assert sizes["short"] > 2032  # the row is past the size at which PostgreSQL starts moving values out
    assert rows == {"short": False, "long": False}


def test_audit_log_is_partitioned_by_day(pg):
    dsn, schema = pg
    run(migrate(dsn, schema, dimension=TEST_DIMENSION, model=MODEL))
    rows = fetch(dsn, "SELECT c.relkind, p.partstrat, a.attname FROM pg_class c "
                      "JOIN pg_namespace n ON n.oid = c.relnamespace "
                      "JOIN pg_partitioned_table p ON p.partrelid = c.oid "
                      "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = p.partattrs[0] "
                      "WHERE n.nspname = %s AND c.relname = 'memory_audit_log'", (schema,))
    assert rows == [("p", "r", "timestamp")]  # partitioned table, by range, on timestamp
    partitions = fetch(dsn, "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                            "JOIN pg_class p ON p.oid = i.inhparent JOIN pg_namespace n ON n.oid = p.relnamespace "
                            "WHERE n.nspname = %s AND p.relname = 'memory_audit_log'", (schema,))
    names = sorted(r[0] for r in partitions)
    assert len(names) >= 7 and all(len(name) == len("memory_audit_log_YYYYMMDD") for name in names)
    today = fetch(dsn, "SELECT to_char((NOW() AT TIME ZONE 'UTC')::date, 'YYYYMMDD')")[0][0]
    assert f"memory_audit_log_{today}" in names
    # a row for now lands in today's partition
    with psycopg.connect(dsn, autocommit=True, options=f"-c search_path={schema},public") as conn:
        conn.execute("INSERT INTO memory_audit_log (operation, memory_type) VALUES ('store', 'episodic')")
        row = conn.execute("SELECT tableoid::regclass::text FROM memory_audit_log").fetchone()
    assert row is not None and row[0].endswith(f"memory_audit_log_{today}")


def test_spec_indexes_exist_with_the_right_access_method(pg):
    dsn, schema = pg
    run(migrate(dsn, schema, dimension=TEST_DIMENSION, model=MODEL))
    rows = fetch(dsn, "SELECT ci.relname, ct.relname, am.amname FROM pg_index x "
                      "JOIN pg_class ci ON ci.oid = x.indexrelid JOIN pg_class ct ON ct.oid = x.indrelid "
                      "JOIN pg_am am ON am.oid = ci.relam JOIN pg_namespace n ON n.oid = ci.relnamespace "
                      "WHERE n.nspname = %s", (schema,))
    found = {name: (table, method) for name, table, method in rows}
    for name, (table, method) in SPEC_INDEXES.items():
        assert found.get(name) == (table, method), (
            f"index {name}: expected {method} on {table}, found {found.get(name)}")
    # vector indexes use cosine distance (the engine's similarity), never IVFFlat built on an empty table
    defs = dict(fetch(dsn, "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s", (schema,)))
    assert "vector_cosine_ops" in defs["idx_logs_embedding"]
    assert not any(method == "ivfflat" for _, method in found.values())
    # spec 003's idx_timeline_embedding is gone (migration 0022): no statement searches the timeline by vector, and
    # keeping it up to date was the slowest part of every fact, entity and goal write
    assert "idx_timeline_embedding" not in found
    assert not [name for name, (table, method) in found.items() if table == "memory_timeline" and method == "hnsw"]


def test_vector_columns_have_the_configured_dimension(pg):
    dsn, schema = pg
    run(migrate(dsn, schema, dimension=48, model=MODEL))
    rows = fetch(dsn, "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
                      "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
                      "WHERE n.nspname = %s AND a.attname = 'embedding' AND c.relkind = 'r' AND NOT a.attisdropped",
                 (schema,))
    assert sorted(rows) == [("conversation_logs", "embedding", "vector(48)"),
                            ("episodic_summaries", "embedding", "vector(48)"),
                            ("memory_timeline", "embedding", "vector(48)"),
                            ("store_items", "embedding", "vector(48)")]
    # and the database enforces it
    with (psycopg.connect(dsn, autocommit=True, options=f"-c search_path={schema},public") as conn,
          pytest.raises(psycopg.errors.DataException)):
        conn.execute("INSERT INTO memory_timeline (user_id, memory_type, event_time, embedding) "
                     "VALUES ('u', 'fact', now(), %s::vector)", (str([0.1] * 47),))


def test_embedding_meta_is_recorded(pg):
    dsn, schema = pg
    run(migrate(dsn, schema, dimension=TEST_DIMENSION, model=MODEL))
    assert fetch(dsn, f"SELECT value FROM \"{schema}\".agentx_meta WHERE key = 'embedding'") == [
        ({"model": MODEL, "dimension": TEST_DIMENSION},)
    ]


@pytest.mark.parametrize(("dimension", "model"), [(TEST_DIMENSION * 2, MODEL), (TEST_DIMENSION, "hash:other")])
def test_migrating_with_another_embedding_is_refused(pg, dimension, model):
    dsn, schema = pg
    run(migrate(dsn, schema, dimension=TEST_DIMENSION, model=MODEL))
    with pytest.raises(EmbeddingDimensionMismatchError) as caught:
        run(migrate(dsn, schema, dimension=dimension, model=model))
    message = str(caught.value)
    assert str(TEST_DIMENSION) in message and str(dimension) in message and model in message
    # nothing changed: the original settings still migrate (a no-op)
    assert run(migrate(dsn, schema, dimension=TEST_DIMENSION, model=MODEL)) == []


def test_concurrent_migrations_apply_once(pg):
    dsn, schema = pg

    async def both():
        return await asyncio.gather(*(migrate(dsn, schema, dimension=TEST_DIMENSION, model=MODEL) for _ in range(2)))

    first, second = run(both())
    versions = migration_versions()
    assert sorted([first, second], key=len) == [[], versions]  # one applied everything, the other nothing
    assert fetch(dsn, f'SELECT version FROM "{schema}".schema_version ORDER BY version') == [(v,) for v in versions]


def test_concurrent_migrations_from_two_processes_apply_once(pg):
    dsn, schema = pg
    code = ("import asyncio, json, sys; from agentx_memory.sql.postgres import migrate; "
            "print(json.dumps(asyncio.run(migrate(sys.argv[1], sys.argv[2], "
            f"dimension={TEST_DIMENSION}, model={MODEL!r}))))")
    procs = [subprocess.Popen([sys.executable, "-c", code, dsn, schema], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert sorted(results, key=len) == [[], migration_versions()]


def test_an_unreachable_server_is_storage_unavailable(tmp_path):
    dsn = f"host={tmp_path} port=5432 dbname=agentx user=postgres connect_timeout=2"
    with pytest.raises(StorageUnavailableError) as caught:
        run(migrate(dsn, "nowhere", dimension=TEST_DIMENSION, model=MODEL))
    assert caught.value.__cause__ is not None


# --- the CLI -------------------------------------------------------------------------------------------------------

def _cli(namespace, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentx_memory.cli", *args], env=cli_env(namespace, COLUMNS="200"),
                          capture_output=True, text=True, timeout=300)


def test_cli_migrate_and_status(embedded_home, settings, namespaces):
    # Only migrate and status run here: never `down` (it would stop the session's servers).
    namespace = settings(migrated=False)
    before = _cli(namespace, "status", "--json")
    assert before.returncode == 0, before.stdout + before.stderr
    report = json.loads(before.stdout)
    assert report["schema_version"] is None  # this namespace is not migrated yet
    assert {"falkordb", "postgres"} <= set(report["servers"])
    assert all(server["running"] for server in report["servers"].values())

    first = _cli(namespace, "migrate")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "applied [1" in first.stdout
    second = _cli(namespace, "migrate")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "already up to date" in second.stdout

    after = _cli(namespace, "status", "--json")
    assert after.returncode == 0, after.stdout + after.stderr
    report = json.loads(after.stdout)
    assert report["schema_version"] == max(migration_versions())
    assert os.path.realpath(report["home"]) == os.path.realpath(embedded_home)
    for server in report["servers"].values():
        assert server["running"] and server["pid"] and server["socket"] and server["version"]

    # the CLI migrated this namespace and nothing else: the graph has its schema and embedding record
    async def meta():
        graph = namespaces.graph_store(namespace)
        try:
            return await graph.read(
                "MATCH (m:AgentxMeta {key: 'embedding'}) RETURN m.model AS model, m.dimension AS dimension")
        finally:
            await graph.close()

    assert run(meta()) == [{"model": namespace.embedding.model, "dimension": namespace.embedding.dimension}]


def test_cli_reports_a_configuration_error(embedded_home):
    namespace = make_settings(embedded_home)
    proc = subprocess.run(
        [sys.executable, "-m", "agentx_memory.cli", "status", "--json"],
        env={**{k: v for k, v in os.environ.items() if not k.startswith("AGENTX_")},
             "AGENTX_HOME": str(embedded_home), "AGENTX_POSTGRES__DB_SCHEMA": namespace.postgres.db_schema,
             "AGENTX_DECAY__RATE": "2", "COLUMNS": "200"},
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert "AGENTX_DECAY__RATE" in proc.stdout + proc.stderr

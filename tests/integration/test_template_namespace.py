"""The test namespaces whose PostgreSQL schema comes already migrated (``tests/conftest.py``) hold exactly what the
engine's migration makes: same objects (tables, columns, defaults, indexes, constraints, audit partitions, functions)
and rows (``agentx_meta``, ``schema_version``); their graph is untouched, as before."""

from __future__ import annotations

import psycopg
import pytest
import redis
from psycopg import sql as pgsql

from agentx_memory import AgentMemory, Turn
from agentx_memory.errors import NotFoundError

# Every object of one schema, written without the schema's name so two namespaces compare equal.
_CATALOG = {
    "relations": """
        SELECT c.relname, c.relkind, c.relpersistence, pg_get_expr(c.relpartbound, c.oid) AS bound
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %(schema)s""",
    "columns": """
        SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_get_expr(d.adbin, d.adrelid) AS default_value
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE n.nspname = %(schema)s AND a.attnum > 0 AND NOT a.attisdropped""",
    "indexes": """
        SELECT c.relname, pg_get_indexdef(i.indexrelid)
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = %(schema)s""",
    "constraints": """
        SELECT t.relname, k.conname, pg_get_constraintdef(k.oid)
        FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid JOIN pg_namespace n ON n.oid = k.connamespace
        WHERE n.nspname = %(schema)s""",
    "functions": """
        SELECT p.proname, pg_get_functiondef(p.oid)
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = %(schema)s""",
    "triggers": """
        SELECT c.relname, pg_get_triggerdef(g.oid)
        FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = %(schema)s AND NOT g.tgisinternal""",
}


def _catalog(dsn: str, schema: str) -> dict[str, list[tuple]]:
    with psycopg.connect(dsn) as conn:
        found = {
            name: sorted(tuple(str(v).replace(schema, "<schema>") for v in row)
                         for row in conn.execute(query, {"schema": schema}).fetchall())
            for name, query in _CATALOG.items()
        }
        conn.execute(pgsql.SQL("SET search_path TO {}, public").format(pgsql.Identifier(schema)))
        found["agentx_meta"] = conn.execute("SELECT key, value FROM agentx_meta ORDER BY key").fetchall()
        found["schema_version"] = conn.execute(
            "SELECT version, description FROM schema_version ORDER BY version").fetchall()
    return found


def _falkordb_graphs(namespaces) -> set[str]:
    client = redis.Redis(unix_socket_path=str(namespaces.endpoints.falkordb_socket), decode_responses=True)
    try:
        return set(client.execute_command("GRAPH.LIST"))
    finally:
        client.close()


def test_a_template_schema_equals_one_the_engine_migrates(settings, namespaces):
    template = settings()
    engine = settings(migrated=False)
    assert template.postgres.db_schema != engine.postgres.db_schema
    with AgentMemory(engine, user_id="alice"):  # opening migrates the empty namespace the engine's way
        pass
    dsn = namespaces.endpoints.postgres_dsn
    expected = _catalog(dsn, engine.postgres.db_schema)
    assert expected["relations"] and expected["functions"] and expected["agentx_meta"]
    assert _catalog(dsn, template.postgres.db_schema) == expected
    if namespaces.neo4j is None:  # the graph is left alone (Neo4j tests share one database)
        assert template.graph.name not in _falkordb_graphs(namespaces)


def test_every_test_namespace_is_new_and_empty(settings):
    first, second, third = (settings() for _ in range(3))
    for name in (lambda s: s.graph.name, lambda s: s.postgres.db_schema, lambda s: s.redis.key_prefix):
        assert len({name(first), name(second), name(third)}) == 3
    with AgentMemory(first, user_id="alice") as memory:
        memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="I live in Lisbon"))
    with AgentMemory(second, user_id="alice") as memory, pytest.raises(NotFoundError):
        memory.get_conversation("c1", user_id="alice")

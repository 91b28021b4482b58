"""`agentx-memory status` on running servers: the FalkorDB probe speaks RESP itself, so the CLI starts fast.

Issue 17 wants ``status`` in 0.3 s; importing redis-py alone took 55-80 ms of it. The probe's own reader
(:mod:`agentx_memory.runtime.resp`) is checked here against the real server, error replies included.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentx_memory.cli import _embedded_schema_version
from agentx_memory.errors import RuntimeServerError
from agentx_memory.runtime import EmbeddedStack
from agentx_memory.runtime.resp import RespConnection, RespError, info_fields
from agentx_memory.settings import load_settings
from tests.integration.test_migrations import migration_versions
from tests.unit.test_lazy_imports import RUN_CLI, loaded_after


def test_status_of_running_servers_reports_versions_without_redis_py(embedded_stack, embedded_home):
    stack, _ = embedded_stack
    falkordb = stack.status()["falkordb"]
    assert falkordb["running"] is True and falkordb["state"] == "running"
    assert falkordb["version"] and falkordb["version"].count(".") == 2
    assert falkordb["redis_version"] and falkordb["redis_version"][0].isdigit()
    # The same command in a fresh interpreter: the servers answer, and neither client library nor the engine is
    # loaded (PostgreSQL's version and the schema version come from its own psql).
    assert loaded_after(RUN_CLI.format(argv=["status", "--json"]),
                        ("redis", "falkordb", "psycopg", "psycopg_pool", "agentx_memory.graph", "numpy", "asyncio"),
                        home=embedded_home) == []
    postgres = stack.status()["postgres"]
    assert postgres["running"] is True and postgres["version"] and postgres["version"][0].isdigit()


def test_the_embedded_postgres_runs_a_script_with_its_own_psql(embedded_stack, tmp_path):
    stack, _ = embedded_stack
    assert stack.run_postgres_script("SELECT 1 + 1;") == "2\n"
    # variables are quoted by psql: a value is never read as SQL
    hostile = "x'); DROP TABLE schema_version; --"
    assert stack.run_postgres_script("SELECT :'v' AS v, quote_ident(:'v') = :'q';",
                                     {"v": hostile, "q": '"' + hostile + '"'}) == f"{hostile}|t\n"
    with pytest.raises(RuntimeServerError, match=r"psql .* failed: .*no_such_table"):
        stack.run_postgres_script("SELECT * FROM no_such_table;")
    # a home without a server: nobody takes the connection
    assert EmbeddedStack(load_settings(embedded={"home": tmp_path / "empty"}).embedded).run_postgres_script(
        "SELECT 1;") is None


def test_status_reads_the_schema_version_through_psql(embedded_stack, settings):
    stack, _ = embedded_stack
    migrated = settings()  # a namespace the fixture migrated
    assert _embedded_schema_version(stack, migrated.postgres.db_schema) == max(migration_versions())
    assert _embedded_schema_version(stack, "no_such_schema_here") is None


def test_resp_replies_decode_and_errors_raise(embedded_stack):
    _, endpoints = embedded_stack
    key = f"resp-probe-{os.getpid()}"
    with RespConnection(endpoints.falkordb_socket) as conn:
        assert conn.call("PING") == b"PONG"
        assert conn.call("GET", key) is None
        assert conn.call("RPUSH", key, "a", "b c\r\n") == 2
        assert conn.call("LRANGE", key, "0", "-1") == [b"a", b"b c\r\n"]
        assert conn.call("DEL", key) == 1
        with pytest.raises(RespError, match="unknown command"):
            conn.call("NO-SUCH-COMMAND")
        # The connection stays usable after an error reply.
        assert "process_id" in info_fields(conn.call("INFO", "server"))


@pytest.fixture
def listener(tmp_path) -> Iterator[tuple[Path, socket.socket]]:
    """A unix socket that accepts connections and never speaks unless the test makes it."""
    path = tmp_path / "probe.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(1)
    try:
        yield path, sock
    finally:
        sock.close()


def test_a_socket_that_never_answers_times_out(listener):
    path, _ = listener
    with RespConnection(path, timeout=0.2) as conn, pytest.raises(TimeoutError):
        conn.call("PING")


def test_a_server_that_does_not_speak_resp_is_refused(listener):
    path, sock = listener
    with RespConnection(path, timeout=2) as conn:
        peer, _ = sock.accept()
        with peer:
            peer.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            with pytest.raises(ValueError, match="not a RESP2 reply"):
                conn.call("PING")

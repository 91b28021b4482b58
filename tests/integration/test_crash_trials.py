"""Crash trials in CI (issue 11, suite 4): SIGKILL a server during concurrent ingest, restart it, reconcile, and
find every acknowledged turn intact and every logged turn projected (``scripts/crash_trials.py`` does the work; the
full run with 20 trials per target is in docs/reliability.md).

These tests kill servers, so they never use the session's embedded stack: each case starts servers of its own in a
fresh data directory (``crash_home``: traversable by the unprivileged PostgreSQL account when run as root) and kills
only the processes named by that directory's pid files.

One trial per target. On FalkorDB: FalkorDB killed, PostgreSQL killed, both killed. On Neo4j (the graph is a Neo4j
Community server from ``tests/neo4j``, started here on a data directory and port that survive its restart, with the
embedded PostgreSQL and Redis): Neo4j killed, PostgreSQL killed. Calls still running one second after the outage
window are cancelled, as a caller with a deadline would; otherwise a PostgreSQL outage holds each of them for the
pool's 30 s wait and the suite would blow its time budget (that wait is an open item of docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from agentx_memory.settings import Settings
from tests.conftest import GRAPH_BACKENDS, neo4j_unavailable
from tests.scripts import load_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "crash_trials.py"

#: The whole module (both cases, server starts included) must stay within this many seconds.
BUDGET_SECONDS = 120.0


crash = load_script(SCRIPT)

#: Small and quick: four writers, twenty turns each, and a caller's deadline after the outage.
CONFIG = crash.TrialConfig(writers=4, turns_per_writer=20, outage_seconds=0.5, deadline_seconds=1.0)

_spent: list[float] = []


class Neo4jCluster:
    """Neo4j as the graph (killed and restarted on the same data directory and port, so it recovers its data from
    its transaction log), the embedded PostgreSQL and Redis of ``embedded`` for the rest.

    The JVM runs ``tests/neo4j/Launcher.java`` as ``start_neo4j`` does, but on a home of ours: ``start_neo4j`` gives
    every server a fresh temporary home, which a restart after a crash must not do.
    """

    targets = ("neo4j", "postgres", "both")

    def __init__(self, embedded, version: str) -> None:
        from tests.neo4j import server

        self.server = server
        self.embedded = embedded
        self.version = version
        self.home = embedded.home / "neo4j"
        self.home.mkdir()
        self.port = server._free_port()
        self.uri = f"bolt://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 120.0) -> None:
        """Start the JVM on our home and port; return once Bolt answers ``RETURN 1``."""
        server = self.server
        java = server._find_java(self.version)
        assert java is not None, "missing_tools() found a JDK a moment ago"
        flags = list(server._JVM_FLAGS)
        if (server._java_major(java) or 0) >= 23:
            flags.append("--sun-misc-unsafe-memory-access=allow")
        log = open(self.home / "launcher.log", "ab")  # noqa: SIM115 -- handed to the child, closed below
        try:
            proc = subprocess.Popen(
                [java, *flags, "-cp", server.classpath(self.version), str(server.LAUNCHER), str(self.home),
                 str(self.port)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, start_new_session=True,
            )
        finally:
            log.close()
        self.proc = proc
        ready = threading.Event()
        lines: collections.deque[str] = collections.deque(maxlen=40)

        def read(stream=proc.stdout) -> None:
            with stream:
                for raw in stream:  # keep draining so the pipe never fills
                    line = raw.decode("utf-8", "replace").rstrip("\n")
                    lines.append(line)
                    if line.startswith(server.READY_PREFIX + " "):
                        ready.set()
            ready.set()

        threading.Thread(target=read, name=f"crash-neo4j-{self.port}", daemon=True).start()
        deadline = time.monotonic() + timeout
        if not ready.wait(timeout) or proc.poll() is not None:
            self.stop()
            raise RuntimeError(f"Neo4j did not start on {self.home}: " + "\n".join(lines)
                               + server._tail(self.home / "launcher.log"))
        server._verify(self.uri, timeout=max(10.0, deadline - time.monotonic()))

    def settings(self) -> Settings:
        """The embedded cluster's namespace, with the graph on this Neo4j."""
        return self.embedded.settings(uri=self.uri, user="neo4j", password="", database="neo4j",
                                      max_retry_seconds=5)

    def kill(self, target: str) -> None:
        """SIGKILL the Neo4j JVM, the PostgreSQL server (postmaster and backends) or both at once."""
        procs: list[psutil.Process] = []
        if target in ("neo4j", "both"):
            assert self.proc is not None and self.proc.poll() is None, "Neo4j is not running"
            procs.append(psutil.Process(self.proc.pid))
        if target in ("postgres", "both"):
            procs += self.embedded.postgres_processes()
        crash.sigkill(procs, target)
        if target in ("neo4j", "both"):
            assert self.proc is not None
            self.proc.wait()

    def restart(self) -> None:
        """``ensure_running`` for the embedded servers, a new JVM on the same home and port for a dead Neo4j."""
        self.embedded.restart()
        if self.proc is None or self.proc.poll() is not None:
            self.start()

    def stop(self) -> None:
        """End the JVM (EOF on its stdin and SIGTERM: a clean shutdown; SIGKILL after 30 s)."""
        if self.proc is not None:
            self.server._stop_process(self.proc, 30)
            self.proc = None


@pytest.fixture
def crash_cluster(backend) -> Iterator[tuple[object, list[str], float]]:
    """Servers of this test only, in a fresh data directory, with Neo4j as the graph on the ``neo4j`` backend:
    ``(cluster, targets, when the start began)``. Stopped and removed afterwards, with a check that no server
    process of that directory outlives the test."""
    started = time.monotonic()
    version = ""
    if backend == "neo4j":
        from tests.neo4j import server

        version = server.DEFAULT_VERSION
        problem = server.missing_tools(version)
        if problem:
            neo4j_unavailable(f"the Neo4j crash trials need Java and Maven to start Neo4j {version}: {problem}")
    home = crash.crash_home()
    embedded = crash.EmbeddedCluster(home, start_timeout_seconds=60)
    neo4j: Neo4jCluster | None = None
    try:
        embedded.start()
        if backend == "neo4j":
            neo4j = Neo4jCluster(embedded, version)
            neo4j.start()
            yield neo4j, ["neo4j", "postgres"], started
        else:
            yield embedded, list(crash.EMBEDDED_TARGETS), started
    finally:
        try:
            if neo4j is not None:
                neo4j.stop()
            embedded.stop()
            leftovers = embedded.falkordb_processes() + embedded.postgres_processes()
            for proc in leftovers:
                with contextlib.suppress(psutil.Error):
                    proc.kill()
            assert not leftovers, f"servers left running for {home}: {leftovers}"
        finally:
            shutil.rmtree(home, ignore_errors=True)


def _check(results) -> None:
    lines = "\n".join(r.line() for r in results)
    for r in results:
        assert r.ok, lines
        assert r.lost == 0, lines
        # the kill landed mid-ingest: calls raised, or (graph killed) turns were acknowledged pending projection
        assert r.acknowledged > 0 and (r.raised_calls > 0 or r.needed_reconcile > 0), \
            f"the kill did not land mid-ingest:\n{lines}"
        if r.target in ("falkordb", "neo4j"):  # the graph alone down: turn writes are durable, none raises (Neo4j's
            # driver retries for graph.max_retry_seconds first, so a call may still meet the caller's deadline)
            assert set(r.raised_by_type) <= {"cancelled at the caller's deadline"}, lines
        assert r.repaired == r.needed_reconcile, lines
        assert r.log_rows >= r.acknowledged, lines


@pytest.mark.timeout(BUDGET_SECONDS)
@pytest.mark.parametrize("backend", GRAPH_BACKENDS, indirect=True)
def test_sigkill_during_ingest_loses_no_acknowledged_turn_and_reconcile_repairs_everything(
        backend, crash_cluster, capsys) -> None:
    """One trial per target: every acknowledged turn survives the SIGKILL unchanged, reconcile projects every
    logged turn (graph node, HAS_TURN edge, timeline row, ``projected``), nothing is duplicated or quarantined."""
    cluster, targets, started = crash_cluster
    results = asyncio.run(crash.run_trials(cluster, targets, 1, CONFIG, seed=11))
    spent = time.monotonic() - started
    _spent.append(spent)
    with capsys.disabled():
        print(f"\ncrash trials on {backend} ({spent:.1f} s with the server starts):\n"
              f"{crash.format_summary(results)}")
    _check(results)
    assert sum(_spent) < BUDGET_SECONDS, f"crash trials took {_spent} s, over the {BUDGET_SECONDS:.0f} s budget"

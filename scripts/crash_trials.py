"""Crash trials (issue 11, suite 4): SIGKILL the servers during concurrent ingest, restart, reconcile, verify.

Each trial opens an :class:`~agentx_memory.AsyncAgentMemory` on servers of its own, starts several writer tasks (each
storing the turns of its own conversation with ``store_turn`` and ``store_turns``), and SIGKILLs a server once a
random number of calls (between 20 % and 60 % of the planned ones) were acknowledged: FalkorDB (redis-server),
PostgreSQL (the postmaster and every backend at once) or both. The writers keep writing for ``--outage`` seconds
into the dead server(s), then stop. Every turn whose store call returned is recorded as acknowledged, every call
that raised as raised (with its exception type).

Then the servers are restarted by the engine's own runtime (:meth:`EmbeddedStack.ensure_running`: stale pid files
and sockets cleared, AOF / WAL recovery), a fresh memory is opened, ``reconcile()`` runs, and the trial checks:

* **no acknowledged turn is lost**: each is in ``get_conversation`` with the same content, role and index;
* **full repair by reconcile**: every log row of the trial's conversations is ``projected`` with no
  ``projection_error``, is a ``Turn`` node of the graph (same index and content, linked ``HAS_TURN`` from its one
  ``Conversation`` node) and has its ``memory_timeline`` row;
* **no duplicates**: each turn's content is in the log once, each turn id is one node in the graph.

It runs on its own data directory (``--home``, default a fresh temporary directory, removed afterwards), never on
``AGENTX_HOME`` or a test session's servers, and kills only the processes named by that directory's pid files.
Nothing else is imported from the test suite; ``tests/integration/test_crash_trials.py`` imports this file and runs a
trial per target, plus Neo4j targets with a :class:`Cluster` of its own.

Usage::

    python scripts/crash_trials.py --trials 20 --target all

Prints one line per trial and a summary table per target; exits 1 when an acknowledged turn was lost or a repair is
missing (or a trial broke in another way: a hang, a raw exception), else 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psutil

from agentx_memory import AsyncAgentMemory, Turn
from agentx_memory.errors import AgentXMemoryError
from agentx_memory.runtime import EmbeddedStack
from agentx_memory.runtime.layout import DataLayout
from agentx_memory.runtime.processes import owned_server_pid, read_pid_file
from agentx_memory.settings import Settings, load_settings
from agentx_memory.sql.conversation_log import is_projected, projected

__all__ = [
    "EMBEDDED_TARGETS",
    "Cluster",
    "EmbeddedCluster",
    "TrialConfig",
    "TrialResult",
    "crash_home",
    "format_summary",
    "main",
    "run_trial",
    "run_trials",
]

#: What an embedded cluster can kill: the FalkorDB server, the PostgreSQL server, or both at once.
EMBEDDED_TARGETS = ("falkordb", "postgres", "both")

_USER = "crash-user"
_ROLES = ("user", "assistant")
_WORDS = ("Lisbon", "moved", "train", "coffee", "meeting", "Tuesday", "report", "garden", "invoice", "guitar",
          "project", "deadline", "sister", "Porto", "recipe", "budget")


class Cluster(Protocol):
    """The servers a trial writes to, kills and restarts."""

    targets: tuple[str, ...]
    """What :meth:`kill` accepts (e.g. ``falkordb``, ``postgres``, ``both``)."""

    def settings(self) -> Settings:
        """Settings a memory opens on these servers with (its own namespace)."""
        ...

    def kill(self, target: str) -> None:
        """SIGKILL the server(s) ``target`` names and wait until they are gone."""
        ...

    def restart(self) -> None:
        """Bring every server back (keeping its data) and return once all answer."""
        ...


def crash_home() -> Path:
    """A fresh data directory for a crash run, traversable by the unprivileged PostgreSQL account when running as
    root (``mkdtemp`` makes it 0700; PostgreSQL must reach ``<home>/postgres``)."""
    home = Path(tempfile.mkdtemp(prefix="agentx-crash-"))
    home.chmod(0o755)
    return home


def _server_tree(pid: int | None, names: tuple[str, ...], cwd: Path) -> list[psutil.Process]:
    """The server process ``pid`` (when it is ours: right executable, working directory ``cwd``) and its children."""
    if not owned_server_pid(pid, names, cwd):
        return []
    assert pid is not None
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def sigkill(procs: Sequence[psutil.Process], what: str, timeout: float = 15.0) -> None:
    """SIGKILL ``procs`` (all at once) and wait until they are gone; RuntimeError when one survives."""
    if not procs:
        raise RuntimeError(f"no running {what} process to kill")
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.send_signal(signal.SIGKILL)
    _gone, alive = psutil.wait_procs(list(procs), timeout=timeout)
    if alive:
        raise RuntimeError(f"{what}: processes {[p.pid for p in alive]} survived SIGKILL")


class EmbeddedCluster:
    """The embedded FalkorDB + PostgreSQL of one data directory, started by the engine's own runtime.

    ``kill`` finds the servers through that directory's pid files only (``falkordb/falkordb.pid``,
    ``postgres/postmaster.pid``), so no other stack's process is ever touched; ``restart`` is
    :meth:`EmbeddedStack.ensure_running`, what every process opening a memory runs.
    """

    targets: tuple[str, ...] = EMBEDDED_TARGETS

    def __init__(self, home: Path, namespace: str = "crash", *, start_timeout_seconds: float = 120.0) -> None:
        """Bind to the data directory ``home`` and the namespace (graph name, PostgreSQL schema, key prefix)."""
        self.home = home
        self.namespace = namespace
        self._embedded = {"home": home, "start_timeout_seconds": start_timeout_seconds}
        self.stack = EmbeddedStack(load_settings(embedded=self._embedded).embedded)
        self.layout = DataLayout.for_home(home)

    def start(self) -> None:
        """Start both servers (first start: initdb)."""
        self.stack.ensure_running()

    def restart(self) -> None:
        """What an engine process does when it finds its servers dead: ``ensure_running``."""
        self.stack.ensure_running()

    def stop(self) -> None:
        """Shut both servers down cleanly."""
        self.stack.stop()

    def settings(self, **graph: Any) -> Settings:
        """Settings on these servers, every store set explicitly (no ``AGENTX_*`` variable can redirect a store);
        ``graph`` overrides the graph section (a Neo4j URI)."""
        return load_settings(
            embedded=self._embedded,
            graph={"uri": "", "name": self.namespace, **graph},
            postgres={"dsn": "", "db_schema": self.namespace, "pool_min_size": 1, "pool_max_size": 8},
            redis={"url": "", "key_prefix": f"{self.namespace}:"},
            embedding={"model": "hash:crash-trials", "dimension": 64},
        )

    def falkordb_processes(self) -> list[psutil.Process]:
        """This directory's redis-server (and any child it forked, e.g. an AOF rewrite)."""
        L = self.layout
        return _server_tree(read_pid_file(L.falkordb_pidfile), ("redis-server",), L.falkordb_dir)

    def postgres_processes(self) -> list[psutil.Process]:
        """This directory's postmaster and every backend / auxiliary process under it."""
        L = self.layout
        return _server_tree(read_pid_file(L.pgdata / "postmaster.pid"), ("postgres",), L.pgdata)

    def kill(self, target: str) -> None:
        """SIGKILL FalkorDB, PostgreSQL (postmaster and backends together) or both, all in one go."""
        if target not in self.targets:
            raise ValueError(f"unknown target {target!r}; one of {', '.join(self.targets)}")
        procs: list[psutil.Process] = []
        if target in ("falkordb", "both"):
            procs += self.falkordb_processes() or _missing("FalkorDB")
        if target in ("postgres", "both"):
            procs += self.postgres_processes() or _missing("PostgreSQL")
        sigkill(procs, target)


def _missing(what: str) -> list[psutil.Process]:
    raise RuntimeError(f"the embedded {what} is not running: nothing to kill")


@dataclass(frozen=True)
class TrialConfig:
    """The shape of one trial."""

    writers: int = 4
    """Concurrent writer tasks, each with a conversation of its own."""
    turns_per_writer: int = 30
    """Turns each writer plans to store (in calls of 1 to 3 turns)."""
    outage_seconds: float = 0.5
    """How long the writers keep calling into the dead server(s) after the kill."""
    call_timeout: float = 60.0
    """A store call taking longer is cancelled and reported as a hang (the PostgreSQL pool waits up to 30 s)."""
    deadline_seconds: float | None = None
    """When set, calls still running this long after the outage window are cancelled, as a caller with a deadline
    would (counted as raised); None waits for them (up to ``call_timeout``)."""
    kill_window: tuple[float, float] = (0.2, 0.6)
    """The kill comes once this fraction of the planned calls (drawn uniformly in the range) was acknowledged."""
    close_timeout: float = 60.0
    """How long closing the memory that saw the crash may take."""


@dataclass
class TrialResult:
    """What one trial saw and checked."""

    target: str
    trial: int
    acknowledged: int = 0
    """Turns whose store call returned."""
    acknowledged_calls: int = 0
    raised_calls: int = 0
    raised_turns: int = 0
    raised_durable: int = 0
    """Turns of raised calls that the log holds anyway (committed before the failure)."""
    raised_complete: int = 0
    """Turns of raised calls already complete when the servers came back (graph, timeline and ``projected``: the
    call failed or was cancelled after that, in its audit write)."""
    raised_complete_unaudited: int = 0
    """Of those, turns without the ``store`` audit entry (reconcile does not write audit entries)."""
    raised_by_type: Counter[str] = field(default_factory=Counter)
    hung_calls: int = 0
    """Calls cancelled after ``call_timeout`` (also counted in ``raised_calls``)."""
    lost: int = 0
    """Acknowledged turns missing from ``get_conversation`` or stored with other content / index / role."""
    needed_reconcile: int = 0
    """Log rows of the trial not projected when the servers came back."""
    repaired: int = 0
    """Rows ``reconcile()`` projected."""
    unrepaired: int = 0
    """Log rows still missing something after reconcile: projected flag, graph node, edge or timeline row."""
    quarantined: int = 0
    duplicates: int = 0
    log_rows: int = 0
    writers_stopped_seconds: float = 0.0
    """SIGKILL to the last writer call ending (the outage window plus the longest call in flight: a PostgreSQL
    outage holds a call up to the pool's 30 s wait for a connection)."""
    restart_seconds: float = 0.0
    """The restart: ``ensure_running`` until every server answers again."""
    reconcile_seconds: float = 0.0
    """Opening a fresh memory and running ``reconcile()``."""
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No acknowledged turn lost, nothing left unrepaired, no duplicate, no other problem."""
        return not (self.lost or self.unrepaired or self.duplicates or self.quarantined or self.problems)

    def line(self) -> str:
        """One line for the per-trial log."""
        raised = ", ".join(f"{name} x{n}" for name, n in sorted(self.raised_by_type.items())) or "-"
        status = "ok" if self.ok else "FAILED: " + "; ".join(self._failures())
        return (f"[{self.target} #{self.trial}] acked {self.acknowledged} turns ({self.acknowledged_calls} calls), "
                f"raised {self.raised_calls} calls / {self.raised_turns} turns ({self.raised_durable} durable, "
                f"{self.raised_complete} complete, {self.raised_complete_unaudited} of them unaudited) "
                f"[{raised}], lost {self.lost}, needed reconcile {self.needed_reconcile}, repaired {self.repaired}, "
                f"writers stopped {self.writers_stopped_seconds:.2f}s after the kill, "
                f"restart {self.restart_seconds:.2f}s, reconcile {self.reconcile_seconds:.2f}s: {status}")

    def _failures(self) -> list[str]:
        counts = [("lost acknowledged", self.lost), ("unrepaired", self.unrepaired),
                  ("duplicates", self.duplicates), ("quarantined", self.quarantined)]
        return [f"{what} {n}" for what, n in counts if n] + self.problems


@dataclass
class _Ledger:
    """What the writers saw, shared by the writer tasks of one trial (one event loop: no locking needed)."""

    acked: dict[str, Turn] = field(default_factory=dict)
    acked_calls: int = 0
    raised: list[tuple[list[str], str]] = field(default_factory=list)
    hung: int = 0
    foreign: list[str] = field(default_factory=list)
    """Exceptions that are not the engine's own error types (a defect: raw exceptions must not escape)."""


def _turns(conversation: str, first: int, count: int, rng: random.Random) -> list[Turn]:
    out = []
    for k in range(first, first + count):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 12)))
        out.append(Turn(id=f"{conversation}-{k}", conversation_id=conversation, user_id=_USER,
                        role=_ROLES[k % 2], content=f"{conversation} turn {k}: {words}"))
    return out


async def _writer(memory: AsyncAgentMemory, conversation: str, config: TrialConfig, ledger: _Ledger,
                  stop: asyncio.Event, rng: random.Random) -> None:
    """Store ``config.turns_per_writer`` turns in calls of 1-3 turns until ``stop`` is set."""
    k = 0
    while k < config.turns_per_writer and not stop.is_set():
        size = min(rng.choice((1, 1, 2, 3)), config.turns_per_writer - k)
        batch = _turns(conversation, k, size, rng)
        k += size
        ids = [t.id for t in batch]
        try:
            if size == 1:
                stored = [await asyncio.wait_for(memory.store_turn(batch[0]), config.call_timeout)]
            else:
                stored = await asyncio.wait_for(memory.store_turns(batch), config.call_timeout)
        except TimeoutError:
            ledger.hung += 1
            ledger.raised.append((ids, "TimeoutError (hung)"))
            continue
        except asyncio.CancelledError:  # the caller's deadline (TrialConfig.deadline_seconds)
            ledger.raised.append((ids, "cancelled at the caller's deadline"))
            raise
        except Exception as exc:  # what the caller would see; the check below says whether it is ours
            if not isinstance(exc, AgentXMemoryError):
                ledger.foreign.append(f"{type(exc).__module__}.{type(exc).__name__}: {exc}"[:300])
            ledger.raised.append((ids, type(exc).__name__))
            continue
        for turn in stored:
            ledger.acked[turn.id] = turn
        ledger.acked_calls += 1
        await asyncio.sleep(0)


async def _killer(cluster: Cluster, target: str, threshold: int, config: TrialConfig, ledger: _Ledger,
                  stop: asyncio.Event, writers_done: asyncio.Event) -> float:
    """Kill ``target`` once ``threshold`` calls were acknowledged; stop the writers ``outage_seconds`` later.
    Returns the monotonic time of the kill."""
    while ledger.acked_calls < threshold and not writers_done.is_set():
        await asyncio.sleep(0.002)
    await asyncio.to_thread(cluster.kill, target)
    at = time.monotonic()
    await asyncio.sleep(config.outage_seconds)
    stop.set()
    return at


async def _sql(memory: AsyncAgentMemory, query: str, params: Any = None) -> list[dict[str, Any]]:
    return await memory.ctx.postgres.fetch(query, params)


async def _graph(memory: AsyncAgentMemory, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    return await memory.ctx.graph.read(query, params)


_AUDITED = ("SELECT DISTINCT jsonb_array_elements_text(metadata->'affected_ids') AS id FROM memory_audit_log"
            " WHERE operation = 'store' AND memory_type = 'episodic' AND conversation_id = ANY(%s)")
_LOG_ROWS = ("SELECT turn_id, conversation_id, turn_index, role, content, " + projected() + ", projection_error"
             " FROM conversation_logs WHERE conversation_id = ANY(%s)")


async def _verify(memory: AsyncAgentMemory, conversations: list[str], ledger: _Ledger, result: TrialResult) -> None:
    """The checks after reconcile (see the module docstring); counts go into ``result``."""
    for conversation in conversations:
        stored = {t.id: t for t in await _stored_conversation(memory, conversation)}
        for turn in ledger.acked.values():
            if turn.conversation_id != conversation:
                continue
            got = stored.get(turn.id)
            if got is None or (got.index, got.content, got.role) != (turn.index, turn.content, turn.role):
                result.lost += 1
                result.problems.append(f"acknowledged turn {turn.id} (index {turn.index}) is "
                                       + ("missing" if got is None else f"stored differently (index {got.index})"))
    rows = await _sql(memory, _LOG_ROWS, (conversations,))
    result.log_rows = len(rows)
    contents = Counter(r["content"] for r in rows)
    indexes = Counter((r["conversation_id"], r["turn_index"]) for r in rows)
    result.duplicates += sum(n - 1 for n in contents.values() if n > 1) + sum(n - 1 for n in indexes.values() if n > 1)
    raised_ids = {turn_id for ids, _ in ledger.raised for turn_id in ids}
    logged = {r["turn_id"]: r for r in rows}
    result.raised_durable = len(raised_ids & logged.keys())
    result.quarantined = sum(1 for r in rows if r["projection_error"] is not None)
    nodes = await _graph(memory, "MATCH (t:Turn) WHERE t.conversation_id IN $ids "
                                 "RETURN t.id AS id, t.index AS idx, t.content AS content", {"ids": conversations})
    node_count = Counter(n["id"] for n in nodes)
    result.duplicates += sum(n - 1 for n in node_count.values() if n > 1)
    node_by_id = {n["id"]: n for n in nodes}
    edges = await _graph(memory, "MATCH (c:Conversation)-[:HAS_TURN]->(t:Turn) WHERE c.id IN $ids "
                                 "RETURN c.id AS conversation, t.id AS id", {"ids": conversations})
    edge_count = Counter((e["conversation"], e["id"]) for e in edges)
    conv_nodes = await _graph(memory, "MATCH (c:Conversation) WHERE c.id IN $ids RETURN c.id AS id",
                              {"ids": conversations})
    result.duplicates += sum(n - 1 for n in Counter(c["id"] for c in conv_nodes).values() if n > 1)
    timeline = Counter(r["id"] for r in await _sql(
        memory, "SELECT neo4j_node_id AS id FROM memory_timeline WHERE memory_type = 'episodic'"
                " AND neo4j_node_id = ANY(%s)", (list(logged),)))
    for turn_id, row in logged.items():
        node = node_by_id.get(turn_id)
        missing = []
        if not row["projected"]:
            missing.append("projected = false" + (f" ({row['projection_error']})" if row["projection_error"] else ""))
        if node is None or (node["idx"], node["content"]) != (row["turn_index"], row["content"]):
            missing.append("no matching Turn node")
        if edge_count[(row["conversation_id"], turn_id)] != 1:
            missing.append(f"{edge_count[(row['conversation_id'], turn_id)]} HAS_TURN edges")
        if timeline[turn_id] != 1:
            missing.append("no timeline row")
        if missing:
            result.unrepaired += 1
            result.problems.append(f"log row {turn_id}: {', '.join(missing)}")
    strays = node_count.keys() - logged.keys()
    if strays:
        result.problems.append(f"{len(strays)} Turn node(s) without a log row: {sorted(strays)[:5]}")


async def _stored_conversation(memory: AsyncAgentMemory, conversation: str) -> list[Turn]:
    try:
        return await memory.get_conversation(conversation, _USER)
    except AgentXMemoryError:  # NotFoundError: nothing of it reached the log
        return []


async def _close(memory: AsyncAgentMemory, timeout: float, result: TrialResult, what: str) -> None:
    try:
        await asyncio.wait_for(memory.close(), timeout)
    except TimeoutError:
        result.problems.append(f"closing the {what} memory hung for more than {timeout:.0f}s")
    except Exception as exc:
        result.problems.append(f"closing the {what} memory raised {type(exc).__name__}: {exc}")


async def run_trial(cluster: Cluster, target: str, trial: int, config: TrialConfig | None = None,
                    *, seed: int | None = None) -> TrialResult:
    """One crash trial against ``cluster`` (whose servers run): ingest, kill ``target``, restart, reconcile, check.

    Never raises for what it checks: a lost turn, a missing repair, a hang or a raw exception ends up in the
    result (``ok`` is False). Raises only when the trial itself cannot run (the servers cannot be started).
    """
    config = config or TrialConfig()
    rng = random.Random(seed)
    result = TrialResult(target=target, trial=trial)
    run_id = uuid.uuid4().hex[:8]
    conversations = [f"crash-{run_id}-w{w}" for w in range(config.writers)]
    ledger = _Ledger()
    memory = await AsyncAgentMemory.open(cluster.settings(), user_id=_USER)
    planned_calls = config.writers * config.turns_per_writer * 4 // 7  # calls average 1.75 turns
    low, high = config.kill_window
    threshold = rng.randint(max(1, int(planned_calls * low)), max(1, int(planned_calls * high)))
    stop, writers_done = asyncio.Event(), asyncio.Event()
    writers = [asyncio.create_task(_writer(memory, c, config, ledger, stop, random.Random(rng.random())))
               for c in conversations]
    all_writers = asyncio.gather(*writers, return_exceptions=True)
    all_writers.add_done_callback(lambda _: writers_done.set())
    try:
        killed_at = await _killer(cluster, target, threshold, config, ledger, stop, writers_done)
        if config.deadline_seconds is not None:
            _done, pending = await asyncio.wait(writers, timeout=config.deadline_seconds)
            for task in pending:
                task.cancel()
        await all_writers
    except BaseException:
        for task in writers:
            task.cancel()
        await asyncio.gather(*writers, return_exceptions=True)
        await _close(memory, config.close_timeout, result, "crashed")
        raise
    restarting = time.monotonic()
    result.writers_stopped_seconds = restarting - killed_at
    await asyncio.to_thread(cluster.restart)
    result.restart_seconds = time.monotonic() - restarting
    await _close(memory, config.close_timeout, result, "crashed")

    result.acknowledged = len(ledger.acked)
    result.acknowledged_calls = ledger.acked_calls
    result.raised_calls = len(ledger.raised)
    result.raised_turns = sum(len(ids) for ids, _ in ledger.raised)
    result.raised_by_type = Counter(name for _, name in ledger.raised)
    result.hung_calls = ledger.hung
    if ledger.hung:
        result.problems.append(f"{ledger.hung} store call(s) hung for more than {config.call_timeout:.0f}s")
    result.problems += [f"raw exception escaped the API: {text}" for text in ledger.foreign]

    started = time.monotonic()
    fresh = await AsyncAgentMemory.open(cluster.settings(), user_id=_USER)
    try:
        before = await _sql(fresh, "SELECT count(*) AS n FROM conversation_logs c JOIN turn_projection_queue q"
                                   " ON q.log_id = c.id WHERE c.conversation_id = ANY(%s)", (conversations,))
        result.needed_reconcile = before[0]["n"]
        raised_ids = [turn_id for ids, _ in ledger.raised for turn_id in ids]
        complete = {r["turn_id"] for r in await _sql(
            fresh, "SELECT turn_id FROM conversation_logs c WHERE turn_id = ANY(%s) AND " + is_projected("c"),
            (raised_ids,))}
        audited = {r["id"] for r in await _sql(fresh, _AUDITED, (conversations,))}
        result.raised_complete = len(complete)
        result.raised_complete_unaudited = len(complete - audited)
        reconciled = await fresh.reconcile()
        result.reconcile_seconds = time.monotonic() - started
        result.repaired = reconciled.projected
        if reconciled.quarantined:
            result.problems.append(f"reconcile quarantined {[q.turn_id for q in reconciled.quarantined]}")
        await _verify(fresh, conversations, ledger, result)
    finally:
        await _close(fresh, config.close_timeout, result, "fresh")
    return result


async def run_trials(cluster: Cluster, targets: Sequence[str], trials: int, config: TrialConfig | None = None, *,
                     seed: int | None = None, echo: Any = None) -> list[TrialResult]:
    """``trials`` trials per target (interleaved: target after target, round after round); ``echo(line)`` gets
    each trial's line as it finishes."""
    rng = random.Random(seed)
    results = []
    for trial in range(1, trials + 1):
        for target in targets:
            result = await run_trial(cluster, target, trial, config, seed=rng.randrange(2**32))
            results.append(result)
            if echo is not None:
                echo(result.line())
    return results


def format_summary(results: Sequence[TrialResult]) -> str:
    """The summary table (markdown), one row per target."""
    header = ("| target | trials | acknowledged turns | raised calls (turns) | raised but durable "
              "| raised but complete (no audit entry) | lost acknowledged "
              "| needed reconcile | repaired by reconcile | unrepaired | duplicates | writers stopped s (mean / max) "
              "| restart s (mean / max) "
              "| reconcile s (mean / max) | failed trials |")
    lines = [header, "|" + "---|" * header.count(" | ") + "---|"]
    for target in dict.fromkeys(r.target for r in results):
        rows = [r for r in results if r.target == target]
        stopped = [r.writers_stopped_seconds for r in rows]
        restart = [r.restart_seconds for r in rows]
        reconcile = [r.reconcile_seconds for r in rows]
        lines.append(
            f"| {target} | {len(rows)} | {sum(r.acknowledged for r in rows)} "
            f"| {sum(r.raised_calls for r in rows)} ({sum(r.raised_turns for r in rows)}) "
            f"| {sum(r.raised_durable for r in rows)} "
            f"| {sum(r.raised_complete for r in rows)} ({sum(r.raised_complete_unaudited for r in rows)}) "
            f"| {sum(r.lost for r in rows)} "
            f"| {sum(r.needed_reconcile for r in rows)} | {sum(r.repaired for r in rows)} "
            f"| {sum(r.unrepaired for r in rows)} | {sum(r.duplicates for r in rows)} "
            f"| {statistics.mean(stopped):.2f} / {max(stopped):.2f} "
            f"| {statistics.mean(restart):.2f} / {max(restart):.2f} "
            f"| {statistics.mean(reconcile):.2f} / {max(reconcile):.2f} "
            f"| {sum(1 for r in rows if not r.ok)} |"
        )
    return "\n".join(lines)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=20, help="trials per target (default 20)")
    parser.add_argument("--writers", type=int, default=4, help="concurrent writer tasks (default 4)")
    parser.add_argument("--turns-per-writer", type=int, default=30, help="turns each writer plans (default 30)")
    parser.add_argument("--target", choices=(*EMBEDDED_TARGETS, "all"), default="all",
                        help="what to SIGKILL (default all: each of falkordb, postgres, both)")
    parser.add_argument("--outage", type=float, default=0.5,
                        help="seconds the writers keep calling after the kill (default 0.5)")
    parser.add_argument("--deadline", type=float, default=None,
                        help="cancel calls still running this many seconds after the outage window (default: wait "
                             "for them; a PostgreSQL outage holds them up to the pool's 30 s)")
    parser.add_argument("--home", type=Path, default=None,
                        help="data directory for the trial servers (default: a fresh temporary one, removed after)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (kill points, batch sizes)")
    parser.add_argument("--verbose", action="store_true", help="show the engine's log (errors of the outage)")
    args = parser.parse_args(argv)
    if args.trials < 1 or args.writers < 1 or args.turns_per_writer < 1:
        parser.error("--trials, --writers and --turns-per-writer must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the trials; print each trial and the summary; 1 when any acknowledged turn was lost or a repair missed."""
    args = _parse(argv)
    # The outage makes the engine log every failed write (working-memory cache, pool reconnects): expected here.
    handler = logging.StreamHandler()
    handler.setLevel(logging.INFO if args.verbose else logging.CRITICAL)  # psycopg.pool sets its logger's own level
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.CRITICAL, handlers=[handler])
    home = args.home
    own_home = home is None
    if home is None:
        home = crash_home()
    elif os.path.realpath(home) in {os.path.realpath(p) for p in _protected_homes()}:
        print(f"refusing to kill the servers of {home}: it is AGENTX_HOME or the default data directory",
              file=sys.stderr)
        return 2
    targets = list(EMBEDDED_TARGETS) if args.target == "all" else [args.target]
    config = TrialConfig(writers=args.writers, turns_per_writer=args.turns_per_writer, outage_seconds=args.outage,
                         deadline_seconds=args.deadline)
    cluster = EmbeddedCluster(home)
    print(f"crash trials: {args.trials} per target ({', '.join(targets)}), {args.writers} writers x "
          f"{args.turns_per_writer} turns, data directory {cluster.home}", flush=True)
    started = time.monotonic()
    try:
        cluster.start()
        results = asyncio.run(run_trials(cluster, targets, args.trials, config, seed=args.seed,
                                         echo=lambda line: print(line, flush=True)))
    finally:
        try:
            cluster.stop()
        finally:
            if own_home:
                shutil.rmtree(home, ignore_errors=True)
    print(f"\nsummary ({time.monotonic() - started:.0f} s):\n")
    print(format_summary(results))
    failed = [r for r in results if not r.ok]
    lost = sum(r.lost for r in results)
    print(f"\n{len(results) - len(failed)}/{len(results)} trials ok; lost acknowledged turns: {lost}")
    return 1 if failed else 0


def _protected_homes() -> list[str]:
    """Data directories this script must never kill servers of: ``AGENTX_HOME`` and the default ``./.agentx``."""
    homes = [".agentx", os.path.expanduser("~/.agentx")]
    if os.environ.get("AGENTX_HOME"):
        homes.append(os.environ["AGENTX_HOME"])
    return homes


if __name__ == "__main__":
    sys.exit(main())

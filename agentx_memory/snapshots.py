"""Snapshots of a user's memory (issue 16, seed 002): every store at one point in time, as a portable file.

A snapshot is a JSON-lines file (gzip-compressed when its name ends in ``.gz``):

* line 1, the header: ``format`` (:data:`FORMAT`), ``version`` (:data:`VERSION`), ``user_id``, ``created_at``,
  ``embedding`` (model and dimension of every vector in the file) and the graph backend it came from;
* one line per graph node of the user (label, id, properties, vector), per edge leaving one (labels and type, the
  ids of both ends, properties), per PostgreSQL row of a memory table (:data:`~agentx_memory.sql.snapshots.
  SNAPSHOT_TABLES`) and per working-memory key (type, value, time to live);
* a last line ``{"end": true, "counts": ...}``: a file without it was cut short and is refused.

:func:`write_snapshot` writes one; :func:`load_snapshot` loads one into a user who has no memory yet (the same user or
another id, on this installation or another, on either graph backend). A load that fails part-way removes what it
wrote. :func:`create_snapshot`, :func:`list_snapshots` and :func:`restore_snapshot` keep snapshots in the engine's
snapshot directory (``snapshots.dir``); restoring forgets the user's current memory, then loads the snapshot.
``forget_user`` deletes the user's kept snapshots too. The audit log and the run records are not part of a snapshot.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Final, cast

from .context import MemoryContext
from .errors import ConflictError, NotFoundError, ValidationError
from .fact_slots import slot_key
from .graph import cypher
from .sql.snapshots import AGENT_TABLES, SNAPSHOT_TABLES
from .wipe import wipe_user

__all__ = ["FORMAT", "VERSION", "SnapshotInfo", "create_snapshot", "delete_user_snapshots", "list_snapshots",
           "load_snapshot", "restore_snapshot", "write_snapshot"]

FORMAT: Final = "agentx-memory-snapshot"
VERSION: Final = 1
PAGE: Final = 500

#: Called with a stage name ("graph nodes", "postgres", ...) and how many records it has handled so far.
Progress = Callable[[str, int], None]


@dataclass
class SnapshotInfo:
    """One snapshot file: its id (the file name without suffixes), user, time, path and records per store."""

    snapshot_id: str
    user_id: str
    created_at: datetime
    path: Path
    counts: dict[str, int] = field(default_factory=dict)
    #: The agent whose memory it holds (None: the whole user's memory).
    agent_id: str | None = None


@contextmanager
def _open(path: Path, mode: str, *, gz: bool | None = None) -> Iterator[IO[str]]:
    if path.name.endswith(".gz") if gz is None else gz:
        with gzip.open(path, mode + "t", encoding="utf-8") as zipped:
            yield cast(IO[str], zipped)
    else:
        with path.open(mode, encoding="utf-8") as plain:
            yield plain


def _quiet(stage: str, done: int) -> None:
    """The default progress callback: says nothing."""


async def write_snapshot(ctx: MemoryContext, user_id: str, path: Path, *, progress: Progress = _quiet,
                         agent_id: str | None = None) -> SnapshotInfo:
    """Write every store's memory of ``user_id`` to ``path`` (see the module docstring) and return what it holds;
    with ``agent_id``, only what that agent wrote: its turns (log rows), facts and control memories with their
    edges, its timeline and short-term rows (no working memory: a session's state is shared)."""
    created = datetime.now(UTC)
    counts: dict[str, int] = defaultdict(int)
    partial = path.with_name(path.name + ".partial")  # a crash never leaves a file that looks whole
    with _open(partial, "w", gz=path.name.endswith(".gz")) as out:
        def emit(record: dict[str, Any], store: str) -> None:
            out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            counts[store] += 1

        emit({"format": FORMAT, "version": VERSION, "user_id": user_id, "agent_id": agent_id,
              "created_at": created.isoformat(),
              "embedding": {"model": ctx.settings.embedding.model, "dimension": ctx.settings.embedding.dimension},
              "graph_backend": ctx.graph.dialect.name}, "header")
        node_reads = cypher.SNAPSHOT_AGENT_NODES if agent_id else cypher.SNAPSHOT_NODES
        edge_reads = cypher.SNAPSHOT_AGENT_EDGES_FROM if agent_id else cypher.SNAPSHOT_EDGES_FROM
        for label in node_reads:
            after = ""
            while True:
                params = {"user_id": user_id, "after": after, "limit": PAGE, "agent_id": agent_id}
                nodes = await ctx.graph.read(node_reads[label], params)
                for node in nodes:
                    props = dict(node["props"])
                    vector = props.pop("embedding", None)
                    emit({"store": "graph", "node": label, "id": node["id"], "props": props,
                          "embedding": None if vector is None else [float(x) for x in vector]}, "graph nodes")
                for edge in await ctx.graph.read(edge_reads[label], params):
                    emit({"store": "graph", "edge": [label, edge["type"], edge["target_label"]],
                          "source": edge["source"], "target": edge["target"], "props": edge["props"]}, "graph edges")
                progress("graph", counts["graph nodes"])
                if len(nodes) < PAGE:
                    break
                after = nodes[-1]["id"]
        for table in AGENT_TABLES if agent_id else SNAPSHOT_TABLES:
            async for row in ctx.sql.snapshots.read(table, user_id, agent_id=agent_id):
                emit({"store": "postgres", "table": table, "row": row}, "postgres rows")
            progress("postgres", counts["postgres rows"])
        for entry in [] if agent_id else await ctx.working.export_user(user_id):
            emit({"store": "redis", "entry": entry}, "redis keys")
        out.write(json.dumps({"end": True, "counts": dict(counts)}) + "\n")
    partial.replace(path)
    return SnapshotInfo(_snapshot_id(path), user_id, created, path, dict(counts), agent_id)


def read_header(path: Path) -> dict[str, Any]:
    """The header of a snapshot file, checked (format and version); a :class:`ValidationError` names what is wrong."""
    try:
        with _open(path, "r") as handle:
            header = json.loads(handle.readline() or "null")
    except (OSError, ValueError) as exc:
        raise ValidationError("snapshot", f"{path} is not a readable snapshot: {exc}") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValidationError("snapshot", f"{path} is not an agentx-memory snapshot (no {FORMAT!r} header)")
    if not isinstance(header.get("version"), int) or header["version"] > VERSION:
        raise ValidationError("snapshot.version", f"{path} has format version {header.get('version')!r}; this "
                                                  f"engine reads versions up to {VERSION}")
    return header


def _check_embedding(ctx: MemoryContext, header: dict[str, Any]) -> None:
    embedding = header.get("embedding") or {}
    if (embedding.get("model"), embedding.get("dimension")) != (ctx.settings.embedding.model,
                                                               ctx.settings.embedding.dimension):
        raise ValidationError("snapshot.embedding", f"the snapshot's vectors are {embedding.get('model')!r} "
                              f"({embedding.get('dimension')} dimensions); this installation uses "
                              f"{ctx.settings.embedding.model!r} ({ctx.settings.embedding.dimension}); nothing was "
                              "loaded")


def _read_records(path: Path) -> dict[str, list[dict[str, Any]]]:
    by_store: dict[str, list[dict[str, Any]]] = defaultdict(list)
    ended = False
    with _open(path, "r") as handle:
        handle.readline()
        for number, line in enumerate(handle, start=2):
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise ValidationError("snapshot", f"{path}, line {number}: not JSON ({exc})") from exc
            if record.get("end") is True:
                ended = True
                break
            store = record.get("store")
            if store not in ("graph", "postgres", "redis"):
                raise ValidationError("snapshot", f"{path}, line {number}: unknown store {store!r}")
            by_store[store].append(record)
    if not ended:
        raise ValidationError("snapshot", f"{path} was cut short (no end line): nothing was loaded")
    return by_store


async def user_has_memory(ctx: MemoryContext, user_id: str, agent_id: str | None = None) -> bool:
    """True when the user (or, with ``agent_id``, that agent) has a node of any memory label or a row in any memory
    table."""
    reads = cypher.SNAPSHOT_AGENT_NODES if agent_id else {label: cypher.SNAPSHOT_NODES[label]
                                                           for label in cypher.USER_LABELS}
    for statement in reads.values():
        if await ctx.graph.read(statement, {"user_id": user_id, "agent_id": agent_id, "after": "", "limit": 1}):
            return True
    for table in AGENT_TABLES if agent_id else SNAPSHOT_TABLES:
        async for _ in ctx.sql.snapshots.read(table, user_id, agent_id=agent_id):
            return True
    return False


async def wipe_agent(ctx: MemoryContext, user_id: str, agent_id: str) -> dict[str, int]:
    """Delete what ``agent_id`` wrote: its turns, facts and control memories in the graph (with their edges) and its
    rows of the tables that record agents; return the counts."""
    counts: dict[str, int] = {}
    for label, statement in cypher.FORGET_AGENT_NODES.items():
        deleted = 0
        while True:
            rows = await ctx.graph.write(statement, {"user_id": user_id, "agent_id": agent_id, "limit": PAGE})
            page = rows[0]["deleted"] if rows else 0
            deleted += page
            if page < PAGE:
                break
        counts[label] = deleted
    counts.update(await ctx.sql.snapshots.delete_agent(user_id, agent_id))
    return counts


async def load_snapshot(ctx: MemoryContext, path: Path, *, user_id: str | None = None,
                        progress: Progress = _quiet) -> dict[str, int]:
    """Load a snapshot into ``user_id`` (default: the snapshot's user), who must have no memory yet; return the
    records written per store. Refused before any write: another format or a newer version, another embedding model
    or dimension, a user who has memory (:class:`ConflictError`: forget them or restore instead), ids another user
    holds. A failure while writing removes what was written."""
    header = read_header(path)
    target = user_id or str(header["user_id"])
    agent = header.get("agent_id")
    _check_embedding(ctx, header)
    records = _read_records(path)
    if await user_has_memory(ctx, target, agent):
        who = f"agent {agent!r} of user {target!r}" if agent else f"user {target!r}"
        raise ConflictError(f"{who} already has memory: forget it first, or restore the snapshot (which replaces it)")
    nodes: dict[str, list[dict[str, Any]]] = defaultdict(list)
    edges: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records["graph"]:
        if "node" in record:
            if record["node"] not in (cypher.SNAPSHOT_AGENT_NODES if agent else cypher.SNAPSHOT_RESTORE_NODES):
                raise ValidationError("snapshot", f"unknown node label {record['node']!r}")
            if agent:
                record["props"]["agent_id"] = agent  # an agent's snapshot restores only that agent's memory
            nodes[record["node"]].append(record)
        else:
            edge = tuple(record["edge"])
            if edge not in cypher.SNAPSHOT_RESTORE_EDGES:
                raise ValidationError("snapshot", f"unknown edge {edge!r}")
            edges[edge].append(record)
    for label, statement in cypher.SNAPSHOT_COLLISIONS.items():
        ids = [r["id"] for r in nodes.get(label, [])]
        for start in range(0, len(ids), PAGE):
            taken = await ctx.graph.read(statement, {"ids": ids[start:start + PAGE], "user_id": target})
            if taken:
                raise ConflictError(f"{label} ids {[r['id'] for r in taken]} belong to another user here: this "
                                    "snapshot cannot be loaded under another user of the installation it came from")
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records["postgres"]:
        if agent:
            if record["table"] not in AGENT_TABLES:
                raise ValidationError("snapshot", f"table {record['table']!r} is not part of an agent's snapshot")
            record["row"]["agent_id"] = agent
            if record["table"] == "conversation_logs":
                record["row"]["projected"] = False  # projected again below: the graph's conversation links
        rows[record["table"]].append(record["row"])
    redis_entries = [_rekey(r["entry"], str(header["user_id"]), target) for r in records["redis"]]

    counts: dict[str, int] = {}
    try:
        written = await ctx.sql.snapshots.write(target, rows)
        counts["postgres rows"] = sum(written.values())
        progress("postgres", counts["postgres rows"])
        if agent:
            from .episodic import EpisodicMemory

            await EpisodicMemory(ctx).reconcile()  # the agent's turns into the graph, in their conversations
        counts["graph nodes"] = await _load_nodes(ctx, target, nodes, edges, progress)
        counts["graph edges"] = await _load_edges(ctx, target, edges, progress)
        # Only now, and only the turns whose nodes came with the file: a turn stored while the snapshot was written
        # can be in its log rows as projected without its node (the graph is read first), and a load that stops
        # before this line (a crash, a graph gone with the cleanup below failing too) leaves reconcile the turns.
        turn_nodes = {r["id"] for r in nodes.get("Turn", [])}
        await ctx.sql.snapshots.unqueue(target, [r["turn_id"] for r in rows.get("conversation_logs", [])
                                                 if r.get("projected") and r.get("turn_id") in turn_nodes])
        counts["redis keys"] = await ctx.working.import_user(target, redis_entries)
    except BaseException:
        # the user (or the agent) had no memory before: nothing of theirs is lost
        await (wipe_agent(ctx, target, agent) if agent else wipe_user(ctx, target))
        raise
    return counts


async def _load_nodes(ctx: MemoryContext, user_id: str, nodes: dict[str, list[dict[str, Any]]],
                      edges: dict[tuple[str, str, str], list[dict[str, Any]]], progress: Progress) -> int:
    tools = {e["target"] for (_, _, target), found in edges.items() if target == "Tool" for e in found}
    if tools:
        await ctx.graph.write(cypher.SNAPSHOT_RESTORE_NODES["Tool"], {"rows": [{"id": t, "props": {"name": t}}
                                                                      for t in sorted(tools)]})
    done = 0
    for label in cypher.SNAPSHOT_LABELS:  # an agent's snapshot holds only facts and controls among them
        found = nodes.get(label, [])
        for start in range(0, len(found), PAGE):
            page = found[start:start + PAGE]
            rows = [{"id": r["id"], "props": _restored_props(label, r["props"], user_id)} for r in page]
            await ctx.graph.write(cypher.SNAPSHOT_RESTORE_NODES[label], {"rows": rows, "user_id": user_id})
            vectors = [{"id": r["id"], "embedding": r["embedding"]} for r in page if r.get("embedding")]
            if vectors and label in cypher.SNAPSHOT_RESTORE_VECTORS:
                await ctx.graph.write(cypher.SNAPSHOT_RESTORE_VECTORS[label], {"rows": vectors, "user_id": user_id})
            done += len(page)
            progress("graph nodes", done)
    return done


def _restored_props(label: str, props: dict[str, Any], user_id: str) -> dict[str, Any]:
    """A node's snapshot properties as they are written back for ``user_id``: its user, and a fact's slot key made
    for that user (a snapshot taken before facts had one, or of another user, holds none or another user's)."""
    if label == "User":
        return {**props, "id": user_id}
    restored = {**props, "user_id": user_id}
    if label == "Fact":
        restored["slot_key"] = slot_key(user_id, str(props.get("claim") or ""))
    return restored


async def _load_edges(ctx: MemoryContext, user_id: str, edges: dict[tuple[str, str, str], list[dict[str, Any]]],
                      progress: Progress) -> int:
    done = 0
    for edge, found in edges.items():
        for start in range(0, len(found), PAGE):
            rows = [{"source": r["source"], "target": r["target"], "props": r["props"]}
                    for r in found[start:start + PAGE]]
            await ctx.graph.write(cypher.SNAPSHOT_RESTORE_EDGES[edge], {"rows": rows, "user_id": user_id})
            done += len(rows)
            progress("graph edges", done)
    return done


def _rekey(entry: dict[str, Any], source_user: str, target_user: str) -> dict[str, Any]:
    """A working-memory entry of ``source_user`` moved under ``target_user`` (the user is part of the key)."""
    from .working import key_segment

    old, new = f"working:{{{key_segment(source_user)}:", f"working:{{{key_segment(target_user)}:"
    key = str(entry.get("key", ""))
    return {**entry, "key": new + key[len(old):]} if key.startswith(old) else entry


# --- snapshots the engine keeps --------------------------------------------------------------------------------------

def user_snapshot_dir(ctx: MemoryContext, user_id: str) -> Path:
    """The directory of the user's kept snapshots (per namespace; the user id hashed, so any id is a safe name)."""
    root = ctx.settings.snapshots.dir or ctx.settings.embedded.home / "snapshots"
    return root / ctx.settings.postgres.db_schema / hashlib.sha256(user_id.encode()).hexdigest()[:32]


def _snapshot_id(path: Path) -> str:
    return path.name.split(".", 1)[0]


async def create_snapshot(ctx: MemoryContext, user_id: str, *, progress: Progress = _quiet,
                          agent_id: str | None = None) -> SnapshotInfo:
    """Snapshot the user's memory (or what ``agent_id`` wrote) into the engine's snapshot directory; return it (its
    id restores it)."""
    directory = user_snapshot_dir(ctx, user_id)
    directory.mkdir(parents=True, exist_ok=True)
    snapshot_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ") + "-" + uuid.uuid4().hex[:8]
    return await write_snapshot(ctx, user_id, directory / f"{snapshot_id}.jsonl.gz", progress=progress,
                                agent_id=agent_id)


def list_snapshots(ctx: MemoryContext, user_id: str, *, agent_id: str | None = None) -> list[SnapshotInfo]:
    """The user's kept snapshots, oldest first (with ``agent_id``: only that agent's)."""
    directory = user_snapshot_dir(ctx, user_id)
    out = []
    for path in sorted(directory.glob("*.jsonl.gz")) if directory.is_dir() else []:
        header = read_header(path)
        if agent_id is not None and header.get("agent_id") != agent_id:
            continue
        out.append(SnapshotInfo(_snapshot_id(path), str(header["user_id"]),
                                datetime.fromisoformat(header["created_at"]), path, agent_id=header.get("agent_id")))
    return out


def find_snapshot(ctx: MemoryContext, user_id: str, snapshot_id: str, *, agent_id: str | None = None) -> SnapshotInfo:
    """One of the user's kept snapshots (with ``agent_id``: of that agent); :class:`NotFoundError` if there is none
    with that id."""
    for info in list_snapshots(ctx, user_id, agent_id=agent_id):
        if info.snapshot_id == snapshot_id:
            return info
    raise NotFoundError("snapshot", snapshot_id)


async def restore_snapshot(ctx: MemoryContext, user_id: str, snapshot_id: str, *, progress: Progress = _quiet,
                           agent_id: str | None = None) -> dict[str, int]:
    """Put the memory the kept snapshot holds back as it was: the user's (their kept snapshots stay), or, for a
    snapshot of one agent, what that agent wrote (the rest of the user's memory stays). What is there now is wiped,
    then the snapshot loaded; return the records written per store. The file is read and checked before anything is
    wiped. With ``agent_id`` (an agent acting), only that agent's snapshots are found."""
    info = find_snapshot(ctx, user_id, snapshot_id, agent_id=agent_id)
    _check_embedding(ctx, read_header(info.path))
    _read_records(info.path)
    if info.agent_id:
        await wipe_agent(ctx, user_id, info.agent_id)
    else:
        await wipe_user(ctx, user_id)
    counts = await load_snapshot(ctx, info.path, user_id=user_id, progress=progress)
    await ctx.audit.log_write("restore_snapshot", "user", None, [user_id],
                              {"snapshot_id": snapshot_id, "agent_id": info.agent_id, **counts}, user_id=user_id)
    return counts


def delete_user_snapshots(ctx: MemoryContext, user_id: str) -> int:
    """Delete the user's kept snapshots; return how many went."""
    directory = user_snapshot_dir(ctx, user_id)
    if not directory.is_dir():
        return 0
    files = [p for p in directory.iterdir() if p.is_file()]
    for path in files:
        path.unlink()
    directory.rmdir()
    return len(files)

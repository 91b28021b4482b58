"""Resources of a benchmark step: RSS of each server and of this process, data-directory and namespace sizes.

``graph_server`` is the graph database on either backend: the embedded FalkorDB (which is also the Redis of working
memory), or the local Neo4j server (on Neo4j the embedded FalkorDB still runs, as Redis only). On Neo4j the namespace
is the whole database, so its size is the database's store and transaction-log files on disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any

__all__ = ["resources"]


def _directory_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):  # a file the server removed meanwhile (a rotated transaction log)
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def _tree_memory(processes: list[Any]) -> dict[str, int]:
    """RSS (and PSS where readable) summed over ``processes``, skipping any that exited since they were listed: a
    PostgreSQL backend ends with its connection, between the listing of the postmaster's children and the reading."""
    import psutil

    rss = pss = counted = 0
    pss_readable = True
    for process in processes:
        try:
            rss += process.memory_info().rss
        except psutil.NoSuchProcess:
            continue
        counted += 1
        if pss_readable:
            try:
                pss += process.memory_full_info().pss
            except psutil.NoSuchProcess:
                pass
            except (psutil.AccessDenied, AttributeError):
                pss_readable = False
    out = {"rss_bytes": rss, "processes": counted}
    if pss_readable:
        out["pss_bytes"] = pss
    return out


def _neo4j_server(uri: str, database: str) -> dict[str, Any]:
    """The Neo4j server behind ``uri`` when it runs on this machine: the process listening on the Bolt port (RSS), its
    data directory and the database's store + transaction-log files (found among the files the process holds open).
    A remote server, or one this user may not inspect, gets a note instead of figures."""
    from urllib.parse import urlsplit

    import psutil

    parts = urlsplit(uri)
    port = parts.port or 7687
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return {"note": f"Neo4j at {parts.hostname} is not on this machine: its memory and store size are not measured"}
    try:
        pids = {c.pid for c in psutil.net_connections(kind="tcp")
                if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid}
    except psutil.Error as exc:
        return {"note": f"cannot list listening sockets ({exc}): Neo4j's memory and store size are not measured"}
    if len(pids) != 1:
        return {"note": f"no single local process listens on port {port}: "
                        "Neo4j's memory and store size are not measured"}
    out: dict[str, Any] = {"pid": pids.pop()}
    try:
        process = psutil.Process(out["pid"])
        out["process"] = process.name()
        out["rss_bytes"] = process.memory_info().rss
        with contextlib.suppress(psutil.AccessDenied, AttributeError):
            out["pss_bytes"] = process.memory_full_info().pss
        marker = f"{os.sep}databases{os.sep}{database}{os.sep}"
        store = next((f.path for f in process.open_files() if marker in f.path), None)
    except psutil.Error as exc:
        out["note"] = f"cannot inspect process {out['pid']} ({exc})"
        return out
    if store is None:
        out["note"] = f"no open store file of database {database!r}: store size not measured"
        return out
    data_dir = Path(store[:store.index(marker)])  # <neo4j home>/data
    out["data_dir"] = str(data_dir)
    out["data_size_bytes"] = _directory_size(data_dir)
    # Store files do not shrink when records are deleted and transaction logs are retained, so on a server that held
    # data before (an earlier benchmark run) these are upper bounds of what the benchmark's data needs.
    out["store_bytes"] = _directory_size(data_dir / "databases" / database)
    out["transaction_log_bytes"] = _directory_size(data_dir / "transactions" / database)
    out["database_bytes"] = out["store_bytes"] + out["transaction_log_bytes"]
    return out


async def resources(memory, settings) -> dict[str, Any]:
    """RSS of each embedded server (PostgreSQL: the postmaster and its backends, RSS and PSS), of the graph server and
    of this process; the data directories' size; the benchmark namespace's size in each store.

    ``graph_server`` is the graph database on either backend: the embedded FalkorDB (which is also the Redis of working
    memory), or the local Neo4j server (on Neo4j the embedded FalkorDB still runs, as Redis only). On Neo4j the
    namespace is the whole database, so its size is the database's store and transaction-log files on disk."""
    import psutil

    out: dict[str, Any] = {"client_rss_bytes": psutil.Process().memory_info().rss}
    if settings.uses_embedded:
        from ...runtime import EmbeddedStack

        status = await asyncio.to_thread(EmbeddedStack(settings.embedded).status)
        for name, info in status.items():
            entry: dict[str, Any] = {"data_size_bytes": info.get("data_size_bytes"), "pid": info.get("pid"),
                                     "state": info.get("state")}
            try:
                process = psutil.Process(int(info["pid"]))
                entry.update(_tree_memory([process, *process.children(recursive=True)]))
            except (psutil.Error, KeyError, TypeError, ValueError) as exc:
                entry["error"] = str(exc)
            out[name] = entry
    rows = await memory.ctx.postgres.fetch(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS bytes FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind IN ('r', 'm', 'p')",
        (settings.postgres.db_schema,))
    out["namespace_postgres_bytes"] = rows[0]["bytes"]
    redis = getattr(memory.ctx.graph, "redis", None)
    if redis is not None:
        try:
            reply = await redis.execute_command("GRAPH.MEMORY", "USAGE", settings.graph.name)
            if isinstance(reply, list):
                reply = dict(zip(reply[::2], reply[1::2], strict=False))
            reply = {(k.decode() if isinstance(k, bytes) else k): v for k, v in reply.items()}
            out["namespace_graph_bytes"] = int(float(reply.get("total_graph_sz_mb", 0)) * 1024 * 1024)
        except Exception as exc:  # older FalkorDB: no GRAPH.MEMORY
            out["namespace_graph_error"] = str(exc)
    if settings.graph.backend == "neo4j":
        server = await asyncio.to_thread(_neo4j_server, settings.graph.uri, settings.graph.database or "neo4j")
        out["graph_server"] = {"backend": "neo4j", **server}
        if "database_bytes" in server:
            out["namespace_graph_bytes"] = server["database_bytes"]
    elif "falkordb" in out:
        out["graph_server"] = {"backend": "falkordb", **out["falkordb"]}
    return out

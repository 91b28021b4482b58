"""FalkorDB adapter of the graph port (the native ``falkordb`` asyncio client over TCP or a unix socket).

FalkorDB's Bolt endpoint is experimental (it crashed the server on ``datetime()`` here), so only the native client is
used. Unique constraints are ``GRAPH.CONSTRAINT`` commands rather than Cypher, and ``CREATE INDEX`` fails when the
index exists, so :meth:`FalkorGraphStore.apply_schema` reads ``db.indexes()`` / ``db.constraints()`` first and
creates only what is missing.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import random
import time
from array import array
from collections.abc import Mapping, Sequence
from typing import Any, Final

import redis.exceptions
from falkordb.asyncio import FalkorDB
from falkordb.asyncio.query_result import QueryResult
from falkordb.edge import Edge
from falkordb.node import Node
from falkordb.path import Path
from redis.asyncio import BlockingConnectionPool, UnixDomainSocketConnection

from ..errors import ConflictError, StorageError, StorageUnavailableError
from ..polling import WaitTimeoutError, await_until
from . import cypher, falkordb_result
from .dialects import FalkorDialect, schema_specs
from .port import VECTOR_LABELS, GraphStore, Statement, VectorIndexUsage, tenant_label
from .tenant_index import SIZES_TTL

__all__ = ["FalkorGraphStore"]

META_LABEL = "AgentxMeta"
#: Seconds a read of the vector indexes' state steers the choice between index and scan: short, because an index
#: being rebuilt (by another process) answers from the nodes it has indexed so far and must not be searched.
INDEX_STATE_TTL = 5.0
#: Probe searches :meth:`FalkorGraphStore.vector_index_usage` runs per index, and the entries each asks for.
PROBES = 4
PROBE_K = 100


#: Values :func:`_plain` returns as they are (most values of a result), checked by exact type before anything else.
_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any) -> Any:
    """Convert client values to the port's one shape: dicts, lists and scalars (a node or edge becomes the dict of its
    properties, a path the list of its nodes and edges in order, as in the Neo4j adapter)."""
    if type(value) in _SCALAR_TYPES:
        return value
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (Node, Edge)):
        return {k: _plain(v) for k, v in value.properties.items()}
    if isinstance(value, Path):
        out: list[Any] = [_plain(value.get_node(0))]
        for i in range(value.edge_count()):
            out += [_plain(value.get_edge(i)), _plain(value.get_node(i + 1))]
        return out
    return value


class _Rendered:
    """A parameter value already written the way the client writes it into the ``CYPHER`` params header: it writes
    ``str(value)`` of a type it does not know, so this passes through as its text."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def _prerender(value: Any) -> Any:
    """``value`` with each list of floats (an embedding) written out once by ``json`` in C, as the client would write
    it (``[0.25,-1.0]``), instead of float by float through its ``stringify_param_value``: storing 2,500 turns spent
    2 of its 17 s there (issue 17). Anything else is left to the client."""
    if isinstance(value, list) and value and type(value[0]) is float and all(type(x) is float for x in value):
        return _Rendered(_vector_text(array("d", value).tobytes()))
    # a scalar is left as it is without a call per value: a batch's rows hold hundreds of thousands of them
    if isinstance(value, Mapping):
        return {k: v if type(v) in _SCALARS else _prerender(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [v if type(v) in _SCALARS else _prerender(v) for v in value]
    return value


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


@functools.lru_cache(maxsize=64)
def _vector_text(doubles: bytes) -> str:
    # One recall passes its question's vector to half a dozen statements; writing it out costs ~30x hashing it. The key
    # is the floats' bytes, not their values: 0.0 == -0.0, yet each must be written as the client would write it.
    return json.dumps(array("d", doubles).tolist(), separators=(",", ":"), allow_nan=False)


def _wrap(exc: Exception, query: str) -> Exception:
    text = str(exc)
    if isinstance(exc, (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)):
        return StorageUnavailableError(f"FalkorDB unreachable: {text}")
    if "constraint violation" in text:
        return ConflictError(f"FalkorDB constraint violation: {text}")
    return StorageError(f"FalkorDB query failed: {text} (query: {query[:200]!r})")


class FalkorGraphStore(GraphStore):
    """A FalkorDB graph (one graph key in a FalkorDB server) behind the :class:`GraphStore` port."""

    dialect = FalkorDialect()

    def __init__(self, *, graph_name: str, url: str | None = None, unix_socket_path: str | None = None,
                 password: str | None = None, max_connections: int = 32, pool_wait_seconds: float = 30.0):
        super().__init__()
        #: When the vector indexes' state was read (monotonic seconds), and what it was.
        self._index_state_cache: tuple[float, dict[str, VectorIndexUsage]] | None = None
        #: Per label, when its entries were last probed, the document count then, and the entries the probes measured.
        self._probed_entries: dict[str, tuple[float, int, int]] = {}
        # The client probes the server (a synchronous INFO, to detect a cluster) while it is constructed, so an
        # unreachable server fails here already. The pool blocks (up to pool_wait_seconds) when every connection is
        # busy: redis' default pool raised "Too many connections" at the 33rd concurrent call, read as an outage.
        # A reply is awaited however long its statement runs (socket_timeout None): redis-py 8 cuts reads at 5 s by
        # default, and a cut batch write on a big graph read as an outage while the server went on writing it.
        try:
            if unix_socket_path:
                pool = BlockingConnectionPool(
                    connection_class=UnixDomainSocketConnection, path=unix_socket_path, password=password or None,
                    max_connections=max_connections, timeout=pool_wait_seconds, decode_responses=True,
                    socket_timeout=None)
            elif url:
                if url.startswith(("falkor://", "falkors://")):
                    url = "redis" + url[len("falkor"):]
                pool = BlockingConnectionPool.from_url(url, max_connections=max_connections, timeout=pool_wait_seconds,
                                                       decode_responses=True, socket_timeout=None)
            else:
                raise ValueError("FalkorGraphStore needs url or unix_socket_path")
            self._db = FalkorDB(connection_pool=pool)
        except redis.exceptions.RedisError as exc:
            raise _wrap(exc, "") from exc
        self.graph_name = graph_name
        self._graph = self._db.select_graph(graph_name)

    @property
    def redis(self):
        """The underlying ``redis.asyncio.Redis`` connection (the same server also holds working memory)."""
        return self._db.connection

    async def _run(self, query: str, params: Mapping[str, Any] | None, *, read_only: bool,
                   tenant_index: bool = False) -> list[dict[str, Any]]:
        rendered = self.dialect.render(query, tenant_index=tenant_index)
        try:
            command = self._command(rendered, params)
            try:
                reply = await self._db.connection.execute_command(
                    "GRAPH.RO_QUERY" if read_only else "GRAPH.QUERY", *command)
            except redis.exceptions.ResponseError as exc:
                if not read_only or "empty key" not in str(exc):
                    raise
                # GRAPH.RO_QUERY refuses a graph that does not exist yet (or was dropped); read it as the empty
                # graph it is (GRAPH.QUERY answers, creating the empty key).
                reply = await self._db.connection.execute_command("GRAPH.QUERY", *command)
            try:
                return falkordb_result.rows(reply)
            except falkordb_result.NeedsClient:
                result = QueryResult(self._graph)
                await result.parse(reply)
        except Exception as exc:  # the client raises plain redis errors
            raise _wrap(exc, rendered) from exc
        names = [column[1] for column in result.header]
        return [{name: _plain(value) for name, value in zip(names, row, strict=True)} for row in result.result_set]

    def _command(self, rendered: str, params: Mapping[str, Any] | None) -> tuple[str, str, str]:
        """The arguments of a ``GRAPH.QUERY`` / ``GRAPH.RO_QUERY`` command: the graph, the statement behind its
        parameters' ``CYPHER`` header (the client's own escaping), and the compact reply format."""
        header = self._graph._build_params_header(_prerender(dict(params or {})))
        return self.graph_name, header + rendered, "--compact"

    async def read(self, query, params=None):
        return await self._run(query, params, read_only=True)

    async def read_index(self, query, params):
        try:
            return await self._run(query, params, read_only=True, tenant_index=True)
        except StorageError:
            # The index may have been dropped for a rebuild since its state was read: then the scan answers.
            usage = (await self._index_state(fresh=True)).get(tenant_label(query))
            if usage is None or usage.building:
                return []
            raise

    async def vector_index_usage(self) -> dict[str, VectorIndexUsage]:
        usage = await self._index_state(fresh=True)
        return {label: await self._probed(item) for label, item in usage.items()}

    async def _probed(self, usage: VectorIndexUsage) -> VectorIndexUsage:
        """``usage`` with ``entries`` measured by probe searches. The index's document count (maxDocId) counts every
        re-indexing of a node, also those before the node held a vector (the upserts' MERGE and REMOVE steps: 60
        facts stored once count 240), so it overstates the dead vectors. The index returns only the live nodes among the
        entries nearest a vector, so the share returned of a few seeded random probes is the live share of the
        vectors it holds."""
        if usage.building or usage.live <= 0 or usage.entries <= usage.live or usage.dimension <= 0:
            return usage
        k = min(usage.live, PROBE_K)
        seeded = random.Random(usage.label)  # the same probes every time: a dry run reports what a run would do
        returned = 0
        for _ in range(PROBES):
            vector = [seeded.gauss(0.0, 1.0) for _ in range(usage.dimension)]
            rows = await self.read(cypher.INDEX_PROBE[usage.label], {"k": k, "embedding": vector})
            returned += int(rows[0]["n"]) if rows else 0
        share = returned / (PROBES * k)
        held = usage.live if share >= 1 else usage.entries if share <= 0 else round(usage.live / share)
        return dataclasses.replace(usage, entries=max(usage.live, min(usage.entries, held)))

    async def _index_entries(self, label: str) -> int | None:
        # FalkorDB's vector index searches through the dead vectors too: a fetch deep enough must count them. An
        # index that is missing or being built is not searched. The document count overstates them several times
        # (every upsert step re-indexes a node, see _probed): sized by it, a user's fetch cost more than a scan of
        # their nodes at any share, so the probes' measure steers, refreshed once a minute (SIZES_TTL) or when the
        # index was rebuilt; documents added since the probes count whole, so a stale measure errs deep.
        usage = (await self._index_state()).get(label)
        if usage is None or usage.building:
            return None
        probed = self._probed_entries.get(label)
        if probed is None or usage.entries < probed[1] or time.monotonic() - probed[0] >= SIZES_TTL:
            probed = (time.monotonic(), usage.entries, (await self._probed(usage)).entries)
            self._probed_entries[label] = probed
        return probed[2] + usage.entries - probed[1]

    async def _index_state(self, *, fresh: bool = False) -> dict[str, VectorIndexUsage]:
        cached = self._index_state_cache
        if not fresh and cached is not None and time.monotonic() - cached[0] < INDEX_STATE_TTL:
            return cached[1]
        rows = await self.read(FalkorDialect.INDEX_USAGE)
        usage = {}
        for label in VECTOR_LABELS:
            mine = [r for r in rows if r["label"] == label]
            vector = [r for r in mine if "VECTOR" in ((r["types"] or {}).get("embedding") or [])]
            if vector:
                row = vector[0]
                usage[label] = VectorIndexUsage(
                    label=label, live=int(row["documents"] or 0), entries=int(row["versions"] or 0),
                    dimension=int(((row["options"] or {}).get("embedding") or {}).get("dimension") or 0),
                    building=any(r["status"] != "OPERATIONAL" for r in mine))
        self._index_state_cache = (time.monotonic(), usage)
        return usage

    async def write(self, query, params=None):
        return await self._run(query, params, read_only=False)

    async def batch(self, statements: Sequence[Statement]) -> None:
        if not statements:
            return
        pipe = self._db.connection.pipeline(transaction=True)
        rendered = []
        for st in statements:
            text = self.dialect.render(st.query)
            rendered.append(text)
            pipe.execute_command("GRAPH.QUERY", *self._command(text, st.params))
        try:
            await pipe.execute()
        except Exception as exc:
            raise _wrap(exc, rendered[0]) from exc

    async def explain(self, query, params=None) -> str:
        rendered = self.dialect.render(query)
        try:
            plan = await self._graph.explain(rendered, dict(params or {}))
        except Exception as exc:
            raise _wrap(exc, rendered) from exc
        return str(plan)

    async def _existing_schema(self) -> tuple[set[tuple[str, str, str]], set[tuple[str, str]]]:
        indexes: set[tuple[str, str, str]] = set()
        for row in await self.read("CALL db.indexes() YIELD label, types RETURN label, types"):
            for prop, kinds in (row["types"] or {}).items():
                for kind in kinds:
                    indexes.add((row["label"], prop, kind.lower()))
        constraints: set[tuple[str, str]] = set()
        for row in await self.read(
            "CALL db.constraints() YIELD type, label, properties RETURN type, label, properties"
        ):
            if row["type"] == "UNIQUE":
                constraints.add((row["label"], ",".join(row["properties"])))
        return indexes, constraints

    async def apply_schema(self, *, dimension: int, model: str) -> None:
        # The meta node's key constraint comes first: without it, processes applying the schema to a new graph at
        # once each MERGE their own meta node. The embedding check comes next, before any vector index is made.
        await self._apply_indexes(dimension, only_label=META_LABEL)
        try:
            await cypher.check_embedding_meta(self, dimension=dimension, model=model)
        except ConflictError:  # a concurrent first MERGE won the key: the node exists now
            await cypher.check_embedding_meta(self, dimension=dimension, model=model)
        await self._apply_indexes(dimension)

    async def _apply_indexes(self, dimension: int, *, only_label: str | None = None) -> None:
        """Create the indexes and unique constraints that are missing (of one label, or all)."""
        indexes, constraints = await self._existing_schema()
        for label, props, kind, statement in self.dialect.index_plan(dimension):
            if (only_label and label != only_label) or all((label, prop, kind) in indexes for prop in props.split(",")):
                continue
            try:
                await self.write(statement)
            except StorageError as exc:
                if "already indexed" not in str(exc):  # a concurrent apply_schema got there first
                    raise
        for spec in schema_specs():
            if only_label and spec.label != only_label:
                continue
            if spec.kind == "unique" and (spec.label, spec.props[0]) not in constraints:
                await self._create_unique_constraint(spec.label, spec.props[0])

    async def _create_unique_constraint(self, label: str, prop: str) -> None:
        try:
            await self._db.connection.execute_command(
                "GRAPH.CONSTRAINT", "CREATE", self.graph_name, "UNIQUE", "NODE", label, "PROPERTIES", 1, prop
            )
        except redis.exceptions.ResponseError as exc:
            if "already exists" not in str(exc):
                raise StorageError(f"FalkorDB could not create unique constraint on {label}.{prop}: {exc}") from exc
        # Constraints build asynchronously; wait until it is enforced.
        async def operational() -> bool:
            rows = await self.read(
                "CALL db.constraints() YIELD type, label, properties, status "
                "WHERE label = $label RETURN properties, status",
                {"label": label},
            )
            return any(r["properties"] == [prop] and r["status"] == "OPERATIONAL" for r in rows)

        try:
            await await_until(operational, timeout=10, interval=0.01,
                              what=f"the FalkorDB unique constraint on {label}.{prop} to become operational")
        except WaitTimeoutError as exc:
            raise StorageError(str(exc)) from exc

    async def drop_vector_index(self, label: str) -> None:
        try:
            await self.write(self.dialect.drop_vector_index_statement(label))
        except StorageError as exc:
            if "no such index" not in str(exc):
                raise

    async def create_vector_index(self, label: str, *, dimension: int) -> None:
        await self.drop_vector_index(label)
        for index_label, _, kind, statement in self.dialect.index_plan(dimension):
            if index_label == label and kind == "vector":
                await self.write(statement)

    async def drop_all(self) -> None:
        try:
            await self._graph.delete()
        except redis.exceptions.ResponseError as exc:
            if "empty key" not in str(exc) and "Invalid graph operation on empty key" not in str(exc):
                raise StorageError(f"FalkorDB could not delete graph {self.graph_name}: {exc}") from exc

    async def close(self) -> None:
        await self._db.aclose()

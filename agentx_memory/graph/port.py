"""The graph port: what the memory subsystems need from a graph database, and the dialect that renders Cypher.

Domain code never branches on the database. It runs the shared statements of :mod:`agentx_memory.graph.cypher`
through a :class:`GraphStore`; the store renders them with its :class:`Dialect`, which is the only place where
Neo4j and FalkorDB differ:

* schema DDL (unique constraints, range, vector and full-text indexes),
* the vector-search and full-text-search calls,
* how a vector value is passed (FalkorDB needs ``vecf32(...)``),
* how a cosine score is normalized: both adapters return **cosine similarity in [-1, 1], higher = closer**.

Shared statements use a few markers that only the dialect expands (they are not valid Cypher on their own, so a
statement that skipped rendering fails loudly):

``@vec(expr)``
    a vector value to store or compare, e.g. ``SET t.embedding = @vec(row.embedding)``.
``@cosine(a, b)``
    cosine similarity of the stored vector ``a`` and the vector value ``b``, in [-1, 1]. ``b`` is a vector value, so
    bind the parameter once (``WITH @vec($embedding) AS query_vector``) rather than converting it on every row.
``@vector_search(Label, k, vector)``
    a ``CALL`` that yields ``node`` and ``similarity`` (cosine, [-1, 1]) from the label's vector index.
``@fulltext_search(Label, query)``
    a ``CALL`` that yields ``node`` and ``score`` from the label's full-text index.
``@tenant_match(Label, var, vector)``
    binds ``var`` to the ``$user_id``'s nodes of the label in ``$channels`` that are candidates for a vector search
    with ``vector``: every one of them (an exact scan, the default), or -- on a database whose vector index filters
    by tenant inside the index (Neo4j 2026.06+ ``SEARCH``) -- the ``$fetch`` nearest. Rendered with
    ``tenant_index=True`` it is the ``$fetch`` nearest nodes of the label's global vector index, kept when they are the
    tenant's (:meth:`Dialect.tenant_index_match`). The statement then ranks the candidates itself with ``@cosine``;
    run it with :meth:`GraphStore.read_vectors`, which picks the form and falls back to the exact scan when the
    index's candidates are too few.

Labels inside markers come from the fixed set in :data:`VECTOR_LABELS` / :data:`FULLTEXT_LABELS`; a marker naming
another label is a programming error (``ValueError``), so no user input can reach a label position.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, LiteralString

from .tenant_index import TenantSizes, index_fetch

__all__ = [
    "FULLTEXT_LABELS",
    "NAME_KEY_INDEXES",
    "RANGE_INDEXES",
    "UNIQUE_CONSTRAINTS",
    "VECTOR_LABELS",
    "Dialect",
    "GraphStore",
    "Statement",
    "VectorIndexUsage",
]

#: Node labels with a vector index on ``embedding``.
VECTOR_LABELS: tuple[str, ...] = ("Turn", "Entity", "Fact", "Strategy", "Goal", "Control")

#: Node labels with a full-text index, and the properties it covers.
FULLTEXT_LABELS: dict[str, tuple[str, ...]] = {
    "Turn": ("content",),
    "Fact": ("claim",),
    "Entity": ("name", "description"),
    "Strategy": ("description",),
    "Goal": ("description",),
}

#: Unique properties (spec 003: ``id`` of every node; Tool is keyed by ``name``). Entity and Strategy also have a
#: ``key`` (a hash of user, channel, type and normalized name/description) so concurrent upserts merge, not duplicate.
UNIQUE_CONSTRAINTS: tuple[tuple[str, str], ...] = (
    ("Conversation", "id"),
    ("Turn", "id"),
    ("Entity", "id"),
    ("Entity", "key"),
    ("EntityRedirect", "id"),
    ("Fact", "id"),
    ("Goal", "id"),
    ("Control", "id"),
    ("Strategy", "id"),
    ("Strategy", "key"),
    ("Tool", "name"),
    ("ToolInvocation", "id"),
    ("User", "id"),
    ("AgentxMeta", "key"),
)

#: Range indexes besides the unique keys: spec 003 channel indexes, composite (user_id, channel) indexes, and the
#: properties our queries filter or sort on.
RANGE_INDEXES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Turn", ("channel",)),
    ("Entity", ("channel",)),
    ("Fact", ("channel",)),
    ("Strategy", ("channel",)),
    ("Conversation", ("channel",)),
    ("Goal", ("channel",)),
    ("Conversation", ("user_id", "channel")),
    ("Entity", ("user_id", "channel")),
    ("Fact", ("user_id", "channel")),
    ("Turn", ("user_id", "channel")),
    ("Strategy", ("user_id", "channel")),
    ("Goal", ("user_id", "channel")),
    ("Control", ("user_id", "channel")),
    ("Turn", ("timestamp",)),
    ("Turn", ("conversation_id", "index")),
    ("Turn", ("user_id",)),
    ("Entity", ("user_id",)),
    ("Fact", ("user_id",)),
    ("Strategy", ("user_id",)),
    ("Goal", ("user_id",)),
    ("Control", ("user_id",)),
    ("Fact", ("source_turn_id",)),
    ("Fact", ("slot_key",)),
    ("Goal", ("status",)),
)

#: List properties whose elements are looked up exactly (``@entities_named``): a range index over the list on
#: FalkorDB, a full-text index with the keyword analyzer (each element one term) on Neo4j, whose range indexes do not
#: index the elements of a list.
NAME_KEY_INDEXES: tuple[tuple[str, str], ...] = (("Entity", "name_keys"),)


@dataclass(frozen=True)
class Statement:
    """A rendered statement with its parameters, ready for :meth:`GraphStore.batch`."""

    query: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class VectorIndexUsage:
    """What a label's vector index holds: ``entries`` vectors, of which ``live`` are its nodes' current ones (the rest
    are dead: vectors of nodes since updated or deleted that the index still searches through), of ``dimension``;
    ``building`` while the database is (re)building it."""

    label: str
    live: int
    entries: int
    dimension: int
    building: bool

    @property
    def dead_share(self) -> float:
        """The share of the index's entries that are dead (0 for an empty index)."""
        return (self.entries - self.live) / self.entries if self.entries > 0 else 0.0


#: How many rendered statements a dialect keeps (the engine's statements are a few hundred constants).
RENDERED_CACHE = 1024

_ARITY = {"vec": 1, "cosine": 2, "vector_search": 3, "fulltext_search": 2, "tenant_match": 3, "entities_named": 2,
          "start_at": 3}
_MARKER = re.compile(
    r"@(vec|cosine|vector_search|fulltext_search|tenant_match|entities_named|start_at)\(((?:[^()]|\([^()]*\))*)\)")


class Dialect(ABC):
    """What differs between graph databases. Everything else is shared Cypher text."""

    name: str

    def render(self, template: LiteralString | str, *, tenant_index: bool = False) -> str:
        """Expand the ``@marker(...)`` placeholders of a shared statement for this database (``tenant_index``:
        ``@tenant_match`` as :meth:`tenant_index_match`). A dialect's settings do not change once it is made, so
        each statement is expanded once (a recall renders about a dozen; expanding them took 0.08 ms of its client
        time), up to :data:`RENDERED_CACHE` statements."""
        cache: dict[tuple[str, bool], str] = self.__dict__.setdefault("_rendered", {})
        key = (template, tenant_index)
        rendered = cache.get(key)
        if rendered is None:
            rendered = self._expand(template, tenant_index=tenant_index)
            if len(cache) < RENDERED_CACHE:
                cache[key] = rendered
        return rendered

    def _expand(self, template: LiteralString | str, *, tenant_index: bool) -> str:
        def expand(match: re.Match[str]) -> str:
            kind, raw_args = match.group(1), match.group(2)
            args = [self._expand(a.strip(), tenant_index=tenant_index)
                    for a in _split_args(raw_args)]  # markers may nest
            if len(args) != _ARITY[kind] or not all(args):
                raise ValueError(f"@{kind}(...) takes {_ARITY[kind]} non-empty argument(s), got {match.group(0)!r}")
            if kind == "vec":
                return self.vector_value(args[0])
            if kind == "cosine":
                return self.cosine(args[0], args[1])
            if kind == "vector_search":
                label, k, vector = args
                _check_label(label, VECTOR_LABELS)
                return self.vector_search(label, k, vector)
            if kind == "tenant_match":
                label, var, vector = args
                _check_label(label, VECTOR_LABELS)
                if not var.isidentifier():
                    raise ValueError(f"@tenant_match variable must be an identifier, got {var!r}")
                if tenant_index:
                    if not vector.isidentifier():
                        raise ValueError(f"@tenant_match vector must be a variable to search an index, got {vector!r}")
                    return self.tenant_index_match(label, var, vector)
                return self.tenant_match(label, var, vector)
            if kind == "start_at":
                var, label, prop = args
                if not (var.isidentifier() and prop.isidentifier()):
                    raise ValueError(f"@start_at takes a variable and a property name, got {match.group(0)!r}")
                if (label, prop) not in UNIQUE_CONSTRAINTS and (label, (prop,)) not in RANGE_INDEXES:
                    raise ValueError(f"@start_at: {label}.{prop} has no index of its own")
                return self.start_at(var, label, prop)
            if kind == "entities_named":
                var, keys = args
                if not var.isidentifier():
                    raise ValueError(f"@entities_named variable must be an identifier, got {var!r}")
                return self.entities_named(var, keys)
            label, query = args
            _check_label(label, tuple(FULLTEXT_LABELS))
            return self.fulltext_search(label, query)

        rendered = _MARKER.sub(expand, template)
        if self.statement_prefix and ("@tenant_match(" in template or "@vector_search(" in template):
            rendered = self.statement_prefix + rendered
        return rendered

    #: Text put before a statement that uses ``@tenant_match`` or ``@vector_search`` (a Cypher version clause where
    #: the dialect renders them with syntax of a newer language version).
    statement_prefix: str = ""

    def start_at(self, var: str, label: str, prop: str) -> str:
        """Put right after a MATCH pattern (before its WHERE) whose ``var`` is looked up by ``prop`` (``IN $ids``, an
        equality): the plan starts there, through that property's index. Default: nothing (a planner that starts
        where the statement says)."""
        return ""

    def tenant_match(self, label: str, var: str, vector: str) -> str:
        """A MATCH binding ``var`` to the tenant's candidate nodes (default: all of them, an exact scan)."""
        return f"MATCH ({var}:{label} {{user_id: $user_id}}) WHERE {var}.channel IN $channels"

    def tenant_index_match(self, label: str, var: str, vector: str) -> str:
        """A clause binding ``var`` (and keeping the variable ``vector``) to the ``$fetch`` nodes of the label's vector
        index nearest ``vector`` -- every tenant's -- that are the ``$user_id``'s in ``$channels``. They hold the
        tenant's nearest nodes only when ``$fetch`` is deep enough for the tenant's share of the index
        (:func:`~agentx_memory.graph.tenant_index.index_fetch`)."""
        return (f"{self.nearest_nodes(label, '$fetch', vector)} WITH node AS {var}, {vector} "
                f"WHERE {var}.user_id = $user_id AND {var}.channel IN $channels")

    @abstractmethod
    def nearest_nodes(self, label: str, k: str, vector: str) -> str:
        """A CALL clause yielding ``node``: the ``k`` nodes of the label's vector index nearest the vector value
        ``vector`` (a ``@vec`` value, not a list)."""

    @abstractmethod
    def vector_value(self, expr: str) -> str:
        """Cypher expression that turns a list parameter into the database's vector value."""

    @abstractmethod
    def cosine(self, stored: str, vector: str) -> str:
        """Cypher expression: cosine similarity in [-1, 1] between a stored vector and a vector value."""

    @abstractmethod
    def vector_search(self, label: str, k: str, vector: str) -> str:
        """A CALL clause yielding ``node`` and ``similarity`` (cosine in [-1, 1]) from the label's vector index."""

    @abstractmethod
    def fulltext_search(self, label: str, query: str) -> str:
        """A CALL clause yielding ``node`` and ``score`` from the label's full-text index."""

    @abstractmethod
    def entities_named(self, var: str, keys: str) -> str:
        """Clauses binding ``var`` to each Entity (once) with one of ``keys`` (a list expression) among its
        ``name_keys``, read through the index of :data:`NAME_KEY_INDEXES`."""

    @abstractmethod
    def schema_statements(self, dimension: int) -> list[str]:
        """Cypher DDL that creates every constraint and index (idempotent where the database allows)."""

    def fulltext_query(self, words: Sequence[str]) -> str:
        """The full-text query string that matches any of ``words`` (escaped for the index's query syntax)."""
        cleaned = [re.sub(r"[^\w]", "", w) for w in words]
        return " OR ".join(w for w in cleaned if w)


def tenant_label(template: str) -> str:
    """The label of the ``@tenant_match`` in a shared statement (ValueError when it has none)."""
    for match in _MARKER.finditer(template):
        if match.group(1) == "tenant_match":
            label = _split_args(match.group(2))[0].strip()
            _check_label(label, VECTOR_LABELS)
            return label
    raise ValueError("the statement has no @tenant_match")


def _split_args(raw: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in raw:
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += ch == "("
        depth -= ch == ")"
        current.append(ch)
    parts.append("".join(current))
    return parts


def _check_label(label: str, allowed: Iterable[str]) -> None:
    if label not in allowed:
        raise ValueError(f"label {label!r} has no such index (allowed: {sorted(allowed)})")


class GraphStore(ABC):
    """A graph database behind one async interface. Implementations: Neo4j and FalkorDB.

    ``read``/``write`` take a *shared* statement (markers allowed) and plain parameters; vectors are plain lists of
    floats. Rows come back as ``dict`` keyed by the RETURN column names, with nested maps as ``dict`` and lists as
    ``list`` on both databases. Driver errors are raised as :class:`~agentx_memory.errors.StorageError` /
    :class:`~agentx_memory.errors.StorageUnavailableError` (constraint violations as ``ConflictError``).
    """

    dialect: Dialect

    def __init__(self) -> None:
        #: The node counts that :meth:`read_vectors` weighs a tenant's share of a vector index by.
        self.tenant_sizes = TenantSizes()
        #: How :meth:`read_vectors` calls were answered: ``scan`` (the tenant's nodes), ``index`` (a vector index),
        #: ``fallback`` (the index kept too few rows, then the scan), ``search`` (Neo4j's tenant-filtered SEARCH).
        self.vector_routes: Counter[str] = Counter()

    @abstractmethod
    async def read(self, query: LiteralString | str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a read-only statement and return its rows."""

    @property
    def tenant_vector_index(self) -> bool:
        """True when :meth:`read_vectors` searches a vector index filtered by tenant (else it scans exactly)."""
        return False

    async def read_vectors(self, query: LiteralString | str, params: Mapping[str, Any], *,
                           exact: bool = False) -> list[dict[str, Any]]:
        """Run a read statement built on ``@tenant_match`` that returns at most ``params["k"]`` ranked rows.

        ``exact`` (or a tenant whose scan costs less, :func:`~.tenant_index.index_fetch`) scans the tenant's nodes
        (:meth:`read`; a database whose index can compare the query with every node of the tenant exactly may answer
        an exact search that way, as Neo4j's ``SEARCH`` does). Otherwise the label's vector index answers: its nearest
        nodes deep enough for the tenant's share, kept when they are the tenant's (:meth:`read_index`), and the exact
        scan answers instead when fewer than ``k`` rows survive the statement's filters, so other tenants never crowd
        a user's rows out. How each call was answered is counted in :attr:`vector_routes`."""
        k = int(params["k"])
        fetch = None if exact else await self._index_fetch(tenant_label(query), str(params["user_id"]),
                                                           list(params["channels"]), k)
        if fetch is not None:
            rows = await self.read_index(query, {**params, "fetch": fetch})
            if len(rows) >= k:
                self.vector_routes["index"] += 1
                return rows
            self.vector_routes["fallback"] += 1
        else:
            self.vector_routes["scan"] += 1
        return await self.read(query, params)

    async def read_index(self, query: LiteralString | str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Run a ``@tenant_match`` statement on the label's global vector index (``render(tenant_index=True)``):
        the ``params["fetch"]`` nearest nodes, kept when they are the tenant's."""
        raise NotImplementedError(f"{type(self).__name__} cannot search its vector indexes")

    async def _index_fetch(self, label: str, user_id: str, channels: list[str], k: int) -> int | None:
        # The counts are cached (TenantSizes): they steer the choice only, a stale one costs a fallback at most.
        total = await self._index_entries(label)
        if total is None:
            return None
        return index_fetch(k, await self._tenant_count(label, user_id, channels), total)

    async def _tenant_count(self, label: str, user_id: str, channels: list[str]) -> int:
        """How many nodes of ``label`` the user has in ``channels``, counted once a minute (:class:`TenantSizes`): it
        steers a search's route only, so a stale count costs time, never rows."""
        from . import cypher  # the statements module imports this one's label lists

        tenant = (user_id, *sorted(set(channels)))
        own = self.tenant_sizes.get(label, tenant)
        if own is None:
            own = int((await self.read(cypher.COUNT_TENANT_NODES[label],
                                       {"user_id": user_id, "channels": channels}))[0]["n"])
            self.tenant_sizes.put(label, tenant, own)
        return own

    async def _index_entries(self, label: str) -> int | None:
        """How many vectors the label's index searches through (its share of them is the tenant's chance of a
        fetched node), or None when the index cannot answer now (read_vectors scans). Default: the label's nodes,
        counted once a minute (a database that reclaims its dead vectors itself)."""
        from . import cypher

        total = self.tenant_sizes.get(label, None)
        if total is None:
            total = int((await self.read(cypher.COUNT_LABEL_NODES[label]))[0]["n"])
            self.tenant_sizes.put(label, None, total)
        return total

    async def vector_index_usage(self) -> dict[str, VectorIndexUsage]:
        """Per vector label, what its index holds, on a database whose vector indexes keep the vectors of updated and
        deleted nodes until rebuilt (FalkorDB; ``entries`` measured by probe searches there, as its document count
        also counts re-indexings of a node before it held a vector); empty where the database reclaims them itself
        (Neo4j)."""
        return {}

    @abstractmethod
    async def write(self, query: LiteralString | str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a write statement (one transaction) and return its rows."""

    @abstractmethod
    async def batch(self, statements: Sequence[Statement]) -> None:
        """Run several write statements together: one transaction on Neo4j, one MULTI/EXEC block on FalkorDB
        (atomic in isolation; FalkorDB does not roll back a failed statement's predecessors)."""

    @abstractmethod
    async def explain(self, query: LiteralString | str, params: Mapping[str, Any] | None = None) -> str:
        """The database's plan for a statement, as text (used to check index usage)."""

    @abstractmethod
    async def apply_schema(self, *, dimension: int, model: str) -> None:
        """Create every constraint and index, and record the embedding model and dimension in the graph.

        Applying it twice is a no-op. Raises
        :class:`~agentx_memory.errors.EmbeddingDimensionMismatchError` if the graph was created with another model
        or dimension.
        """

    @abstractmethod
    async def drop_vector_index(self, label: str) -> None:
        """Drop the vector index of ``label`` (one of :data:`VECTOR_LABELS`) if it exists (re-embedding's switch)."""

    @abstractmethod
    async def create_vector_index(self, label: str, *, dimension: int) -> None:
        """Create the vector index of ``label`` for vectors of ``dimension``, replacing one that exists (re-embedding's
        switch: a process opened with the old model may have recreated it at the old dimension meanwhile)."""

    @abstractmethod
    async def drop_all(self) -> None:
        """Delete every node, relationship and index of this graph (tests and ``reset`` only)."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections."""

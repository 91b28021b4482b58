"""A LangGraph ``BaseStore`` over the memory: :class:`AgentXStore` (extra ``[langgraph]``; docs/langgraph.md).

LangGraph gives every node of a graph compiled with ``store=`` a key-value store of JSON documents under namespace
paths. :class:`AgentXStore` keeps them as the memory's namespaced items (:mod:`agentx_memory.items`, PostgreSQL
``store_items``), through the public methods ``put_item``, ``get_item``, ``delete_item``, ``search_items`` and
``list_item_namespaces`` only.

**Namespaces.** ``namespace[0]`` is the user id; the labels after it are the item's namespace path below the user.
A store opened for one user (``user_id=``, or the memory's default user) refuses any namespace whose first label is
another user (:class:`~agentx_memory.errors.ValidationError` naming ``namespace[0]``), so it can never read or
write another user's items; a search or listing of the whole store (``()``) covers that user only. A store opened
without a user takes the user from each namespace (a multi-tenant server that sets ``namespace[0]`` from an
authenticated id); it cannot search or list across users. Optionally ``agent_level=i`` makes ``namespace[i]`` the
agent the item belongs to and ``channel_level=j`` makes ``namespace[j]`` its channel (a channel slug). Over a memory
acting as an agent (``memory.for_agent(...)``), items are written as that agent, and the store reads its own items and
the user's, never another agent's.

**Search.** ``search(prefix, query=..., filter=..., limit=..., offset=...)`` ranks by meaning with the memory's own
embedder (cosine similarity in ``SearchItem.score``; items stored with ``index=False`` come last, unscored), filters
on value fields (``$eq $ne $gt $gte $lt $lte``), and pages with ``limit`` / ``offset``; without a query, newest
first. What is embedded is the text at the ``index_fields`` (default ``["$"]``: the whole value as JSON), or at the
paths a ``put(..., index=[...])`` names, joined into one text per item: one vector per item.

**TTL.** ``supports_ttl`` is True: ``put(..., ttl=minutes)`` (or ``ttl={"default_ttl": ...}`` for every item) makes an
item expire that long after its last write or read (``refresh_ttl``); an expired item reads as absent at once and
is deleted by the user's next write.

``batch`` and ``abatch`` run their operations in order, each seeing the ones before it. Over an :class:`AgentMemory`
the async methods run the blocking calls in a worker thread; over an :class:`AsyncAgentMemory` the sync methods run
the coroutines on the loop the memory was opened on (create the store inside that loop; a sync call from the loop's
own thread is refused, as it would deadlock).
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
        get_text_at_path,
        tokenize_path,
        validate_op_namespace,
    )
except ImportError as exc:  # pragma: no cover - the extra is installed wherever the tests run
    raise ImportError("agentx_memory.integrations.langgraph needs LangGraph: pip install 'agentx-memory[langgraph]'"
                      ) from exc

from ..errors import ConfigurationError, ValidationError
from ..memory import AgentMemory, AsyncAgentMemory
from ..models import StoredItem
from ..validation import check_channel, check_id, check_int, first_bytes

__all__ = ["AgentXStore"]

#: Namespaces fetched per call when a listing must be filtered here (a suffix condition, or ``max_depth`` 0).
_PAGE = 10_000


@dataclass(frozen=True)
class _Call:
    """One call of the memory's public API that an operation needs."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


#: An operation as a generator: it yields the calls it needs, receives their results, and returns its own result.
_Plan = Generator[_Call, Any, Result]


def _matches(pattern: Sequence[str], labels: Sequence[str]) -> bool:
    return all(p in ("*", label) for p, label in zip(pattern, labels, strict=True))


class AgentXStore(BaseStore):
    """A LangGraph store whose items are the memory's namespaced items (see the module docstring).

    ``memory``: an :class:`AgentMemory` or :class:`AsyncAgentMemory` (or a view of one from ``for_agent``).
    ``user_id``: the one user this store serves (default: the memory's default user; None on both: the user is
    ``namespace[0]`` of each operation). ``agent_level`` / ``channel_level``: the namespace levels (1 or more) naming
    an item's agent and channel. ``channel``: the channel of items whose namespace names none (default
    ``_global``). ``index_fields``: the JSON paths embedded for search by meaning when ``put`` gives no ``index``
    (None: such items are not embedded). ``ttl``: LangGraph's ``TTLConfig`` (``default_ttl`` minutes,
    ``refresh_on_read``).
    """

    supports_ttl = True

    def __init__(self, memory: AgentMemory | AsyncAgentMemory, *, user_id: str | None = None,
                 agent_level: int | None = None, channel_level: int | None = None, channel: str | None = None,
                 index_fields: Sequence[str] | None = ("$",), ttl: TTLConfig | None = None):
        if not isinstance(memory, (AgentMemory, AsyncAgentMemory)):
            raise ValidationError("memory", f"must be an AgentMemory or AsyncAgentMemory, got {type(memory).__name__}")
        self.memory = memory
        core = memory.core if isinstance(memory, AgentMemory) else memory
        user = user_id if user_id is not None else core.default_user_id
        #: The user this store serves (None: the user of each operation is its ``namespace[0]``).
        self.user_id = None if user is None else check_id(user, "user_id")
        for name, level in (("agent_level", agent_level), ("channel_level", channel_level)):
            if level is not None:
                check_int(level, name, low=1, high=19)
        if agent_level is not None and agent_level == channel_level:
            raise ValidationError("channel_level", "must differ from agent_level")
        self.agent_level = agent_level
        self.channel_level = channel_level
        self.channel = None if channel is None else check_channel(channel)
        if isinstance(index_fields, str):
            raise ValidationError("index_fields", "must be a list of JSON paths, not one string")
        self.index_fields = None if index_fields is None else [(p, tokenize_path(p) if p != "$" else p)
                                                               for p in index_fields]
        self.ttl_config = ttl
        self._max_text = core.settings.limits.max_text_bytes
        self._loop: asyncio.AbstractEventLoop | None = None
        if isinstance(memory, AsyncAgentMemory):
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                self._loop = None  # learnt on the first abatch

    # --- running operations ------------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order and return their results (LangGraph's ``BaseStore.batch``)."""
        plans = [self._plan(op) for op in ops]
        if isinstance(self.memory, AgentMemory):
            return [self._drive(plan) for plan in plans]
        loop = self._loop
        if loop is None or loop.is_closed():
            raise ConfigurationError("AgentXStore over an AsyncAgentMemory: its synchronous methods need the event "
                                     "loop the memory runs on; create the store inside that loop, or over an "
                                     "AgentMemory")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            raise ConfigurationError("a synchronous AgentXStore call from the event loop of its AsyncAgentMemory "
                                     "would block that loop forever; use aget / aput / asearch / abatch there")
        return asyncio.run_coroutine_threadsafe(self._adrive_all(plans), loop).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order and return their results (LangGraph's ``BaseStore.abatch``)."""
        if isinstance(self.memory, AgentMemory):
            ops = list(ops)
            return await asyncio.to_thread(self.batch, ops)
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return await self._adrive_all([self._plan(op) for op in ops])

    def _drive(self, plan: _Plan) -> Result:
        try:
            call = next(plan)
            while True:
                call = plan.send(getattr(self.memory, call.method)(*call.args, **call.kwargs))
        except StopIteration as done:
            return done.value

    async def _adrive_all(self, plans: list[_Plan]) -> list[Result]:
        results: list[Result] = []
        for plan in plans:
            try:
                call = next(plan)
                while True:
                    call = plan.send(await getattr(self.memory, call.method)(*call.args, **call.kwargs))
            except StopIteration as done:
                results.append(done.value)
        return results

    # --- operations as calls of the public API -----------------------------------------------------------------

    def _plan(self, op: Op) -> _Plan:
        validate_op_namespace(op)
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            return self._put(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list(op)
        raise ValidationError("ops", f"{type(op).__name__} is not a store operation (GetOp, PutOp, SearchOp, "
                                     "ListNamespacesOp)")

    def _user_of(self, namespace: tuple[str, ...], field: str) -> tuple[str, tuple[str, ...]]:
        """The user a namespace (or prefix) names and the path below them."""
        if not namespace:
            if self.user_id is None:
                raise ValidationError(f"{field}[0]", "must be the user id: this store serves the user its namespace "
                                                     "names (open it with user_id= to search or list one user's "
                                                     "whole store)")
            return self.user_id, ()
        user = check_id(namespace[0], f"{field}[0]")
        if self.user_id is not None and user != self.user_id:
            raise ValidationError(f"{field}[0]", f"is {user!r}; this store holds the items of user "
                                                 f"{self.user_id!r} only")
        return user, tuple(namespace[1:])

    def _item(self, stored: StoredItem) -> Item:
        return Item(value=stored.value, key=stored.key, namespace=(stored.user_id, *stored.namespace),
                    created_at=stored.created_at, updated_at=stored.updated_at)

    def _get(self, op: GetOp) -> _Plan:
        user, path = self._user_of(op.namespace, "namespace")
        found = yield _Call("get_item", (path, op.key), {"refresh_ttl": op.refresh_ttl, "user_id": user})
        return None if found is None else self._item(found)

    def _text(self, value: dict[str, Any], index: Any) -> str | None:
        if index is False:
            return None
        if index is None:
            if self.index_fields is None:
                return None
            paths: list[tuple[str, Any]] = self.index_fields
        else:
            if isinstance(index, str):
                raise ValidationError("index", "must be False or a list of JSON paths, not one string")
            paths = [(p, tokenize_path(p) if p != "$" else p) for p in index]
        texts = [text for _, tokens in paths for text in get_text_at_path(value, tokens) if text.strip()]
        return first_bytes("\n".join(texts), self._max_text) if texts else None

    def _label(self, namespace: tuple[str, ...], level: int | None) -> str | None:
        return namespace[level] if level is not None and level < len(namespace) else None

    def _put(self, op: PutOp) -> _Plan:
        user, path = self._user_of(op.namespace, "namespace")
        if op.value is None:
            yield _Call("delete_item", (path, op.key), {"user_id": user})
            return None
        value = dict(op.value)
        agent = self._label(op.namespace, self.agent_level)
        if agent is not None and self.memory.agent_id not in (None, agent):
            raise ValidationError(f"namespace[{self.agent_level}]", f"names agent {agent!r}; this store acts as "
                                                                    f"agent {self.memory.agent_id!r}")
        channel = self._label(op.namespace, self.channel_level)
        if channel is not None:
            check_channel(channel, f"namespace[{self.channel_level}]")
        yield _Call("put_item", (path, op.key, value), {
            "text": self._text(value, op.index), "ttl_minutes": op.ttl, "channel": channel or self.channel,
            "agent_id": agent, "user_id": user})
        return None

    def _search(self, op: SearchOp) -> _Plan:
        user, prefix = self._user_of(op.namespace_prefix, "namespace_prefix")
        query = op.query if op.query and op.query.strip() else None
        found = yield _Call("search_items", (prefix,), {
            "query": query, "filter": op.filter, "limit": op.limit, "offset": op.offset,
            "refresh_ttl": op.refresh_ttl, "user_id": user})
        return [SearchItem(namespace=(s.user_id, *s.namespace), key=s.key, value=s.value, created_at=s.created_at,
                           updated_at=s.updated_at, score=s.score) for s in found]

    def _list(self, op: ListNamespacesOp) -> _Plan:
        conditions: tuple[MatchCondition, ...] = tuple(op.match_conditions or ())
        prefixes = [c.path for c in conditions if c.match_type == "prefix"]
        suffixes = [c.path for c in conditions if c.match_type == "suffix"]
        if len(prefixes) + len(suffixes) != len(conditions):
            raise ValidationError("match_conditions", "match_type must be 'prefix' or 'suffix'")
        pattern: list[str] = []
        for prefix in prefixes:  # several prefixes: one pattern that meets them all
            for i, label in enumerate(prefix):
                if i == len(pattern):
                    pattern.append(label)
                elif pattern[i] == "*":
                    pattern[i] = label
                elif label not in ("*", pattern[i]):
                    return []
        if pattern and pattern[0] != "*":
            user, below = self._user_of(tuple(pattern), "prefix")
        elif self.user_id is None:
            raise ValidationError("prefix[0]", "must be the user id: this store serves the user its namespace names "
                                               "(open it with user_id= to list one user's whole store)")
        else:
            user, below = self.user_id, tuple(pattern[1:])
        wildcard = [None if label == "*" else label for label in below]
        check_int(op.limit, "limit", low=0, high=10_000)
        check_int(op.offset, "offset", low=0, high=2**31 - 1)
        if op.max_depth is not None:
            check_int(op.max_depth, "max_depth", low=0, high=21)
        if not suffixes and (op.max_depth is None or op.max_depth >= 1):
            found = yield _Call("list_item_namespaces", (wildcard,), {
                "max_depth": None if op.max_depth is None else min(op.max_depth - 1, 20), "limit": op.limit,
                "offset": op.offset, "user_id": user})
            return [(user, *ns) for ns in found]
        everything: list[tuple[str, ...]] = []
        while True:  # filtered here: every namespace of the prefix, a page at a time
            page = yield _Call("list_item_namespaces", (wildcard,), {"limit": _PAGE, "offset": len(everything),
                                                                     "user_id": user})
            everything.extend(page)
            if len(page) < _PAGE:
                break
        full = [(user, *ns) for ns in everything]
        kept = [ns for ns in full if all(len(ns) >= len(s) and _matches(s, ns[len(ns) - len(s):]) for s in suffixes)]
        if op.max_depth is not None:
            kept = sorted({ns[:op.max_depth] for ns in kept})
        return kept[op.offset:op.offset + op.limit]

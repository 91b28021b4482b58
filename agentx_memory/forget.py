"""Forgetting (issue 16, "forget, provably"): data leaves every store, and a receipt says what went.

:func:`forget_user` removes, for one user:

* **graph**: every node carrying their ``user_id`` (turns, conversations, entities and their redirects, facts,
  goals, strategies, tool invocations, control memories) with its edges, in pages, and their ``User`` node;
* **PostgreSQL**: their rows of the conversation log, the timeline, the tool log, the profile, the episodic
  summaries, the short-term tier, the run records and their memory pools, and their entries in the change records
  of runs over every user
  (:mod:`agentx_memory.sql.forget`); their audit entries lose every content field;
* **Redis**: every working-memory key of theirs (session keys, the conversation hash, the ledger).

Then one audit entry (operation ``forget``) records that it happened, who asked (``requested_by``) and the counts,
with no content. The engine keeps no other copy: there is no embedding cache outside these stores (the benchmarks'
disk cache is theirs). The user's shared pools go with their other tables, and the snapshots the engine kept of the
user (:mod:`agentx_memory.snapshots`) are deleted too; a snapshot file exported elsewhere is the exporter's to
delete. Forgetting is idempotent: a second call removes nothing and says so.

:func:`forget_memories` removes chosen memories of a user by id (a turn, fact, entity, goal, strategy, control or
tool invocation id, or a conversation id: all its turns), and :func:`forget_where` those a filter reaches
(:class:`ForgetFilter`). With the memory go:

* what is derived from it (``cascade``, on by default): facts whose every source turn goes, the summary of a
  conversation that loses a turn, dedup redirects to an entity that goes, a conversation left without turns;
* its rows in the log, the timeline and the tool log; its cached copies in working memory (recent turns, injection
  ledger entries);
* the content of every audit entry and run change record that names it (they keep that something happened).

Then one audit entry (operation ``forget``) records who asked, the ids and the counts. Ids of the user that name
nothing are listed in the receipt's ``not_found``; another user's ids are never reached.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from .context import MemoryContext
from .errors import ValidationError
from .graph import cypher
from .snapshots import delete_user_snapshots
from .timeutil import to_ms
from .wipe import wipe_user

__all__ = ["FORGET_MEMORY_TYPES", "ForgetFilter", "ForgetReceipt", "forget_memories", "forget_user", "forget_where"]

PAGE: Final = 1000

#: The memory types a :class:`ForgetFilter` may name, and the graph labels each reaches.
FORGET_MEMORY_TYPES: Final[dict[str, tuple[str, ...]]] = {
    "episodic": ("Turn",),
    "semantic": ("Fact", "Entity"),
    "procedural": ("Strategy", "ToolInvocation"),
    "control": ("Control",),
    "goal": ("Goal",),
}


@dataclass(frozen=True)
class ForgetFilter:
    """Which memories of a user :func:`forget_where` removes: every given criterion must hold (None: any).

    ``conversation_id`` reaches the turns, facts and tool invocations of that conversation; ``before`` / ``after``
    compare with each memory's own time (a turn's or invocation's time, a fact's, goal's, strategy's or control's
    creation, an entity's first sighting; ``before`` exclusive, ``after`` inclusive); ``memory_types`` are keys of
    :data:`FORGET_MEMORY_TYPES`.
    """

    conversation_id: str | None = None
    channel: str | None = None
    before: datetime | None = None
    after: datetime | None = None
    memory_types: tuple[str, ...] | None = None

    def check(self) -> None:
        """Refuse an empty filter (forgetting everything is :func:`forget_user`) and unknown memory types."""
        if self.memory_types is not None:
            unknown = sorted(set(self.memory_types) - FORGET_MEMORY_TYPES.keys())
            if unknown or not self.memory_types:
                raise ValidationError("memory_types", f"must be a non-empty subset of {sorted(FORGET_MEMORY_TYPES)}"
                                      + (f", got {unknown}" if unknown else ""))
        if (self.conversation_id, self.channel, self.before, self.after, self.memory_types) == (None,) * 5:
            raise ValidationError("where", "give at least one criterion (conversation_id, channel, before, after, "
                                  "memory_types); to forget everything of a user use forget_user")
        if self.before is not None and self.after is not None and self.after >= self.before:
            raise ValidationError("after", "must be earlier than before")

    @property
    def labels(self) -> tuple[str, ...]:
        """The graph labels the filter reaches."""
        if self.memory_types is None:
            return cypher.FORGETTABLE_LABELS
        return tuple(label for kind in self.memory_types for label in FORGET_MEMORY_TYPES[kind])


@dataclass
class ForgetReceipt:
    """What forgetting a user removed, per store: graph nodes by label, PostgreSQL rows by table, Redis keys."""

    user_id: str
    graph: dict[str, int] = field(default_factory=dict)
    postgres: dict[str, int] = field(default_factory=dict)
    redis_keys: int = 0
    #: forget_user: the snapshots of the user the engine kept (files deleted).
    snapshots: int = 0
    #: forget_memories / forget_where: the ids removed (cascaded ones included) and the asked-for ids that named
    #: nothing of this user.
    ids: list[str] = field(default_factory=list)
    not_found: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Everything removed or scrubbed."""
        return sum(self.graph.values()) + sum(self.postgres.values()) + self.redis_keys + self.snapshots

    def as_dict(self) -> dict[str, Any]:
        """Plain values (for the audit entry and the CLI)."""
        return {"user_id": self.user_id, "graph": self.graph, "postgres": self.postgres,
                "redis_keys": self.redis_keys, "snapshots": self.snapshots, "ids": self.ids,
                "not_found": self.not_found}


async def forget_user(ctx: MemoryContext, user_id: str, *, requested_by: str) -> ForgetReceipt:
    """Remove the user's data from every store and their kept snapshots (see the module docstring); return the
    receipt."""
    wiped = await wipe_user(ctx, user_id)
    receipt = ForgetReceipt(user_id=user_id, graph=wiped.graph, postgres=wiped.postgres, redis_keys=wiped.redis_keys,
                            snapshots=delete_user_snapshots(ctx, user_id))
    await ctx.audit.log_write("forget", "user", None, [user_id],
                              {"requested_by": requested_by, **receipt.as_dict()}, user_id=user_id)
    return receipt


class _Targets:
    """The memories one forget reaches: ids by graph label, and the conversations they belong to."""

    def __init__(self) -> None:
        self.by_label: dict[str, set[str]] = {label: set() for label in cypher.FORGETTABLE_LABELS}
        self.conversations: set[str] = set()

    def add(self, label: str, rows: Sequence[dict[str, Any]], id_key: str = "id") -> None:
        for row in rows:
            self.by_label[label].add(row[id_key])
            if row.get("conversation_id"):
                self.conversations.add(row["conversation_id"])

    @property
    def ids(self) -> set[str]:
        return set().union(*self.by_label.values())


async def forget_memories(ctx: MemoryContext, user_id: str, ids: Sequence[str], *, requested_by: str,
                          cascade: bool = True, agent_id: str | None = None) -> ForgetReceipt:
    """Remove the user's memories with these ids (or conversations with these ids) from every store, with what is
    derived from them when ``cascade`` (see the module docstring); return the receipt. With ``agent_id`` only what
    that agent may read is reached (global memories and its own); another agent's private ids are not found."""
    wanted = list(dict.fromkeys(ids))
    targets = _Targets()
    targets.add("Turn", await ctx.sql.users.turns_named(user_id, wanted, agent_id), id_key="turn_id")
    for label, statement in cypher.FORGET_FIND_BY_ID.items():
        for page in _pages(wanted):
            targets.add(label, await ctx.graph.read(statement, {"user_id": user_id, "ids": page, "agent_id": agent_id}))
    for page in _pages(wanted):
        targets.add("Turn", await ctx.graph.read(cypher.FORGET_CONVERSATION_TURNS,
                                                 {"user_id": user_id, "ids": page, "agent_id": agent_id}))
    named = targets.ids | targets.conversations
    return await _forget(ctx, user_id, targets, requested_by=requested_by, cascade=cascade,
                         not_found=[i for i in wanted if i not in named], what={"ids": wanted})


async def forget_where(ctx: MemoryContext, user_id: str, where: ForgetFilter, *, requested_by: str,
                       cascade: bool = True) -> ForgetReceipt:
    """Remove the user's memories the filter reaches from every store, with what is derived from them when
    ``cascade`` (see the module docstring); return the receipt."""
    where.check()
    targets = _Targets()
    labels = where.labels
    if "Turn" in labels:
        targets.add("Turn", await ctx.sql.users.matching_turns(
            user_id, conversation_id=where.conversation_id, channel=where.channel, before=where.before,
            after=where.after), id_key="turn_id")
    params = {"user_id": user_id, "conversation_id": where.conversation_id, "channel": where.channel,
              "before": to_ms(where.before), "after": to_ms(where.after)}
    for label in labels:
        targets.add(label, await ctx.graph.read(cypher.FORGET_FIND_WHERE[label], params))
    return await _forget(ctx, user_id, targets, requested_by=requested_by, cascade=cascade, not_found=[],
                         what={"where": {k: v for k, v in params.items() if k != "user_id" and v is not None}
                               | ({"memory_types": list(where.memory_types)} if where.memory_types else {})})


async def _forget(ctx: MemoryContext, user_id: str, targets: _Targets, *, requested_by: str, cascade: bool,
                  not_found: list[str], what: dict[str, Any]) -> ForgetReceipt:
    turns = sorted(targets.by_label["Turn"])
    if cascade:
        for page in _pages(turns):
            targets.add("Fact", await ctx.graph.read(cypher.FORGET_DERIVED_FACTS, {"user_id": user_id, "ids": page}))
    ids = sorted(targets.ids)
    conversations = sorted(targets.conversations)
    receipt = ForgetReceipt(user_id=user_id, ids=ids, not_found=not_found)
    # The log first: it is the source of truth, and a forget that fails part-way is finished by calling it again
    # (the graph's copies are still found by id).
    receipt.postgres = await ctx.sql.users.forget_memories(
        user_id, ids, turn_ids=turns, conversation_ids=conversations if cascade else [])
    entities = sorted(targets.by_label["Entity"])
    if cascade and entities:
        receipt.graph["EntityRedirect"] = await _delete_in_pages(ctx, cypher.FORGET_REDIRECTS, user_id, entities)
    for label, members in targets.by_label.items():
        if members:
            receipt.graph[label] = await _delete_in_pages(ctx, cypher.FORGET_BY_ID[label], user_id, sorted(members))
    if conversations:
        rows = await ctx.graph.write(cypher.FORGET_EMPTY_CONVERSATIONS,
                                     {"user_id": user_id, "conversation_ids": conversations})
        receipt.graph["Conversation"] = rows[0]["deleted"] if rows else 0
    receipt.redis_keys = await ctx.working.forget_items(user_id, ids) if ids else 0
    counts = {k: v for k, v in receipt.as_dict().items() if k != "ids"}  # the ids are the entry's affected_ids
    await ctx.audit.log_write("forget", "memories", None, ids, {"requested_by": requested_by, **what, **counts},
                              user_id=user_id)
    return receipt


async def _delete_in_pages(ctx: MemoryContext, statement: str, user_id: str, ids: Sequence[str]) -> int:
    deleted = 0
    for page in _pages(ids):
        rows = await ctx.graph.write(statement, {"user_id": user_id, "ids": page})
        deleted += rows[0]["deleted"] if rows else 0
    return deleted


def _pages(items: Sequence[str]) -> list[list[str]]:
    return [list(items[i:i + PAGE]) for i in range(0, len(items), PAGE)]

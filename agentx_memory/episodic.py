"""Episodic memory: conversation turns (spec 003 "Episodic Memory", "Data Flow 1").

How a write flows (reliability is part of the contract)::

    validate → embed missing vectors in context (one batch) → PostgreSQL conversation_logs (the durable log; one
    transaction, idempotent on turn id and on (conversation_id, turn_index); a turn whose predecessor changed since it
    was embedded is re-embedded there, before it is visible) → graph projection (Conversation, Turn, HAS_TURN,
    FOLLOWED_BY; MERGE by id) → working-memory cache → memory_timeline → mark projected → audit

The log's transaction also queues each new turn for projection (``turn_projection_queue``, by a trigger); "mark
projected" takes them out of the queue, so the log row itself is written once. When the graph is unreachable the
write still succeeds: the turns are durable in the log, come back with ``pending_projection = True`` and stay in the
queue; :meth:`EpisodicMemory.reconcile` projects them
idempotently once the graph answers (and quarantines a row it cannot project, so it never blocks the others). Any
other failure after the log commit (the graph refused the write, the timeline write failed) raises
:class:`~agentx_memory.errors.StorageError` with the rows in the same state. Nothing acknowledged is ever only in
Redis.

Turn indexes are assigned under a per-conversation advisory lock, so concurrent writers to one conversation get
contiguous, unique indexes (:class:`~agentx_memory.sql.conversation_log.ConversationLog` does it in the log's
transaction).
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

import numpy as np

from .agents import resolve_scope
from .context import MemoryContext
from .errors import ConfigurationError, NotFoundError, StorageError, StorageUnavailableError, ValidationError
from .graph import cypher
from .missing_nodes import requeue_missing
from .models import Turn
from .rows import turn_from_row
from .sql.conversation_log import MAX_TURN_INDEX, BeforeInsert
from .sql.search import SearchScope
from .sql.timeline import TimelineEntry
from .timeutil import to_ms
from .tokens import count_tokens
from .validation import (
    INT32_MAX,
    check_channel,
    check_channels,
    check_datetime,
    check_id,
    check_int,
    check_json,
    check_text,
    checked_copy,
)
from .working import turn_preview

__all__ = ["ROLES", "EpisodicMemory", "QuarantinedTurn", "ReconcileResult", "turn_text"]

log = logging.getLogger(__name__)

ROLES = ("user", "assistant", "system", "tool")

@dataclass(frozen=True)
class QuarantinedTurn:
    """A log row that reconcile could not project: its turn id and why (as recorded in ``projection_error``)."""

    turn_id: str
    error: str


@dataclass(frozen=True)
class ReconcileResult:
    """What one :meth:`EpisodicMemory.reconcile` run did.

    ``projected``: log rows projected into the graph (and written to the timeline); ``quarantined``: rows this run
    could not project and took out of the queue; ``quarantined_total``: every row in quarantine after the run
    (including earlier runs'); ``invocations_projected``: logged tool invocations projected into the graph;
    ``requeued`` and ``invocations_requeued``: logged turns and tool invocations a full run found missing from the
    graph and queued again (0 unless ``full``). ``int(result)`` is ``projected`` (what reconcile returned before
    quarantine).
    """

    projected: int = 0
    quarantined: tuple[QuarantinedTurn, ...] = ()
    quarantined_total: int = 0
    invocations_projected: int = 0
    requeued: int = 0
    invocations_requeued: int = 0

    def __int__(self) -> int:
        return self.projected


class EpisodicMemory:
    """Stores and reads conversation turns."""

    def __init__(self, ctx: MemoryContext):
        self.ctx = ctx

    # --- validation ---------------------------------------------------------------------------------------------

    def validate(self, turns: Sequence[Turn], channel: str | None = None) -> list[Turn]:
        """Checked copies of ``turns`` (channel applied, token counts filled); raises ValidationError naming the
        field."""
        limits = self.ctx.settings.limits
        if isinstance(turns, (str, bytes, Mapping, Turn)) or not isinstance(turns, Iterable):
            raise ValidationError("turns", f"must be a list of Turn, got {type(turns).__name__}")
        turns = list(turns)  # any iterable of turns (a generator too), read once
        if not turns:
            raise ValidationError("turns", "must contain at least one turn")
        if len(turns) > limits.max_batch_turns:
            raise ValidationError(
                "turns", f"has {len(turns)} turns; the limit is {limits.max_batch_turns} (limits.max_batch_turns)")
        out = []
        seen: set[str] = set()
        for i, turn in enumerate(turns):
            if not isinstance(turn, Turn):
                raise ValidationError(f"turns[{i}]", f"must be a Turn, got {type(turn).__name__}")
            where = f"turns[{i}]." if len(turns) > 1 else ""
            turn = checked_copy(turn, keep=("embedding",))  # replaced by the checked copy below
            turn.pending_projection = False  # the store says, not the caller
            if channel is not None:
                turn.channel = channel
            check_channel(turn.channel, f"{where}channel")
            check_id(turn.id, f"{where}id")
            check_id(turn.user_id, f"{where}user_id")
            check_id(turn.conversation_id, f"{where}conversation_id", max_len=200)
            if turn.model is not None:
                check_id(turn.model, f"{where}model")
            if turn.role not in ROLES:
                raise ValidationError(f"{where}role", f"{turn.role!r} is not one of {', '.join(ROLES)}")
            check_text(turn.content, f"{where}content", max_bytes=limits.max_turn_bytes,
                       limit_name="limits.max_turn_bytes")
            check_json(turn.metadata, f"{where}metadata", max_bytes=limits.max_metadata_bytes)
            check_datetime(turn.timestamp, f"{where}timestamp")
            turn.agent_id, turn.scope = resolve_scope("episodic", turn.agent_id, turn.scope)
            if turn.index is not None:
                check_int(turn.index, f"{where}index", low=0, high=MAX_TURN_INDEX)
            if turn.token_count is not None:
                check_int(turn.token_count, f"{where}token_count", low=0, high=INT32_MAX)
            if turn.embedding is not None:
                turn.embedding = self.ctx.embedder.check(turn.embedding, f"{where}embedding")
            if turn.id in seen:
                raise ValidationError(f"{where}id", f"turn id {turn.id!r} appears twice in one batch")
            seen.add(turn.id)
            if turn.token_count is None:
                turn.token_count = count_tokens(turn.content)
            out.append(turn)
        return out

    async def _embed_missing(self, turns: list[Turn], previous: dict[str, str | None]) -> set[str]:
        """Embed turns without a vector, each *in context* (``embedding.turn_context``): with the previous turn's text
        before or after its own, or alone.

        A turn alone is often a fragment ("Yes, last May!"); with the turn before it the vector says what it is about
        (measured on both dev sets: docs/benchmarks.md). Returns the ids of the turns embedded here.
        """
        missing = [t for t in turns if t.embedding is None]
        if missing:
            mode = self.ctx.settings.embedding.turn_context
            texts = [turn_text(previous.get(t.id), t.content, mode) for t in missing]
            vectors = await self.ctx.embedder.embed_documents(texts)
            for turn, vector in zip(missing, vectors, strict=True):
                turn.embedding = vector.tolist()
        return {t.id for t in missing}

    async def _assumed_previous(self, turns: list[Turn]) -> dict[str, str | None]:
        """The text of each turn's predecessor as far as it can be known before indexes are assigned."""
        previous: dict[str, str | None] = {}
        groups: dict[str, list[Turn]] = defaultdict(list)
        for turn in turns:
            groups[turn.conversation_id].append(turn)
        firsts = []
        for group in groups.values():
            ordered = sorted(group, key=lambda t: (t.index is None, t.index or 0))
            firsts.append(ordered[0])
            for before, turn in pairwise(ordered):
                previous[turn.id] = before.content
        # One round trip for every conversation of the batch: the stored turn just before each group's first turn.
        previous.update(await self.ctx.sql.conversations.previous_contents(firsts))
        return previous

    def _recontext(self, previous: dict[str, str | None], embedded: set[str]) -> BeforeInsert:
        """The log's ``before_insert`` hook: re-embed the few turns embedded here whose real predecessor (known once
        indexes are final, under the conversation's lock) differs from the one assumed (a concurrent writer got in
        between). Done before the insert, so no reader of the log ever sees a turn with the wrong context's vector."""

        async def fix(turns: list[Turn], actual: dict[str, str | None]) -> None:
            wrong = [t for t in turns if t.id in embedded and actual.get(t.id) != previous.get(t.id)]
            if not wrong:
                return
            mode = self.ctx.settings.embedding.turn_context
            texts = [turn_text(actual.get(t.id), t.content, mode) for t in wrong]
            vectors = await self.ctx.embedder.embed_documents(texts)
            for turn, vector in zip(wrong, vectors, strict=True):
                turn.embedding = vector.tolist()

        return fix

    # --- the durable log ----------------------------------------------------------------------------------------

    async def _log(self, turns: list[Turn], before_insert: BeforeInsert) -> set[str]:
        """Append to conversation_logs in one transaction; return the ids written by this call. The turns become
        what is stored (indexes assigned; a re-stored turn is the stored one: the repository updates them in place;
        it refuses a conversation with turns of several users, and a stored id or index with other content)."""
        return await self.ctx.sql.conversations.append(turns, before_insert=before_insert)

    # --- the graph projection -----------------------------------------------------------------------------------

    async def _project(self, turns: list[Turn]) -> None:
        rows = [
            {
                "id": t.id, "user_id": t.user_id, "channel": t.channel, "conversation_id": t.conversation_id,
                "index": t.index, "timestamp": to_ms(t.timestamp), "role": t.role, "content": t.content,
                "token_count": t.token_count, "metadata": json.dumps(t.metadata, sort_keys=True, ensure_ascii=False),
                "embedding": list(t.embedding or []), "agent_id": t.agent_id, "scope": t.scope or "global",
            }
            for t in sorted(turns, key=lambda t: (t.conversation_id, _stored_index(t)))
        ]
        for start in range(0, len(rows), 500):
            await self.ctx.graph.write(cypher.PROJECT_TURNS, {"rows": rows[start:start + 500]})

    # --- public API ---------------------------------------------------------------------------------------------

    async def store_turns(self, turns: Sequence[Turn], channel: str | None = None) -> list[Turn]:
        """Store turns durably and project them into the graph; return them as stored (ids, indexes assigned).

        ``channel`` overrides each turn's own channel when given. Re-storing a turn (same id, or same content at the
        same conversation index) is a no-op that returns the stored turn: what the log holds (channel, metadata,
        timestamp …) is what is returned and projected, and it is not cached or audited again. A stored id or index
        with other content is a :class:`~agentx_memory.errors.ConflictError`, and nothing of the batch is written.
        """
        started = time.perf_counter()
        turns = self.validate(turns, channel)
        previous = await self._assumed_previous(turns)
        embedded = await self._embed_missing(turns, previous)
        written = await self._log(turns, self._recontext(previous, embedded))
        stored = turns  # updated in place: each is what the log holds now
        projected = await self._project_if_reachable(stored)
        for turn in stored:
            turn.pending_projection = not projected
        await self._after_store(stored, written, started, projected=projected)
        return stored

    async def _project_if_reachable(self, turns: list[Turn]) -> bool:
        """Project durable turns; ``False`` (nothing raised) when the graph is unreachable: they are pending."""
        try:
            await self.ctx.graph_health.call(self._project(turns))
        except StorageUnavailableError as exc:
            log.warning("graph unreachable: %d turn(s) are durable in the log, pending projection (%s)",
                        len(turns), exc)
            return False
        except StorageError as exc:
            raise StorageError(
                f"{len(turns)} turn(s) are stored in the durable log but not yet in the graph ({exc}); "
                "reconcile() projects them"
            ) from exc
        return True

    async def store_turn(self, turn: Turn, channel: str | None = None) -> Turn:
        """Store one turn (see :meth:`store_turns`)."""
        return (await self.store_turns([turn], channel))[0]

    async def _after_store(self, turns: list[Turn], written: set[str], started: float, *, projected: bool) -> None:
        # Only turns written by this call are cached and audited: a re-store is a no-op there (no duplicates); the
        # timeline (keep-first) and the projected mark are re-done for all, which repairs an interrupted first store.
        by_session: dict[tuple[str, str, str], list[Turn]] = defaultdict(list)
        for t in turns:
            if t.id in written:
                by_session[(t.user_id, t.channel, t.conversation_id)].append(t)
        cap = self.ctx.settings.working.max_turns
        for (user_id, channel, conversation_id), group in by_session.items():
            session = self.ctx.working.session(user_id, conversation_id, channel)
            newest = sorted(group, key=_stored_index)[-cap:]
            try:
                await session.add_turns([turn_preview(t, self.ctx.settings.working.max_value_bytes) for t in newest])
            except Exception:  # the cache is best effort; the turns are durable already
                log.exception("working-memory cache update failed for %d turn(s) of conversation %s", len(newest),
                              conversation_id)
        await self._timeline(turns)
        # "projected" means in the graph and on the timeline: a crash before this line leaves the turns to reconcile
        if projected:
            await self.ctx.sql.conversations.mark_projected([t.id for t in turns])
        for (user_id, channel, conversation_id), group in by_session.items():
            await self.ctx.audit.log_write(
                "store", "episodic", channel, [t.id for t in group], user_id=user_id, conversation_id=conversation_id,
                latency_ms=int((time.perf_counter() - started) * 1000),
                payload=[t.model_dump(mode="json", exclude={"embedding"}) for t in group],
            )

    async def _timeline(self, turns: list[Turn]) -> None:
        await self.ctx.sql.timeline.write([
            TimelineEntry(memory_type="episodic", node_id=t.id, user_id=t.user_id, channel=t.channel,
                          event_time=t.timestamp, summary=t.content, importance=0.5,
                          metadata={"conversation_id": t.conversation_id, "turn_index": t.index, "role": t.role},
                          agent_id=t.agent_id, scope=t.scope or "global")
            for t in turns
        ])

    async def requeue_missing(self, batch_size: int = 1000) -> int:
        """Queue for :meth:`reconcile` every logged turn, of any user, whose Turn node the graph does not have (the
        graph restored from a backup older than the log, or nodes deleted by hand); return how many were queued.
        Reads the whole log in pages of ``batch_size`` and asks the graph for each page's ids."""
        log_rows = self.ctx.sql.conversations
        return await requeue_missing(self.ctx.graph, cypher.PRESENT_TURNS,
                                     lambda after, limit: log_rows.turn_ids(after=after, limit=limit),
                                     log_rows.requeue, batch_size=batch_size)

    async def reconcile(self, batch_size: int = 500) -> ReconcileResult:
        """Project every durable-log row the graph (or the timeline) is missing; idempotent.

        Rows go in batches; when a batch fails, its rows are tried one by one, and a row that fails alone is
        quarantined: the reason is recorded in its log row (``projection_error``), later runs skip it, and the
        result reports it. A row whose ids break the id rules is quarantined without being sent to the graph (some
        such values crash the graph server). An unreachable store or a configuration that disagrees with the stores
        is not a row's fault: :class:`~agentx_memory.errors.StorageUnavailableError` or
        :class:`~agentx_memory.errors.ConfigurationError` is raised and nothing is quarantined. Setting a row's
        ``projection_error`` back to NULL returns it to the queue.
        """
        log_rows = self.ctx.sql.conversations
        projected = 0
        quarantined: list[QuarantinedTurn] = []
        position = 0
        while True:
            positions = await log_rows.unprojected(after=position, limit=batch_size)
            if not positions:
                break
            position = positions[-1]
            try:
                projected += await self._reconcile_rows(positions)
                continue
            except (StorageUnavailableError, ConfigurationError):
                raise
            except Exception:  # some row of the batch is bad: find it, one row at a time
                log.warning("reconcile: a batch of %d rows failed; retrying its rows one by one", len(positions))
            for one in positions:
                try:
                    projected += await self._reconcile_rows([one])
                except (StorageUnavailableError, ConfigurationError):  # the store's fault, not the row's
                    raise
                except Exception as exc:
                    reason = f"{type(exc).__name__}: {exc}"[:2000]
                    turn_id = await log_rows.quarantine(one, reason)
                    if turn_id is not None:
                        log.error("reconcile: quarantined turn %s (log row %d): %s", turn_id, one, reason)
                        quarantined.append(QuarantinedTurn(turn_id=turn_id, error=reason))
        return ReconcileResult(projected=projected, quarantined=tuple(quarantined),
                               quarantined_total=await log_rows.quarantined_count())

    async def _reconcile_rows(self, positions: list[int]) -> int:
        """Read, check, project and timeline the log rows at ``positions``; return how many were projected."""
        turns = await self.ctx.sql.conversations.rows(positions)
        for turn in turns:  # stored before today's id rules, or written around the API: never send it to the graph
            check_id(turn.id, "id")
            check_id(turn.user_id, "user_id")
            check_id(turn.conversation_id, "conversation_id", max_len=200)
            check_channel(turn.channel)
        await self._project(turns)
        self.ctx.graph_health.answered()  # reconcile always tries the graph; when it answers, writes use it again
        await self._timeline(turns)
        await self.ctx.sql.conversations.mark_projected([t.id for t in turns])
        return len(turns)

    async def get_conversation(self, conversation_id: str, user_id: str, *, with_embeddings: bool = False,
                               agent_id: str | None = None) -> list[Turn]:
        """Every turn of a conversation of this user (that ``agent_id`` may read, when given), in index order.
        Unknown conversation (or none of it readable): NotFoundError."""
        check_id(conversation_id, "conversation_id", max_len=200)
        turns = await self.ctx.sql.conversations.conversation(conversation_id, user_id, with_embeddings=with_embeddings,
                                                              agent_id=agent_id)
        if not turns:
            raise NotFoundError("conversation", conversation_id)
        return turns

    async def get_recent_turns(self, user_id: str, channels: Sequence[str] | str | None = None, hours: float = 24,
                               limit: int = 50, *, reference_time: datetime | None = None,
                               agent_id: str | None = None) -> list[Turn]:
        """The user's turns of the last ``hours`` in ``channels`` (plus ``_global``), newest first (those
        ``agent_id`` may read, when given)."""
        if isinstance(hours, bool) or not isinstance(hours, (int, float)) or not (0 < hours <= 24 * 365 * 100):
            raise ValidationError("hours", f"must be > 0 and at most 100 years, got {hours!r}")
        check_int(limit, "limit", low=1, high=10_000)
        now = reference_time or datetime.now(UTC)
        return await self.ctx.sql.conversations.recent(user_id, check_channels(channels),
                                                       since=now - timedelta(hours=hours), until=now, limit=limit,
                                                       agent_id=agent_id)


    # --- spec 003's named interfaces: thin wrappers over the paths above (docs/spec-interfaces.md) -----------------

    async def store_turn_log(self, turn: Turn, channel: str | None = None) -> Turn:
        """Spec 003's ``EpisodicMemory.store_turn_log``: write one turn to the durable PostgreSQL log
        (``conversation_logs``, with its in-context embedding and index) and nothing else; return it as logged.

        It is the log step of :meth:`store_turn` alone: the graph projection, the working-memory cache, the timeline
        and the audit entry are :meth:`store_turn`'s. A turn this call wrote comes back with ``pending_projection =
        True``: :meth:`reconcile` (or storing it again with :meth:`store_turn`) projects it. Storing the same turn
        again is a no-op that returns the logged one, as for :meth:`store_turns`."""
        turns = self.validate([turn], channel)
        previous = await self._assumed_previous(turns)
        embedded = await self._embed_missing(turns, previous)
        written = await self._log(turns, self._recontext(previous, embedded))
        logged = turns[0]
        logged.pending_projection = logged.id in written
        return logged

    async def vector_search(self, query_embedding: Sequence[float], top_k: int, user_id: str,
                            channels: Sequence[str] | str | None = None, time_window_hours: float | None = None, *,
                            reference_time: datetime | None = None,
                            agent_id: str | None = None) -> list[dict[str, Any]]:
        """Spec 003's ``EpisodicMemory.vector_search``: the user's ``top_k`` turns nearest ``query_embedding``
        (cosine), in ``channels`` plus ``_global``, within the last ``time_window_hours`` before ``reference_time``
        (default now) when given; each ``{"turn": Turn, "similarity": float}``, best first.

        The dense leg of recall alone (:meth:`TurnSearch.candidates` without full text): an exact scan of the user's
        vectors while they are few (``retrieval.exact_scan_max_vectors``), the HNSW index otherwise; turns of archived
        conversations are left out. ``remember()`` adds full text, graph and reranking on top. With ``agent_id``,
        only the turns that agent may read."""
        vector = self.ctx.embedder.check(query_embedding, "query_embedding")
        check_int(top_k, "top_k", low=1, high=1000)
        check_id(user_id, "user_id")
        searched = check_channels(channels)
        start = None
        if time_window_hours is not None:
            if (isinstance(time_window_hours, bool) or not isinstance(time_window_hours, (int, float))
                    or not (0 < time_window_hours <= 24 * 365 * 100)):
                raise ValidationError("time_window_hours",
                                      f"must be > 0 and at most 100 years (hours), got {time_window_hours!r}")
            if reference_time is not None:
                check_datetime(reference_time, "reference_time")
            start = (reference_time or datetime.now(UTC)) - timedelta(hours=time_window_hours)
        search = self.ctx.sql.search
        exact = await search.count_user_turns(user_id) <= self.ctx.settings.retrieval.exact_scan_max_vectors
        rows = await search.candidates(SearchScope(user_id, searched, start, None, agent_id=agent_id), text="",
                                       embedding=np.asarray(vector, dtype=np.float32), lexical=False, limit=top_k,
                                       exact=exact)
        ranked = sorted((r for r in rows if r["cosine"] is not None), key=lambda r: (-float(r["cosine"]), r["turn_id"]))
        return [{"turn": turn_from_row(r), "similarity": float(r["cosine"])} for r in ranked[:top_k]]


def turn_text(previous: str | None, content: str, mode: str) -> str:
    """The text a turn's vector is made of: its ``content`` with the ``previous`` turn's text before or after it, or
    alone, as ``mode`` (setting ``embedding.turn_context``) says. The write path and re-embedding both use it."""
    # the model reads only its first few hundred tokens: which text comes first matters
    if not previous or mode == "none":
        return content
    return f"{content}\n{previous}" if mode == "own_first" else f"{previous}\n{content}"


def _stored_index(turn: Turn) -> int:
    # a stored turn always has its index (the log assigned it); -1 only keeps the sort total
    return turn.index if turn.index is not None else -1

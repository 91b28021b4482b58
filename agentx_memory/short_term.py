"""The short-term tier (seed 002 ``AgentShortTermMemory``): per-session entries in PostgreSQL with a TTL.

An entry is a JSON value under a key of one user's session, of a type in :data:`SHORT_TERM_TYPES` (``task_context``,
``conversation``, ``tool_result``, ``reflection``, ``observation``), optionally written by an agent. It expires
``ttl_seconds`` after its last write (default ``short_term.default_ttl_seconds``, 1 h); an expired entry reads as
absent and stays in the table only until the ``short_term`` job (:mod:`agentx_memory.short_term_consolidation`)
promotes it or drops it.

* :meth:`ShortTermStore.read` counts itself (access count + 1, last access now) in one atomic statement;
  :meth:`~ShortTermStore.touch` counts a use without reading the value. Writing does not count as a read.
* **Overwriting keeps the access count**: the count measures how much the *key* is used in the session, and a key
  rewritten as a task goes on (``task_context``) is exactly what consolidation should keep. The expiry starts again
  from the write. An expired entry written again starts afresh (count 0).
* Values are checked against ``limits.max_metadata_bytes`` (16 KB of JSON): an entry is structured data like
  metadata, and the bound keeps a promoted entry's value whole in its fact's metadata.
* A session holds at most ``short_term.max_entries_per_session`` live entries; a new key past it is refused.

Every method takes ``now`` (default: the current time), so expiry can be decided without waiting.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any, Final

from .context import MemoryContext
from .errors import ValidationError
from .models import SHORT_TERM_TYPES, Fact, ShortTermEntry
from .validation import check_datetime, check_id, check_int, check_json, first_bytes

__all__ = [
    "MAX_TTL_SECONDS",
    "SHORT_TERM_SOURCE",
    "ShortTermStore",
    "check_memory_type",
    "check_ttl",
    "fact_id_for",
    "fact_value",
    "promoted_fact",
]

#: The longest TTL of an entry: 30 days (the short-term tier is for hours; long-term memory is for the rest).
MAX_TTL_SECONDS: Final = 30 * 86400
#: ``Fact.source`` of a fact that came from the short-term tier.
SHORT_TERM_SOURCE: Final = "short_term"
#: The longest key and session id, in characters (both follow the id rule otherwise).
_KEY_MAX: Final = 200
_FACT_IDS = uuid.UUID("0b6f7d2e-54a1-4c39-9a57-6f1d0c2e8a41")


def _now(now: datetime | None) -> datetime:
    return datetime.now(UTC) if now is None else check_datetime(now, "now")


def check_ttl(ttl_seconds: Any) -> int:
    """A TTL: a whole number of seconds from 1 to :data:`MAX_TTL_SECONDS`."""
    return check_int(ttl_seconds, "ttl_seconds", low=1, high=MAX_TTL_SECONDS)


def check_memory_type(memory_type: Any) -> str:
    """One of :data:`SHORT_TERM_TYPES`."""
    if memory_type not in SHORT_TERM_TYPES:
        raise ValidationError("memory_type", f"{memory_type!r} is not a short-term memory type; use one of "
                                             f"{', '.join(SHORT_TERM_TYPES)}")
    return str(memory_type)


def fact_id_for(user_id: str, session_id: str, key: str) -> str:
    """The id of the long-term fact a session's key is promoted to: the same for the same user, session and key, so
    a key promoted again updates its fact and the tier router finds it by key."""
    return str(uuid.uuid5(_FACT_IDS, "\x1f".join((user_id, session_id, key))))


def _claim(key: str, value: Any, max_bytes: int) -> str:
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return first_bytes(f"{key}: {shown}", max_bytes)


def promoted_fact(entry: ShortTermEntry, *, ctx: MemoryContext, run_id: str | None = None) -> Fact:
    """The long-term fact for ``entry`` (global channel; private to the entry's agent when an agent wrote it, as the
    entry was): the claim ``"key: value"`` (the value as JSON unless it is
    text, cut to ``limits.max_text_bytes``), source :data:`SHORT_TERM_SOURCE`, and in ``metadata`` its provenance
    (``short_term``: session, key, type, agent, accesses, the promoting run) and ``value``, the value itself (left
    out when it would take the metadata past ``limits.max_metadata_bytes``; the claim still holds it)."""
    limits = ctx.settings.limits
    provenance = {"session_id": entry.session_id, "key": entry.key, "memory_type": entry.memory_type,
                  "agent_id": entry.agent_id, "access_count": entry.access_count, "run_id": run_id}
    metadata: dict[str, Any] = {"short_term": provenance, "value": entry.value}
    try:
        check_json(metadata, "metadata", max_bytes=limits.max_metadata_bytes)
    except ValidationError:
        metadata = {"short_term": provenance}
    return Fact(id=fact_id_for(entry.user_id, entry.session_id, entry.key), user_id=entry.user_id,
                claim=_claim(entry.key, entry.value, limits.max_text_bytes), source=SHORT_TERM_SOURCE,
                metadata=metadata, agent_id=entry.agent_id, scope="agent" if entry.agent_id is not None else None)


def fact_value(fact: Fact) -> Any:
    """The value a fact holds for the tier router: its metadata's ``value`` when it has one, else its claim."""
    return fact.metadata.get("value", fact.claim)


class ShortTermStore:
    """Write, read (counting each read), refresh and list the entries of users' sessions (see the module
    docstring)."""

    def __init__(self, ctx: MemoryContext):
        self.ctx = ctx

    def _check_key(self, user_id: str, session_id: str, key: str) -> None:
        check_id(user_id, "user_id")
        check_id(session_id, "session_id", max_len=_KEY_MAX)
        check_id(key, "key", max_len=_KEY_MAX)

    async def write(self, user_id: str, session_id: str, key: str, value: Any, *, memory_type: str,
                    ttl_seconds: int | None = None, agent_id: str | None = None,
                    now: datetime | None = None) -> ShortTermEntry:
        """Store ``value`` (any JSON value) under ``key`` of the session, expiring ``ttl_seconds`` (default
        ``short_term.default_ttl_seconds``) after ``now``; overwrite an entry already there (its access count
        stays). Returns the entry as stored.

        Raises :class:`ValidationError` naming the field: ids (1-100 characters, session and key 1-200),
        ``memory_type`` outside :data:`SHORT_TERM_TYPES`, ``ttl_seconds`` outside 1 to :data:`MAX_TTL_SECONDS`,
        ``value`` past ``limits.max_metadata_bytes`` as JSON, and ``session_id`` when the key is new and the session
        holds ``short_term.max_entries_per_session`` live entries. Nothing is written then."""
        self._check_key(user_id, session_id, key)
        check_memory_type(memory_type)
        settings = self.ctx.settings.short_term
        ttl = check_ttl(settings.default_ttl_seconds if ttl_seconds is None else ttl_seconds)
        if agent_id is not None:
            check_id(agent_id, "agent_id")
        check_json(value, "value", max_bytes=self.ctx.settings.limits.max_metadata_bytes)
        when = _now(now)
        entry = ShortTermEntry(user_id=user_id, session_id=session_id, key=key, value=value, memory_type=memory_type,
                               agent_id=agent_id, ttl_seconds=ttl, expires_at=when)
        stored = await self.ctx.sql.short_term.write(entry, now=when, max_entries=settings.max_entries_per_session)
        if stored is None:
            raise ValidationError("session_id", f"session {session_id!r} holds {settings.max_entries_per_session} "
                                                "live entries, the limit (short_term.max_entries_per_session); "
                                                "delete entries or let them expire first")
        await self.ctx.audit.log_write("store", "short_term", None, [key], {
            "session_id": session_id, "memory_type": memory_type, "ttl_seconds": ttl}, user_id=user_id,
            session_id=session_id)
        return stored

    async def read(self, user_id: str, session_id: str, key: str, *, now: datetime | None = None,
                   reader: str | None = None) -> ShortTermEntry | None:
        """The entry, counting the read (access count + 1, last access ``now``); ``None`` when it is absent or
        expired (an expired entry is not counted), or, for the agent ``reader``, another agent's."""
        self._check_key(user_id, session_id, key)
        return await self.ctx.sql.short_term.touch(user_id, session_id, key, now=_now(now), reader=reader)

    async def touch(self, user_id: str, session_id: str, key: str, *, now: datetime | None = None,
                    reader: str | None = None) -> int | None:
        """Count one use of the entry without reading it (seed 002's ``touch_access!``); its access count after
        that, or ``None`` when it is absent or expired (or another agent's, for the agent ``reader``)."""
        entry = await self.read(user_id, session_id, key, now=now, reader=reader)
        return None if entry is None else entry.access_count

    async def refresh_ttl(self, user_id: str, session_id: str, key: str, ttl_seconds: int | None = None, *,
                          now: datetime | None = None, reader: str | None = None) -> ShortTermEntry | None:
        """Let the entry expire ``ttl_seconds`` after ``now`` (default: its own TTL again; a given TTL becomes its
        TTL). ``None`` when it is absent or already expired: an expired entry cannot be brought back."""
        self._check_key(user_id, session_id, key)
        ttl = None if ttl_seconds is None else check_ttl(ttl_seconds)
        return await self.ctx.sql.short_term.refresh_ttl(user_id, session_id, key, ttl, now=_now(now), reader=reader)

    async def delete(self, user_id: str, session_id: str, key: str, *, now: datetime | None = None,
                     reader: str | None = None) -> bool:
        """Remove the entry; True when a live one was there (an expired one goes too, and counts as absent); the
        agent ``reader`` removes only its own or the user's."""
        self._check_key(user_id, session_id, key)
        removed = await self.ctx.sql.short_term.delete(user_id, session_id, key, now=_now(now), reader=reader)
        if removed:
            await self.ctx.audit.log_write("delete", "short_term", None, [key], {"session_id": session_id},
                                           user_id=user_id, session_id=session_id)
        return removed

    async def get(self, user_id: str, session_id: str, key: str, *, now: datetime | None = None,
                  reader: str | None = None) -> ShortTermEntry | None:
        """The live entry without counting a read (for statistics and the tier router's peeks); ``None`` when
        absent or expired."""
        self._check_key(user_id, session_id, key)
        return await self.ctx.sql.short_term.get(user_id, session_id, key, now=_now(now), reader=reader)

    async def list_entries(self, user_id: str, session_id: str, *, now: datetime | None = None,
                           reader: str | None = None) -> list[ShortTermEntry]:
        """The session's live entries (for the agent ``reader``: its own and the user's), by key (reads are not
        counted)."""
        check_id(user_id, "user_id")
        check_id(session_id, "session_id", max_len=_KEY_MAX)
        return await self.ctx.sql.short_term.list_session(user_id, session_id, now=_now(now), reader=reader)

    async def statistics(self, user_id: str, session_id: str | None = None, *, now: datetime | None = None,
                         reader: str | None = None) -> dict[str, Any]:
        """Figures of one session (or all the user's when ``session_id`` is None): ``entries`` (live), ``expired``
        (waiting for the ``short_term`` job), ``by_type`` (live entries per memory type), ``mean_access_count``
        (over the live entries; 0.0 when none) and ``bytes`` (their values as JSON text)."""
        check_id(user_id, "user_id")
        if session_id is not None:
            check_id(session_id, "session_id", max_len=_KEY_MAX)
        rows = await self.ctx.sql.short_term.statistics(user_id, session_id, now=_now(now), reader=reader)
        entries = sum(r["entries"] for r in rows)
        accesses = sum(r["accesses"] for r in rows)
        return {"entries": entries, "expired": sum(r["expired"] for r in rows),
                "by_type": {r["memory_type"]: r["entries"] for r in rows if r["entries"]},
                "mean_access_count": accesses / entries if entries else 0.0,
                "bytes": sum(int(r["bytes"]) for r in rows)}

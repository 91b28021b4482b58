"""Working memory on Redis: fast, ephemeral, per session (spec 003 "Working Memory").

Key patterns (every key also carries the configured ``redis.key_prefix``)::

    working:{<user_id>:<channel>:<conversation_id>}:turns     list, newest first, capped at working.max_turns
    working:{<user_id>:<channel>:<conversation_id>}:context   hash of context values, per-field expiry (HEXPIRE)
    working:{<user_id>:<channel>:<conversation_id>}:goal      string (JSON): the active goal
    working:{<user_id>:<channel>:<conversation_id>}:thoughts  list, newest first, capped at working.max_thoughts
    working:{<user_id>:<channel>:<conversation_id>}:memory    hash: spec 000's conversation working memory (fields,
                                                              scratchpad, entities), capped as a whole
    working:{<user_id>:<channel>:<conversation_id>}:ledger    hash: the injection ledger (what was put in a prompt)
    consolidation:job:<job_id>                                hash: consolidation job tracking
    consolidation:lock:<conversation_id>                      string: consolidation lock (SET NX PX, token-checked
                                                              release)
    session:<session_id>:<key>                                string: session-scoped ephemeral data
    ratelimit:<operation>:<user_id>[:<agent_id>]              sorted set: the calls of a rate-limited operation in
                                                              the current window (see :meth:`WorkingStore.hit_rate`)

The braces are literal: they are Redis Cluster's hash tag, so every key of one conversation lives in one slot and
multi-key operations (``clear_session``) work on a cluster too. Each ``<…>`` segment is written with ``%``, ``:``,
``{`` and ``}`` percent-encoded (see :func:`key_segment`), so the segments of a key can always be told apart (user
``w:_global:b`` and user ``w`` with conversation ``b:_global:c`` get different keys) and an id never opens a hash tag
of its own. Ids without those characters appear in keys exactly as written above.

:meth:`WorkingMemory.persist` saves every key of a session to PostgreSQL (``working_memory_saves``, one row per
session) and :meth:`WorkingMemory.load` writes them back (seed 002's persist/load to the database).

Every key has a TTL (``working.ttl_seconds``, 1 h by default), refreshed on write; the conversation hash and the
ledger have ``working.conversation_ttl_seconds`` (24 h), refreshed on every read and write (spec 000). Values are
JSON. Nothing acknowledged lives only here: turns are cached here after they are durable in PostgreSQL. Per-field
expiry of the context hash needs Redis 7.4+ (``HEXPIRE``); the embedded FalkorDB server is Redis 8.

Auditing (issue 19): a :class:`WorkingMemory` given an audit logger (``AsyncAgentMemory.working()`` gives it the
memory's; a store built with ``audit=`` gives it to every session) logs each public operation once, with memory type
``working``, the operation's method name, the conversation as ``conversation_id`` and ``session_id``, and the keys or
fields touched (never their values): writes at level ``writes``, reads at level ``reads`` (``query_text`` names what
was read, ``*`` for everything), the values written or read only at ``verbose``. When the level leaves an operation
out nothing is built and nothing is sent: the Redis call is the only round trip. Working memory the engine uses on its
own behalf (the recent-turns cache of ``store_turn``) is not audited again: the operation that caused it is.
"""

from __future__ import annotations

import json
import math
import operator
import re
import sys
import time
import uuid
from collections.abc import Awaitable, Mapping, Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

import redis.asyncio as aioredis
import redis.exceptions

from . import capped_hash
from .errors import StorageError, StorageUnavailableError, ValidationError, WorkingMemoryFullError
from .models import Turn
from .retrieval.bundle import MemoryBundle
from .retrieval.prompt import WorkingState
from .settings import WorkingMemorySettings
from .validation import check_depth, check_id

if TYPE_CHECKING:
    from .audit import MemoryAuditLogger
    from .sql.working_saves import WorkingSaves

__all__ = ["MAX_TTL_SECONDS", "WorkingMemory", "WorkingStore", "key_segment", "turn_preview"]

#: The longest TTL accepted anywhere in working memory: 100 years, in seconds.
MAX_TTL_SECONDS = 100 * 365 * 86400

#: The keys of one session (their suffixes) with the Redis type each holds, in the order a save lists them.
SESSION_KEYS: dict[str, str] = {"turns": "list", "context": "hash", "goal": "string", "thoughts": "list",
                                "memory": "hash", "ledger": "hash"}

#: The longest context key (``set``/``get``/``delete``), in characters; keys follow the one id rule (check_id).
_KEY_MAX = 200

# Atomic "delete only if I still hold the lock".
_RELEASE_LOCK = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end
"""

# Atomic sliding-window rate limit on one sorted set of call times (µs, the server's clock, so processes on machines
# with skewed clocks agree). ARGV: window (µs), limit, a unique member. Drops the calls that left the window; under the
# limit, records this call and returns 0; at it, records nothing and returns the µs until the oldest call leaves.
_RATE_HIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000) + 1)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local wait = math.ceil(tonumber(oldest[2]) + window - now)
if wait < 1 then wait = 1 end
return wait
"""


def _json_default(value: Any) -> Any:
    # Values JSON has no type for but that read back meaningfully: timestamps, ids, models, sets.
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serializable")


def _dump(value: Any, limit: int, field: str) -> str:
    check_depth(value, field)
    try:
        text = json.dumps(value, default=_json_default)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValidationError(field, f"value is not JSON-serializable: {exc}") from exc
    size = len(text.encode())
    if size > limit:
        raise ValidationError(field, f"value is {size} bytes; the limit is {limit} bytes (working.max_value_bytes)")
    return text


def turn_preview(turn: Turn, max_bytes: int) -> dict[str, Any]:
    """A turn as the recent-turns cache keeps it: its JSON fields without the embedding and, when that would be over
    ``max_bytes``, with the content cut (on a character boundary) so it fits, marked ``content_truncated`` with the
    full ``content_bytes`` (the whole turn stays in the conversation log)."""
    item = turn.model_dump(mode="json", exclude={"embedding"})
    size = len(json.dumps(item, default=_json_default).encode())
    if size <= max_bytes:
        return item
    content = item["content"].encode()
    item.update(content="", content_truncated=True, content_bytes=len(content))
    room = max_bytes - len(json.dumps(item, default=_json_default).encode())
    # JSON escaping can make the cut longer than its bytes (quotes, control characters): trim until it fits
    cut = content[: max(0, room)].decode(errors="ignore")
    while cut and len(json.dumps({**item, "content": cut}, default=_json_default).encode()) > max_bytes:
        cut = cut[: len(cut) * 9 // 10]
    item["content"] = cut
    return item


def _load(text: str | bytes | None) -> Any:
    """A stored JSON value (None when absent); a value that is not JSON (written by another program) is a
    StorageError, never a raw decoding error."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise StorageError(f"Redis holds a value that is not JSON under a working-memory key: {exc}") from exc


def restore_hash(pipe: Any, key: str, value: Mapping[str, Any], field_ttl_ms: Mapping[str, int] | None) -> None:
    """Queue on ``pipe`` the writing of a hash read with its fields' own expiry (``HPTTL``): the fields, then each
    field's time left again (``HPEXPIRE``), so a value set with its own TTL still expires when it would have."""
    pipe.hset(key, mapping=value)
    for name, ms in (field_ttl_ms or {}).items():
        if name in value:
            pipe.execute_command("HPEXPIRE", key, int(ms), "FIELDS", 1, name)


def _limit(value: Any) -> int:
    """A read's ``limit``: a whole number up to 2**62 (0 or less reads nothing; Redis ranges are 64-bit)."""
    if isinstance(value, bool) or not isinstance(value, int) or value > 2**62:
        raise ValidationError("limit", f"must be a whole number of at most 2**62, got {value!r}")
    return value


def _ttl_seconds(value: Any, default: int) -> int:
    """``ttl_seconds`` checked before anything is written: None means ``default``; otherwise a whole number of
    seconds from 1 to :data:`MAX_TTL_SECONDS` (0 is rejected, not silently replaced by the default)."""
    if value is None:
        return default
    if isinstance(value, bool):
        raise ValidationError("ttl_seconds", f"must be a whole number of seconds, got {value!r}")
    try:
        ttl = operator.index(value)
    except TypeError:
        raise ValidationError("ttl_seconds", f"must be a whole number of seconds, got {value!r}") from None
    if not 1 <= ttl <= MAX_TTL_SECONDS:
        raise ValidationError("ttl_seconds", f"must be from 1 to {MAX_TTL_SECONDS} seconds (100 years), got {ttl}")
    return ttl


def key_segment(part: str) -> str:
    """One key segment, with ``%``, ``:``, ``{`` and ``}`` percent-encoded so that ``:`` only ever separates
    segments and braces only ever mark a conversation's hash tag.

    The encoding is injective (``%`` is encoded first, so ``a%3Ab`` and ``a:b`` stay distinct) and leaves every other
    character alone: an ordinary id is its own segment.
    """
    return part.replace("%", "%25").replace(":", "%3A").replace("{", "%7B").replace("}", "%7D")


def _turn_item(turn: Turn | Mapping[str, Any], field: str) -> dict[str, Any]:
    """What the cache holds of a turn: a Turn's JSON without its vector, or a copy of a dict."""
    if not isinstance(turn, (Turn, Mapping)):
        raise ValidationError(field, f"must be a Turn or a mapping, got {type(turn).__name__}")
    return turn.model_dump(mode="json", exclude={"embedding"}) if isinstance(turn, Turn) else dict(turn)


class WorkingStore:
    """The Redis side of agentx-memory: key building, TTLs, consolidation locks and job records."""

    def __init__(self, client: aioredis.Redis, settings: WorkingMemorySettings, *, key_prefix: str = "",
                 audit: MemoryAuditLogger | None = None, saves: WorkingSaves | None = None):
        self.client = client
        self.settings = settings
        self.prefix = key_prefix
        #: The audit logger every :meth:`session` gets unless it is given another (None: sessions are not audited).
        self.audit = audit
        #: Where :meth:`WorkingMemory.persist` saves a session in PostgreSQL (the memory's context sets it).
        self.saves = saves

    #: The first part of every key the store writes; dropping a namespace deletes ``{prefix}{family}:*`` for each.
    KEY_FAMILIES: tuple[str, ...] = ("working", "consolidation", "session", "ratelimit")

    def key(self, *parts: str) -> str:
        """Build a key from parts with the configured prefix: each part encoded by :func:`key_segment`, joined with
        ``:`` (so distinct part tuples never give the same key)."""
        return self.prefix + ":".join(key_segment(part) for part in parts)

    def session_key(self, user_id: str, channel: str, conversation_id: str, suffix: str) -> str:
        """The key of one part of a session: ``working:{user:channel:conversation}:suffix`` with the conversation's
        hash tag (see the module docstring)."""
        tag = ":".join(key_segment(part) for part in (user_id, channel, conversation_id))
        return f"{self.prefix}working:{{{tag}}}:{key_segment(suffix)}"

    async def _call(self, coro: Awaitable[Any]) -> Any:
        """Await one Redis call or pipeline: the one place Redis errors become ours. Unreachable or timed out →
        StorageUnavailableError; refused (WRONGTYPE, OOM, a bad argument) → StorageError; both ``from`` the
        driver's exception."""
        try:
            return await coro
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
            raise StorageUnavailableError(f"Redis unreachable: {exc}") from exc
        except redis.exceptions.RedisError as exc:
            raise StorageError(f"Redis refused a working-memory operation: {exc}") from exc

    async def used_memory(self) -> int:
        """The Redis server's ``used_memory`` (``INFO memory``) in bytes: the whole server's, not only this memory's
        keys (on the embedded stack the server also holds the FalkorDB graphs)."""
        info = await self._call(self.client.info("memory"))
        return int(info.get("used_memory", 0))

    def _user_keys(self, user_id: str) -> str:
        """The SCAN pattern of every working-memory key of the user (a glob-safe prefix of their hash tags)."""
        tag = re.sub(r"([*?\[\]\\])", r"\\\1", key_segment(user_id))
        return f"{self.prefix}working:{{{tag}:*"

    async def forget_user(self, user_id: str) -> int:
        """Delete every working-memory key of the user (every channel and conversation) and their rate-limit counts
        (which name them); return how many keys went."""
        segment = key_segment(user_id)
        escaped_prefix = re.sub(r"([*?\[\]\\])", r"\\\1", self.prefix)

        def theirs(key: str) -> bool:  # ratelimit:<operation>:<user>[:<agent>]: segments never hold ":"
            parts = key[len(self.prefix):].split(":")
            return parts[0] != "ratelimit" or (len(parts) >= 3 and parts[2] == segment)

        async def scan_and_delete() -> int:
            deleted = 0
            batch: list[Any] = []
            for pattern in (self._user_keys(user_id), f"{escaped_prefix}ratelimit:*"):
                async for key in self.client.scan_iter(match=pattern, count=500):
                    if not theirs(key):
                        continue
                    batch.append(key)
                    if len(batch) >= 500:
                        deleted += int(await self.client.delete(*batch))
                        batch = []
            if batch:
                deleted += int(await self.client.delete(*batch))
            return deleted

        return int(await self._call(scan_and_delete()))

    async def forget_items(self, user_id: str, ids: Sequence[str]) -> int:
        """Remove the memories ``ids`` from every working-memory cache of the user: cached recent turns with one of
        those ids, and injection-ledger entries (``kind:id``) naming one; return how many entries went."""
        wanted = set(ids)
        ttl = self.settings.conversation_ttl_seconds

        async def scan_and_remove() -> int:
            removed = 0
            async for key in self.client.scan_iter(match=self._user_keys(user_id), count=500):
                if key.endswith("}:turns"):  # the client decodes responses: keys and items are str
                    for item in await self.client.lrange(key, 0, -1):
                        cached = _load(item)
                        if isinstance(cached, dict) and cached.get("id") in wanted:
                            removed += int(await self.client.lrem(key, 0, str(item)))
                elif key.endswith("}:ledger"):
                    fields = [f for f in await capped_hash.read(self.client, key, ttl_seconds=ttl)
                              if f.partition(":")[2] in wanted]
                    if fields:
                        removed += await capped_hash.delete_fields(self.client, key, fields, ttl_seconds=ttl)
            return removed

        return int(await self._call(scan_and_remove()))

    async def export_user(self, user_id: str) -> list[dict[str, Any]]:
        """Every working-memory key of the user as plain values: the key without this installation's prefix, its
        Redis type (hash, list, string), its value and its remaining time to live in ms (None: no expiry)."""
        async def read_all() -> list[dict[str, Any]]:
            out: list[dict[str, Any]] = []
            async for key in self.client.scan_iter(match=self._user_keys(user_id), count=500):
                kind = await self.client.type(key)
                field_ttls: dict[str, int] = {}
                if kind == "hash":
                    value: Any = await self.client.hgetall(key)
                    value, field_ttls = await self._hash_with_field_ttls(key, value)
                elif kind == "list":
                    value = await self.client.lrange(key, 0, -1)
                elif kind == "string":
                    value = await self.client.get(key)
                else:
                    continue  # expired between SCAN and TYPE ("none"), or not ours
                ttl = await self.client.pttl(key)
                out.append({"key": key[len(self.prefix):], "type": kind, "value": value,
                            "ttl_ms": ttl if ttl > 0 else None, "field_ttl_ms": field_ttls})
            return sorted(out, key=lambda r: r["key"])

        return list(await self._call(read_all()))

    async def import_user(self, user_id: str, entries: Sequence[Mapping[str, Any]]) -> int:
        """Write back keys read by :meth:`export_user` under this installation's prefix, with their expiry; each key
        must belong to ``user_id`` (a :class:`~agentx_memory.errors.ValidationError` otherwise, before any write).
        Return how many keys were written."""
        own = f"working:{{{key_segment(user_id)}:"
        for entry in entries:
            if not str(entry.get("key", "")).startswith(own) or entry.get("type") not in ("hash", "list", "string"):
                raise ValidationError("redis", f"key {entry.get('key')!r} ({entry.get('type')}) is not a working-"
                                               f"memory key of user {user_id!r}")
        async with self.client.pipeline(transaction=True) as pipe:
            for entry in entries:
                key = self.prefix + entry["key"]
                pipe.delete(key)
                if entry["type"] == "hash" and entry["value"]:
                    restore_hash(pipe, key, entry["value"], entry.get("field_ttl_ms"))
                elif entry["type"] == "list" and entry["value"]:
                    pipe.rpush(key, *entry["value"])
                elif entry["type"] == "string":
                    pipe.set(key, entry["value"])
                if entry.get("ttl_ms"):
                    pipe.pexpire(key, int(entry["ttl_ms"]))
            await self._call(pipe.execute())
        return len(entries)

    async def _hash_with_field_ttls(self, key: str, value: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, int]]:
        """A hash's fields that are still there, and the time each of those with its own expiry has left (ms),
        read with ``HPTTL`` (a field that expired since ``value`` was read is left out)."""
        names = list(value)
        if not names:
            return {}, {}
        left = [int(ms) for ms in await self._call(self.client.execute_command(
            "HPTTL", key, "FIELDS", len(names), *names))]
        kept = {n: v for (n, v), ms in zip(value.items(), left, strict=True) if ms != -2}
        return kept, {n: ms for n, ms in zip(names, left, strict=True) if ms > 0}

    def session(self, user_id: str, conversation_id: str, channel: str = "_global", *,
                audit: MemoryAuditLogger | None = None, agent_id: str | None = None) -> WorkingMemory:
        """A :class:`WorkingMemory` view of one user's session in one channel; its operations are audited by
        ``audit`` (default: the store's :attr:`audit`; None: not audited); read by ``agent_id`` (None: the user)."""
        return WorkingMemory(self, user_id=user_id, conversation_id=conversation_id, channel=channel,
                             audit=audit if audit is not None else self.audit, agent_id=agent_id)

    # --- rate limits ------------------------------------------------------------------------------------------

    async def hit_rate(self, operation: str, user_id: str, agent_id: str | None, *, limit: int,
                       window_seconds: float) -> float:
        """Count one call of ``operation`` by the user (or that agent of the user) against ``limit`` calls per
        sliding window of ``window_seconds``, atomically across processes (one Lua script on Redis's clock).
        Return 0.0 when the call is let through (and counted), otherwise the seconds until it would be (> 0; a
        refused call is not counted)."""
        parts = ("ratelimit", operation, user_id) + ((agent_id,) if agent_id is not None else ())
        window_us = max(1, round(window_seconds * 1_000_000))
        wait_us = await self._call(self.client.eval(_RATE_HIT, 1, self.key(*parts), window_us, limit,
                                                    uuid.uuid4().hex))
        return int(wait_us) / 1_000_000

    # --- consolidation locks and jobs -----------------------------------------------------------------------

    async def acquire_lock(self, conversation_id: str, ttl_seconds: float = 600) -> str | None:
        """Take ``consolidation:lock:{conversation_id}``; return a token, or None if someone else holds it."""
        check_id(conversation_id, "conversation_id", max_len=_KEY_MAX)
        if (isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, (int, float)) or not math.isfinite(ttl_seconds)
                or not 0.001 <= ttl_seconds <= MAX_TTL_SECONDS):
            raise ValidationError("ttl_seconds",
                                  f"must be from 0.001 to {MAX_TTL_SECONDS} seconds, got {ttl_seconds!r}")
        token = uuid.uuid4().hex
        ok = await self._call(
            self.client.set(
                self.key("consolidation", "lock", conversation_id), token, nx=True, px=int(ttl_seconds * 1000)
            )
        )
        return token if ok else None

    async def release_lock(self, conversation_id: str, token: str) -> bool:
        """Release the lock if ``token`` still holds it."""
        check_id(conversation_id, "conversation_id", max_len=_KEY_MAX)
        check_id(token, "token")
        released = await self._call(
            self.client.eval(_RELEASE_LOCK, 1, self.key("consolidation", "lock", conversation_id), token)
        )
        return bool(released)

    async def record_job(self, job_id: str, fields: dict[str, Any], ttl_seconds: int = 86400) -> None:
        """Write (merge) fields of ``consolidation:job:{job_id}``."""
        check_id(job_id, "job_id", max_len=_KEY_MAX)
        for name in fields:
            check_id(name, "fields", max_len=_KEY_MAX)
        ttl = _ttl_seconds(ttl_seconds, 86400)
        key = self.key("consolidation", "job", job_id)
        mapping: dict[Any, str] = {k: json.dumps(v, default=str) for k, v in fields.items()}
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping=mapping)
            pipe.expire(key, ttl)
            await self._call(pipe.execute())

    async def get_job(self, job_id: str) -> dict[str, Any] | None:
        """Fields of ``consolidation:job:{job_id}``, or None."""
        check_id(job_id, "job_id", max_len=_KEY_MAX)
        raw = await self._call(self.client.hgetall(self.key("consolidation", "job", job_id)))
        return {_s(k): _load(v) for k, v in raw.items()} if raw else None

    # --- session-scoped ephemeral data ----------------------------------------------------------------------

    @staticmethod
    def _check_session_key(session_id: str, key: str) -> None:
        check_id(session_id, "session_id", max_len=_KEY_MAX)
        check_id(key, "key", max_len=_KEY_MAX)

    async def session_set(self, session_id: str, key: str, value: Any, ttl_seconds: int | None = None) -> None:
        """Set ``session:{session_id}:{key}`` with a TTL (default working.ttl_seconds; 1 s to 100 years)."""
        self._check_session_key(session_id, key)
        ttl = _ttl_seconds(ttl_seconds, self.settings.ttl_seconds)
        text = _dump(value, self.settings.max_value_bytes, "value")
        await self._call(self.client.set(self.key("session", session_id, key), text, ex=ttl))

    async def session_get(self, session_id: str, key: str) -> Any:
        """Value of ``session:{session_id}:{key}``, or None."""
        self._check_session_key(session_id, key)
        return _load(await self._call(self.client.get(self.key("session", session_id, key))))


def _s(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


class WorkingMemory:
    """One session's working memory: recent turns, context values, the active goal and a scratchpad of thoughts."""

    def __init__(self, store: WorkingStore, *, user_id: str, conversation_id: str, channel: str,
                 audit: MemoryAuditLogger | None = None, agent_id: str | None = None):
        self.store = store
        self.user_id = user_id
        self.conversation_id = conversation_id
        self.channel = channel
        #: The agent reading (None: the user): the cached turns it reads leave out other agents' private turns.
        self.agent_id = agent_id
        #: The audit logger of this session's operations (None: not audited; see the module docstring).
        self.audit = audit

    def _auditing(self, kind: str) -> MemoryAuditLogger | None:
        """The logger when entries of ``kind`` ("writes" or "reads") are logged, else None: a check in memory, so
        an operation the level leaves out costs nothing more than its Redis call."""
        audit = self.audit
        return audit if audit is not None and audit.enabled(kind) else None

    async def _wrote(self, operation: str, names: Sequence[str], started: float, *, payload: Any = None,
                     metadata: dict[str, Any] | None = None) -> None:
        """Audit a write of ``names`` (keys, fields, ledger items): their values only at ``verbose``."""
        if (audit := self._auditing("writes")) is not None:
            await audit.log_write(operation, "working", self.channel, list(names), metadata,
                                  user_id=self.user_id, conversation_id=self.conversation_id,
                                  latency_ms=int((time.perf_counter() - started) * 1000), payload=payload)

    async def _read(self, operation: str, what: str, count: int, started: float, *, payload: Any = None) -> None:
        """Audit a read of ``what`` (key or field names, ``*`` for everything) that found ``count`` items; the
        values read only at ``verbose``."""
        if (audit := self._auditing("reads")) is not None:
            await audit.log_read(what, [self.channel], count, int((time.perf_counter() - started) * 1000),
                                 user_id=self.user_id, source_channel=self.channel, memory_type="working",
                                 operation=operation, conversation_id=self.conversation_id, payload=payload)

    def _key(self, suffix: str) -> str:
        return self.store.session_key(self.user_id, self.channel, self.conversation_id, suffix)

    @property
    def _ttl(self) -> int:
        return self.store.settings.ttl_seconds

    async def _push(self, suffix: str, item: dict[str, Any], cap: int) -> None:
        await self._push_all(suffix, [item], cap)

    async def _push_all(self, suffix: str, items: Sequence[dict[str, Any]], cap: int) -> None:
        """Push ``items`` in order (the last ends at the head) and trim to ``cap``, in one round trip."""
        key = self._key(suffix)
        texts = [_dump(item, self.store.settings.max_value_bytes, suffix) for item in items]
        async with self.store.client.pipeline(transaction=True) as pipe:
            pipe.lpush(key, *texts)
            pipe.ltrim(key, 0, cap - 1)
            pipe.expire(key, self._ttl)
            await self.store._call(pipe.execute())

    async def _recent(self, suffix: str, limit: int) -> list[dict[str, Any]]:
        if _limit(limit) <= 0:
            return []
        raw = await self.store._call(self.store.client.lrange(self._key(suffix), 0, limit - 1))
        return [_load(item) for item in raw]

    async def add_turn(self, turn: Turn | Mapping[str, Any]) -> None:
        """Cache a turn (a :class:`~agentx_memory.models.Turn` or a dict) at the head of the recent-turns list."""
        started = time.perf_counter()
        item = _turn_item(turn, "turn")
        await self._push("turns", item, self.store.settings.max_turns)
        await self._wrote("add_turn", [str(item.get("id", ""))] if item.get("id") else [], started, payload=item)

    async def add_turns(self, turns: Sequence[Turn | Mapping[str, Any]]) -> None:
        """Cache turns in order, the last at the head of the recent-turns list, in one round trip; nothing is cached
        when any of them is refused (not a turn, or over ``working.max_value_bytes``)."""
        started = time.perf_counter()
        items = [_turn_item(turn, f"turns[{i}]") for i, turn in enumerate(turns)]
        if not items:
            return
        await self._push_all("turns", items, self.store.settings.max_turns)
        await self._wrote("add_turns", [str(item["id"]) for item in items if item.get("id")], started, payload=items)

    async def _visible_turns(self, limit: int) -> list[dict[str, Any]]:
        """The ``limit`` most recent cached turns this session's reader may read, oldest first (the cache holds
        every turn of the conversation; an agent does not read another agent's private ones)."""
        if self.agent_id is None:
            return list(reversed(await self._recent("turns", limit)))
        if _limit(limit) <= 0:
            return []
        cached = await self._recent("turns", self.store.settings.max_turns)
        seen = [t for t in cached if not isinstance(t, dict) or t.get("scope") != "agent"
                or t.get("agent_id") == self.agent_id]
        return list(reversed(seen[:limit]))

    async def get_recent_turns(self, limit: int = 10) -> list[dict[str, Any]]:
        """The most recent cached turns, oldest first."""
        started = time.perf_counter()
        turns = await self._visible_turns(limit)
        await self._read("get_recent_turns", "turns", len(turns), started, payload=turns)
        return turns

    async def set(self, key: str, value: Any, ttl_seconds: int | None = None) -> None:
        """Set a context value; it expires after ``ttl_seconds`` (default working.ttl_seconds).

        ``ttl_seconds`` is a whole number from 1 to :data:`MAX_TTL_SECONDS`; anything else (0 included) raises
        :class:`~agentx_memory.errors.ValidationError` before anything is written. The value and its expiry are
        written in one MULTI/EXEC transaction.
        """
        check_id(key, "key", max_len=_KEY_MAX)
        ttl = _ttl_seconds(ttl_seconds, self._ttl)
        text = _dump(value, self.store.settings.max_value_bytes, "value")
        started = time.perf_counter()
        ctx = self._key("context")
        async with self.store.client.pipeline(transaction=True) as pipe:
            pipe.hset(ctx, key, text)
            pipe.execute_command("HEXPIRE", ctx, ttl, "FIELDS", 1, key)
            pipe.expire(ctx, max(ttl, self._ttl), gt=True)
            pipe.expire(ctx, max(ttl, self._ttl), nx=True)
            await self.store._call(pipe.execute())
        await self._wrote("set", [key], started, payload={key: value}, metadata={"ttl_seconds": ttl})

    async def get(self, key: str) -> Any:
        """A context value, or None when absent or expired."""
        check_id(key, "key", max_len=_KEY_MAX)
        started = time.perf_counter()
        value = _load(await self.store._call(self.store.client.hget(self._key("context"), key)))
        await self._read("get", key, int(value is not None), started, payload=value)
        return value

    async def delete(self, key: str) -> bool:
        """Delete a context value; True if it existed."""
        check_id(key, "key", max_len=_KEY_MAX)
        started = time.perf_counter()
        existed = bool(await self.store._call(self.store.client.hdel(self._key("context"), key)))
        await self._wrote("delete", [key] if existed else [], started, metadata={"key": key})
        return existed

    async def set_active_goal(self, goal_id: str, goal_description: str) -> None:
        """Remember the goal the agent is working on in this session."""
        check_id(goal_id, "goal_id")
        text = _dump({"goal_id": goal_id, "description": goal_description, "set_at": time.time()},
                     self.store.settings.max_value_bytes, "goal_description")
        started = time.perf_counter()
        await self.store._call(self.store.client.set(self._key("goal"), text, ex=self._ttl))
        await self._wrote("set_active_goal", [goal_id], started, payload={"description": goal_description})

    async def get_active_goal(self) -> dict[str, Any] | None:
        """The active goal ``{goal_id, description, set_at}``, or None."""
        started = time.perf_counter()
        goal = await self._active_goal()
        await self._read("get_active_goal", "goal", int(goal is not None), started, payload=goal)
        return goal

    async def _active_goal(self) -> dict[str, Any] | None:
        return _load(await self.store._call(self.store.client.get(self._key("goal"))))

    async def push_thought(self, thought: str | dict[str, Any]) -> None:
        """Append a thought (reasoning scratchpad entry)."""
        if not isinstance(thought, (str, Mapping)):
            raise ValidationError("thought", f"must be a string or a mapping, got {type(thought).__name__}")
        item = {"thought": thought, "at": time.time()} if isinstance(thought, str) else dict(thought)
        started = time.perf_counter()
        await self._push("thoughts", item, self.store.settings.max_thoughts)
        await self._wrote("push_thought", [], started, payload=item)

    async def get_thoughts(self, limit: int = 10) -> list[dict[str, Any]]:
        """The most recent thoughts, oldest first."""
        started = time.perf_counter()
        thoughts = list(reversed(await self._recent("thoughts", limit)))
        await self._read("get_thoughts", "thoughts", len(thoughts), started, payload=thoughts)
        return thoughts

    async def get_context(self) -> dict[str, Any]:
        """Everything in this session: context values, recent turns, active goal and recent thoughts."""
        started = time.perf_counter()
        raw = await self.store._call(self.store.client.hgetall(self._key("context")))
        context = {
            "user_id": self.user_id,
            "channel": self.channel,
            "conversation_id": self.conversation_id,
            "values": {_s(k): _load(v) for k, v in raw.items()},
            "recent_turns": await self._visible_turns(self.store.settings.max_turns),
            "active_goal": await self._active_goal(),
            "thoughts": list(reversed(await self._recent("thoughts", self.store.settings.max_thoughts))),
        }
        await self._read("get_context", "*", len(raw), started, payload=context)
        return context

    async def clear_session(self) -> int:
        """Delete every key of this session (the conversation hash and the ledger too); return how many existed."""
        started = time.perf_counter()
        keys = [self._key(s) for s in SESSION_KEYS]
        deleted = int(await self.store._call(self.store.client.delete(*keys)))
        await self._wrote("clear_session", [], started, metadata={"keys_deleted": deleted})
        return deleted

    # --- seed 002: persist to / load from the database ----------------------------------------------------------

    def _saves(self) -> WorkingSaves:
        if self.store.saves is None:
            raise StorageError("working memory has no database to persist to (open it through AgentMemory)")
        return self.store.saves

    async def _read_session(self) -> list[dict[str, Any]]:
        """Every key of this session as plain values (see :meth:`persist`), read in one MULTI/EXEC; the context
        fields' own expiry is read right after (a field that expired in between is left out)."""
        client = self.store.client
        async with client.pipeline(transaction=True) as pipe:
            for suffix, kind in SESSION_KEYS.items():
                key = self._key(suffix)
                if kind == "list":
                    pipe.lrange(key, 0, -1)
                elif kind == "hash":
                    pipe.hgetall(key)
                else:
                    pipe.get(key)
                pipe.pttl(key)
            replies = await self.store._call(pipe.execute())
        entries: list[dict[str, Any]] = []
        for i, (suffix, kind) in enumerate(SESSION_KEYS.items()):
            value, ttl = replies[2 * i], replies[2 * i + 1]
            if not value:  # absent (or an empty list / hash, which Redis does not keep)
                continue
            entry: dict[str, Any] = {"suffix": suffix, "type": kind, "ttl_ms": ttl if ttl > 0 else None,
                                     "value": {_s(k): _s(v) for k, v in value.items()} if kind == "hash"
                                     else [_s(v) for v in value] if kind == "list" else _s(value)}
            entries.append(entry)
        for entry in entries:
            if entry["suffix"] == "context":
                entry["value"], entry["field_ttl_ms"] = await self.store._hash_with_field_ttls(
                    self._key("context"), entry["value"])
        return entries

    async def persist(self) -> dict[str, Any]:
        """Save this session's whole working memory to PostgreSQL (seed 002's ``persist_to_database``): every key
        of it -- the recent turns, the context values with each one's expiry, the active goal, the thoughts, the
        conversation's working memory (spec 000's hash) and the injection ledger -- with the time each had left to
        live. The save replaces the session's previous one (one per user, channel and conversation); Redis is not
        changed. Returns ``{"user_id", "channel", "conversation_id", "saved_at", "keys"}`` (``keys``: the
        suffixes saved, e.g. ``["turns", "context"]``)."""
        entries = await self._read_session()
        saved_at = await self._saves().save(self.user_id, self.channel, self.conversation_id, entries)
        return {"user_id": self.user_id, "channel": self.channel, "conversation_id": self.conversation_id,
                "saved_at": saved_at, "keys": [e["suffix"] for e in entries]}

    async def load(self) -> dict[str, Any] | None:
        """Restore this session's working memory from its last :meth:`persist` (seed 002's ``load_from_database``),
        replacing what Redis holds for it: every key of the session is deleted and the saved ones written back, in
        one MULTI/EXEC. Each key (and each context value) gets again the time it had left to live when saved,
        counted from now; the turn and thought lists are cut to ``working.max_turns`` / ``working.max_thoughts``.

        A saved conversation hash larger than ``working.conversation_max_bytes`` (a cap lowered since the save)
        raises :class:`~agentx_memory.errors.WorkingMemoryFullError` (413) and nothing is written. Only this user's
        save of this channel and conversation is ever read. Returns None when there is no save (Redis untouched),
        else ``{"user_id", "channel", "conversation_id", "saved_at", "restored"}`` with ``restored`` mapping each
        key restored to the number of items (list entries or hash fields; 1 for the goal)."""
        found = await self._saves().load(self.user_id, self.channel, self.conversation_id)
        if found is None:
            return None
        entries, saved_at = found
        settings = self.store.settings
        caps = {"turns": settings.max_turns, "thoughts": settings.max_thoughts}
        for entry in entries:
            suffix, kind, value = entry.get("suffix"), entry.get("type"), entry.get("value")
            if SESSION_KEYS.get(str(suffix)) != kind or not isinstance(
                    value, {"list": list, "hash": dict, "string": str}[str(kind)]):
                raise StorageError(f"the saved working memory of conversation {self.conversation_id!r} holds an "
                                   f"entry that is not a session key: {suffix!r} ({kind!r})")
            if suffix == "memory" and (size := capped_hash.size_of(value)) > settings.conversation_max_bytes:
                raise WorkingMemoryFullError("memory", conversation_id=self.conversation_id, size=size,
                                             cap=settings.conversation_max_bytes)
        restored: dict[str, int] = {}
        async with self.store.client.pipeline(transaction=True) as pipe:
            pipe.delete(*[self._key(s) for s in SESSION_KEYS])
            for entry in entries:
                suffix, value = entry["suffix"], entry["value"]
                key = self._key(suffix)
                if entry["type"] == "list":
                    value = value[:caps[suffix]]  # newest first, as stored
                    if not value:
                        continue
                    pipe.rpush(key, *value)
                elif entry["type"] == "hash":
                    if not value:
                        continue
                    restore_hash(pipe, key, value, entry.get("field_ttl_ms"))
                else:
                    pipe.set(key, value)
                default = self._conversation_ttl if suffix in ("memory", "ledger") else self._ttl
                pipe.pexpire(key, int(entry.get("ttl_ms") or default * 1000))
                restored[suffix] = len(value) if entry["type"] != "string" else 1
            await self.store._call(pipe.execute())
        return {"user_id": self.user_id, "channel": self.channel, "conversation_id": self.conversation_id,
                "saved_at": saved_at, "restored": restored}

    async def persist_to_database(self) -> dict[str, Any]:
        """Seed 002's name for :meth:`persist`."""
        return await self.persist()

    async def load_from_database(self) -> dict[str, Any] | None:
        """Seed 002's name for :meth:`load`."""
        return await self.load()

    # --- spec 000: the conversation's working memory, one hash capped as a whole -----------------------------

    @property
    def _conversation_ttl(self) -> int:
        return self.store.settings.conversation_ttl_seconds

    async def set_fields(self, data: Mapping[str, Any]) -> int:
        """Merge ``data`` (field → any JSON value) into the conversation's working memory, all fields or none;
        return its size in bytes after the write. Field names follow the id rule; existing fields not in ``data``
        stay. A write that would take the hash past ``working.conversation_max_bytes`` (64 KB; field names and
        stored JSON, UTF-8) raises :class:`~agentx_memory.errors.WorkingMemoryFullError` (413) and stores nothing.
        The expiry (``working.conversation_ttl_seconds``) is refreshed."""
        if not isinstance(data, Mapping):
            raise ValidationError("data", f"must be a mapping of field names to values, got {type(data).__name__}")
        cap = self.store.settings.conversation_max_bytes
        fields = {}
        for name, value in data.items():
            check_id(name, "data", max_len=_KEY_MAX)
            fields[name] = _dump(value, sys.maxsize, f"data.{name}")
        if not fields:
            return await self._memory_size()
        started = time.perf_counter()
        size = await self._merge_capped("memory", fields, cap=cap, field="data")
        await self._wrote("set_fields", list(fields), started, payload=dict(data), metadata={"size": size})
        return size

    async def get_fields(self) -> dict[str, Any]:
        """Every field of the conversation's working memory (empty when none), refreshing its expiry."""
        started = time.perf_counter()
        fields = await self._fields()
        await self._read("get_fields", "*", len(fields), started, payload=fields)
        return fields

    async def _fields(self) -> dict[str, Any]:
        raw = await self.store._call(capped_hash.read(self.store.client, self._key("memory"),
                                                      ttl_seconds=self._conversation_ttl))
        return {name: _load(text) for name, text in raw.items()}

    async def get_field(self, name: str) -> Any:
        """One field of the conversation's working memory, or None; refreshes its expiry."""
        check_id(name, "name", max_len=_KEY_MAX)
        started = time.perf_counter()
        value = _load(await self.store._call(capped_hash.read_field(
            self.store.client, self._key("memory"), name, ttl_seconds=self._conversation_ttl)))
        await self._read("get_field", name, int(value is not None), started, payload=value)
        return value

    async def delete_fields(self, names: Sequence[str] | None = None) -> int:
        """Delete these fields of the conversation's working memory, or all of it when ``names`` is None; return how
        many fields (or, for all of it, hashes) went."""
        if names is not None:
            if isinstance(names, str):
                raise ValidationError("names", "must be a list of field names, not one string")
            for name in names:
                check_id(name, "names", max_len=_KEY_MAX)
        started = time.perf_counter()
        deleted = await self.store._call(capped_hash.delete_fields(
            self.store.client, self._key("memory"), list(names) if names is not None else None,
            ttl_seconds=self._conversation_ttl))
        await self._wrote("delete_fields", list(names) if names is not None else ["*"], started,
                          metadata={"deleted": deleted})
        return int(deleted)

    async def memory_size(self) -> int:
        """The size in bytes of the conversation's working memory, as the cap counts it."""
        started = time.perf_counter()
        size = await self._memory_size()
        await self._read("memory_size", "*", 1, started)
        return size

    async def _memory_size(self) -> int:
        raw = await self.store._call(capped_hash.read(self.store.client, self._key("memory"),
                                                      ttl_seconds=self._conversation_ttl))
        return capped_hash.size_of(raw)

    async def set_scratchpad(self, content: str) -> int:
        """Set the ``scratchpad`` field: free-form notes and intermediate results (spec 000)."""
        if not isinstance(content, str):
            raise ValidationError("content", f"must be a string, got {type(content).__name__}")
        return await self.set_fields({"scratchpad": content})

    async def get_scratchpad(self) -> str | None:
        """The ``scratchpad`` field, or None."""
        value = await self.get_field("scratchpad")
        return value if isinstance(value, str) else None

    async def set_entities(self, entities: Sequence[Mapping[str, Any]]) -> int:
        """Set the ``entities`` field: the entities of the conversation (``type``, ``id``, ``name`` each; spec 000)."""
        if isinstance(entities, (str, bytes)) or not all(isinstance(e, Mapping) for e in entities):
            raise ValidationError("entities", "must be a list of mappings (type, id, name)")
        return await self.set_fields({"entities": [dict(e) for e in entities]})

    async def get_entities(self) -> list[dict[str, Any]]:
        """The ``entities`` field (empty when unset)."""
        value = await self.get_field("entities")
        return list(value) if isinstance(value, list) else []

    # --- spec 000: the injection ledger ------------------------------------------------------------------------

    async def ledger_has(self, item_key: str) -> bool:
        """Whether ``item_key`` (e.g. ``fact:<id>``, ``skill:<id>``) was injected in this conversation."""
        check_id(item_key, "item_key", max_len=_KEY_MAX)
        started = time.perf_counter()
        found = await self.store._call(capped_hash.read_field(
            self.store.client, self._key("ledger"), item_key, ttl_seconds=self._conversation_ttl)) is not None
        await self._read("ledger_has", item_key, int(found), started)
        return bool(found)

    async def ledger_mark(self, item_key: str, value: str = "1") -> None:
        """Record that ``item_key`` was injected (``value``: a marker such as ``"injected"``)."""
        await self.ledger_mark_many([item_key], value)

    async def ledger_mark_many(self, item_keys: Sequence[str], value: str = "1") -> None:
        """Record that each of ``item_keys`` was injected, in one write."""
        started = time.perf_counter()
        if await self._mark(item_keys, value):
            await self._wrote("ledger_mark", list(item_keys), started, metadata={"value": value})

    async def _mark(self, item_keys: Sequence[str], value: str) -> bool:
        """Mark the items (after checking them, before writing anything); False when there were none. A mark that
        would take the ledger past ``working.ledger_max_bytes`` raises
        :class:`~agentx_memory.errors.WorkingMemoryFullError` (413) and marks nothing."""
        if isinstance(item_keys, str):
            raise ValidationError("item_keys", "must be a list of item keys, not one string")
        for item_key in item_keys:
            check_id(item_key, "item_key", max_len=_KEY_MAX)
        if not isinstance(value, str) or len(value.encode()) > _KEY_MAX:
            raise ValidationError("value", f"must be a string of at most {_KEY_MAX} bytes")
        if not item_keys:
            return False
        await self._merge_capped("ledger", dict.fromkeys(item_keys, value), cap=self.store.settings.ledger_max_bytes,
                                 field="item_keys")
        return True

    async def _merge_capped(self, suffix: str, fields: dict[str, str], *, cap: int, field: str) -> int:
        """Merge ``fields`` into the conversation's hash ``suffix`` unless it would pass ``cap`` bytes
        (:mod:`~agentx_memory.capped_hash`): all or nothing, the expiry refreshed; return its size after.
        :class:`~agentx_memory.errors.WorkingMemoryFullError` naming ``field`` otherwise."""
        if (incoming := capped_hash.size_of(fields)) > cap:  # too big whatever is stored: no round trip
            raise WorkingMemoryFullError(field, conversation_id=self.conversation_id, size=incoming, cap=cap)
        written, size = await self.store._call(capped_hash.merge(
            self.store.client, self._key(suffix), fields, cap=cap, ttl_seconds=self._conversation_ttl))
        if not written:
            raise WorkingMemoryFullError(field, conversation_id=self.conversation_id, size=size, cap=cap)
        return int(size)

    async def ledger_evict(self, item_key: str) -> bool:
        """Forget that ``item_key`` was injected (it may be injected again); True if it was in the ledger."""
        check_id(item_key, "item_key", max_len=_KEY_MAX)
        started = time.perf_counter()
        evicted = bool(await self.store._call(capped_hash.delete_fields(
            self.store.client, self._key("ledger"), [item_key], ttl_seconds=self._conversation_ttl)))
        await self._wrote("ledger_evict", [item_key] if evicted else [], started, metadata={"item_key": item_key})
        return evicted

    async def ledger_get(self) -> dict[str, str]:
        """Everything injected in this conversation: item key → marker; refreshes the ledger's expiry."""
        started = time.perf_counter()
        ledger = await self._ledger()
        await self._read("ledger_get", "*", len(ledger), started, payload=ledger)
        return ledger

    async def _ledger(self) -> dict[str, str]:
        return dict(await self.store._call(capped_hash.read(self.store.client, self._key("ledger"),
                                                            ttl_seconds=self._conversation_ttl)))

    async def working_state(self) -> WorkingState:
        """The conversation's scratchpad and entities (spec 000's hash fields, in one read that refreshes its
        expiry), as :meth:`MemoryBundle.to_prompt` shows them (``to_prompt(working=...)``). A field holding another
        type than the helpers write (a scratchpad that is not text, entities that are not a list of mappings) is
        left out."""
        started = time.perf_counter()
        state = await self._working_state()
        await self._read("working_state", "scratchpad, entities", len(state.entities) + (state.scratchpad is not None),
                         started, payload=state)
        return state

    async def _working_state(self) -> WorkingState:
        fields = await self._fields()
        scratchpad = fields.get("scratchpad")
        entities = fields.get("entities")
        return WorkingState(
            scratchpad=scratchpad if isinstance(scratchpad, str) else None,
            entities=[dict(e) for e in entities if isinstance(e, Mapping)] if isinstance(entities, list) else [])

    async def inject(self, bundle: MemoryBundle, max_tokens: int = 1500, *, include_working: bool = True) -> str:
        """The prompt block of ``bundle`` (:meth:`MemoryBundle.to_prompt`) without what this conversation's ledger
        says was injected already, and the items it shows marked as injected: across the turns of a conversation,
        no memory is put in the prompt twice. Empty when everything was injected before.

        With ``include_working`` (the default) the block also holds this conversation's working-memory state
        (:meth:`working_state`: scratchpad and entities, seed 000's context assembly), right after the rules; like a
        memory it is shown once, and again when it changes."""
        started = time.perf_counter()
        working = await self._working_state() if include_working else None
        text, shown = bundle.prompt_block(max_tokens, skip=set(await self._ledger()), working=working)
        await self._mark(shown, "injected")
        await self._wrote("inject", shown, started, payload=text,
                          metadata={"query": bundle.query, "include_working": include_working})
        return text

"""What a network service in front of the engine asks of it besides memory: each store's health, per-caller rate
limits and a user's audit trail (issue 18's REST service uses these through the facade).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, Final

from .context import MemoryContext
from .errors import AgentXMemoryError, RateLimitedError
from .graph.cypher import PING
from .sql.audit_log import AuditLog
from .validation import check_datetime, check_id, check_int

__all__ = ["STORES", "audit_entries", "hit_rate_limit", "store_health"]

#: The stores :func:`store_health` reports, in order.
STORES: Final = ("graph", "postgres", "redis")


async def _probe(check: Callable[[], Awaitable[Any]], timeout: float) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        await asyncio.wait_for(check(), timeout)
    except TimeoutError:
        return {"status": "down", "latency_ms": round((time.perf_counter() - started) * 1000, 3),
                "error": f"no answer within {timeout:g} s"}
    except (AgentXMemoryError, OSError) as exc:
        return {"status": "down", "latency_ms": round((time.perf_counter() - started) * 1000, 3),
                "error": type(exc).__name__}
    except Exception as exc:  # a driver error the adapters did not wrap: still "down", never a crash of the probe
        return {"status": "down", "latency_ms": round((time.perf_counter() - started) * 1000, 3),
                "error": type(exc).__name__}
    return {"status": "up", "latency_ms": round((time.perf_counter() - started) * 1000, 3)}


async def store_health(ctx: MemoryContext, *, timeout: float = 2.0) -> dict[str, dict[str, Any]]:
    """Ask each store for the cheapest answer it can give, concurrently: ``{store: {"status": "up" | "down",
    "latency_ms": float, "error": <error class name, when down>}}`` for graph, postgres and redis. The error names
    only the class: a probe's message may hold a host name or a path."""
    checks: dict[str, Callable[[], Awaitable[Any]]] = {
        "graph": lambda: ctx.graph.read(PING),
        "postgres": ctx.postgres.schema_version,
        "redis": ctx.working.client.ping,
    }
    results = await asyncio.gather(*(_probe(checks[name], timeout) for name in STORES))
    return dict(zip(STORES, results, strict=True))


async def hit_rate_limit(ctx: MemoryContext, operation: str, *, user_id: str, caller: str, agent_id: str | None,
                         limit: int, window_seconds: float) -> None:
    """Count one call of ``operation`` by ``caller`` (an API key id, say) of the user against ``limit`` calls per
    sliding window of ``window_seconds`` (Redis, shared by every process); past it raise
    :class:`~agentx_memory.errors.RateLimitedError` with ``retry_after``. A refused call is not counted."""
    user = check_id(user_id, "user_id")
    wait = await ctx.working.hit_rate(check_id(operation, "operation"), user, check_id(caller, "caller"),
                                      limit=check_int(limit, "limit", low=1, high=1_000_000),
                                      window_seconds=window_seconds)
    if wait > 0:
        raise RateLimitedError(operation, user_id=user, agent_id=agent_id, limit=limit,
                               window_seconds=window_seconds, retry_after=wait)


async def audit_entries(ctx: MemoryContext, user_id: str, *, since: datetime | None = None,
                        until: datetime | None = None, operation: str | None = None, memory_type: str | None = None,
                        session_id: str | None = None, conversation_id: str | None = None,
                        reads: bool | None = None, limit: int = 100) -> list[dict[str, Any]]:
    """The user's audit entries (docs/audit-queries.md), newest first, filtered as asked."""
    return await AuditLog(ctx.postgres).user_entries(
        check_id(user_id, "user_id"),
        since=None if since is None else check_datetime(since, "since"),
        until=None if until is None else check_datetime(until, "until"),
        operation=None if operation is None else check_id(operation, "operation"),
        memory_type=None if memory_type is None else check_id(memory_type, "memory_type"),
        session_id=None if session_id is None else check_id(session_id, "session_id", max_len=200),
        conversation_id=None if conversation_id is None else check_id(conversation_id, "conversation_id",
                                                                      max_len=200),
        reads=reads, limit=check_int(limit, "limit", low=1, high=10_000))

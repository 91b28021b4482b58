"""Tracing a memory: its class swapped, once, for a subclass whose public coroutines are traced.

:func:`instrument` is what ``AsyncAgentMemory.__init__`` calls when ``observability.enabled`` is set. The traced
subclass is made once per class, from every public coroutine the class has at that moment, so an operation added to
the facade later is traced without a change here. Views made by ``for_agent`` are copies and keep the class. The
working memory a traced memory hands out (``working()``, and through it ``tiers()``) is traced the same way, and
counts its reads as hits (something found) or misses (``agentx_memory.working.hits`` / ``.misses``). With the
setting off nothing here runs: the memory keeps its own class and pays nothing.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

from ..router import MemoryRouter
from ..working import WorkingMemory
from . import gauges, telemetry
from .hooks import AFTER
from .spans import After, Describe, call_describer, instance_describer, traced

__all__ = ["instrument", "is_instrumented", "traced_operations"]

C = TypeVar("C", bound=type)

#: Public coroutines not traced: ``open`` runs before there is a memory to trace.
UNTRACED = frozenset({"open"})

#: Reads of the working memory that are not lookups (always "found"): left out of the hit rate.
NOT_LOOKUPS = frozenset({"memory_size"})

_lock = threading.Lock()
_traced_classes: dict[tuple[type, str], type] = {}


def traced_operations(cls: type) -> list[str]:
    """The public coroutine methods of ``cls`` that tracing wraps (classmethods and :data:`UNTRACED` left out)."""
    return sorted(name for name, member in inspect.getmembers(cls)
                  if not name.startswith("_") and name not in UNTRACED and inspect.iscoroutinefunction(member)
                  and not isinstance(inspect.getattr_static(cls, name), (classmethod, staticmethod)))


def _traced_class(cls: C, prefix: str, describer: Callable[[Callable[..., Any]], Describe], *,
                  after: Mapping[str, After] | None = None,
                  extra: Callable[[Any, dict[str, Any]], dict[str, Any]] | None = None) -> C:
    """``cls``'s traced subclass (made on first use, then reused): each public coroutine traced as
    ``<prefix><name>``, with the attributes ``describer`` reads and the hook ``after`` has for it; ``extra`` adds
    methods of its own (given the class and the traced methods)."""
    key = (cls, prefix)
    with _lock:
        made = _traced_classes.get(key)
        if made is None:
            namespace: dict[str, Any] = {
                name: traced(prefix + name, getattr(cls, name), describer(getattr(cls, name)),
                             (after or {}).get(name))
                for name in traced_operations(cls)}
            namespace.update(extra(cls, namespace) if extra is not None else {})
            namespace.update(__module__=cls.__module__, __qualname__=cls.__qualname__, __doc__=cls.__doc__,
                             __agentx_traced__=True)
            made = _traced_classes[key] = type(cls.__name__, (cls,), namespace)
    return made  # type: ignore[return-value]


def _memory_extras(cls: Any, traced_methods: dict[str, Any]) -> dict[str, Any]:
    """The memory's methods that hand out a session's working memory or tier router (traced ones), and its close,
    which first stops a refresh of its gauges that may be under way."""
    traced_close = traced_methods["close"]

    async def stop_then(self: Any, closing: Coroutine[Any, Any, None]) -> None:
        source = gauges.source_for(self)
        if source is not None and source.owned_by(self):
            await source.stop()
        await closing

    def close(self: Any) -> Coroutine[Any, Any, None]:
        return stop_then(self, traced_close(self))  # the traced close reads the caller's span now (see traced)

    def working(self: Any, *args: Any, **kwargs: Any) -> WorkingMemory:
        session = cls.working(self, *args, **kwargs)
        session.__class__ = _traced_working(type(session))
        return session

    def tiers(self: Any, *args: Any, **kwargs: Any) -> MemoryRouter:
        router = cls.tiers(self, *args, **kwargs)
        router.__class__ = _traced_class(type(router), "tiers.", lambda _: _ROUTER_FIELDS)
        return router

    working.__doc__, tiers.__doc__, close.__doc__ = cls.working.__doc__, cls.tiers.__doc__, cls.close.__doc__
    close.__agentx_span__ = traced_close.__agentx_span__  # type: ignore[attr-defined]
    return {"working": working, "tiers": tiers, "close": close}


_WORKING_FIELDS = instance_describer({"user_id": "user_id", "agent_id": "agent_id", "channel": "channel",
                                      "conversation_id": "conversation_id"})
_ROUTER_FIELDS = instance_describer({"user_id": "user_id", "agent_id": "agent_id", "session_id": "session_id"})


def _working_extras(cls: Any, traced_methods: dict[str, Any]) -> dict[str, Any]:
    """The working memory's read hook, counting each read as a hit or a miss before auditing it."""
    async def _read(self: Any, operation: str, what: str, count: int, started: float, *, payload: Any = None
                    ) -> None:
        if operation not in NOT_LOOKUPS:
            tel = telemetry.current()
            (tel.working_hits if count > 0 else tel.working_misses).add(1, {"operation": operation})
        await cls._read(self, operation, what, count, started, payload=payload)

    return {"_read": _read}


def _traced_working(cls: type) -> type:
    return _traced_class(cls, "working.", lambda _: _WORKING_FIELDS, extra=_working_extras)


def instrument(memory: Any) -> None:
    """Trace ``memory`` (an :class:`~agentx_memory.memory.AsyncAgentMemory`): spans for its public operations and
    its working memory's, metrics, and gauges of its store (see the package docstring)."""
    telemetry.current()  # the instruments made now, not on the first call
    if not is_instrumented(memory):
        memory.__class__ = _traced_class(type(memory), "", call_describer, after=AFTER, extra=_memory_extras)
    gauges.register(memory)


def is_instrumented(obj: Any) -> bool:
    """True when ``obj``'s class is a traced subclass."""
    return bool(getattr(type(obj), "__agentx_traced__", False))

"""The wrapper that traces one operation: a span with who called and what came back, and its duration recorded.

A traced operation opens a span named ``agentx_memory.<operation>`` (``agentx_memory.working.<operation>`` and
``agentx_memory.tiers.<operation>`` for a session's working memory and tier router) as a child of the caller's
current span, with these attributes when they apply:

``agentx_memory.user_id`` / ``agent_id`` / ``channel`` / ``channels`` / ``conversation_id``  who and where: from the
    call's arguments (by parameter name), else from the memory (its default user, the agent it acts as) or from the
    model written (a turn's user and channel)
``agentx_memory.result.count``  items returned (a list's length, 1 for one model, 0 for ``None``)
``agentx_memory.job.<figure>``  a maintenance run's figures (``report.counts()``)
``error.type``, ``agentx_memory.error.field``  the class of the error raised (ours: ``ValidationError``,
    ``NotFoundError`` ...) and, for a validation error, the field it names; the span's status is then ERROR and the
    exception is recorded as a span event

Every call also records its duration in ``agentx_memory.operation.duration`` (attributes ``operation`` and, on
failure, ``error.type``); :mod:`.hooks` adds what some operations tell beyond that (recall timings, decay counts).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from opentelemetry.context import Context, get_current
from opentelemetry.trace import Span, Status, StatusCode
from pydantic import BaseModel

from ..errors import ValidationError
from ..runs import JobReport
from . import telemetry
from .telemetry import Telemetry

__all__ = ["After", "Describe", "call_describer", "instance_describer", "result_attributes", "traced"]

#: Attributes of a call from its memory (or session) and its arguments.
Describe = Callable[[Any, tuple[Any, ...], dict[str, Any]], dict[str, Any]]
#: What an operation adds after it returned: (telemetry, memory, span, result, seconds).
After = Callable[[Telemetry, Any, Span, Any, float], None]

log = logging.getLogger(__name__)

_PREFIX = "agentx_memory."
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def traced(operation: str, method: Callable[..., Any], describe: Describe, after: After | None = None
           ) -> Callable[..., Any]:
    """``method`` (a coroutine function taking the memory first) traced as ``agentx_memory.<operation>``.

    The traced method is a plain function returning the coroutine, so that it reads the caller's current span when
    it is *called*: the sync ``AgentMemory`` calls it in the caller's thread and awaits the coroutine on its own
    event loop, whose context would otherwise lose the caller's span (the parent of ours)."""
    span_name = _PREFIX + operation

    async def run(self: Any, args: tuple[Any, ...], kwargs: dict[str, Any], parent: Context) -> Any:
        tel = telemetry.current()
        started = time.perf_counter()
        with tel.tracer.start_as_current_span(span_name, context=parent, attributes=describe(self, args, kwargs),
                                              record_exception=False, set_status_on_exception=False) as span:
            try:
                result = await method(self, *args, **kwargs)
            except BaseException as exc:
                _failed(tel, span, operation, exc, time.perf_counter() - started)
                raise
            elapsed = time.perf_counter() - started
            try:  # what is recorded about a result never turns a call that succeeded into a failure
                if span.is_recording():
                    span.set_attributes(result_attributes(result))
                if after is not None:
                    after(tel, self, span, result, elapsed)
                tel.operation_duration.record(elapsed, {"operation": operation})
            except Exception:
                log.exception("observability: recording the result of %s failed", span_name)
            return result

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Coroutine[Any, Any, Any]:
        return run(self, args, kwargs, get_current())

    call.__agentx_span__ = span_name  # type: ignore[attr-defined]
    mark = getattr(inspect, "markcoroutinefunction", None)  # Python 3.12+: inspect then calls it a coroutine function
    return mark(call) if mark is not None else call


def _failed(tel: Telemetry, span: Span, operation: str, exc: BaseException, elapsed: float) -> None:
    error = type(exc).__name__
    span.set_attribute("error.type", error)
    if isinstance(exc, ValidationError):
        span.set_attribute(_PREFIX + "error.field", exc.field)
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, f"{error}: {exc}"))
    tel.operation_duration.record(elapsed, {"operation": operation, "error.type": error})


def result_attributes(result: Any) -> dict[str, Any]:
    """``agentx_memory.result.count`` and a maintenance run's figures for what an operation returned."""
    if result is None:
        return {_PREFIX + "result.count": 0}
    if isinstance(result, JobReport):
        figures = {_PREFIX + "job." + name: value for name, value in result.counts().items()
                   if isinstance(value, (int, float)) and not isinstance(value, bool)}
        return {**figures, _PREFIX + "job.dry_run": result.dry_run}
    if isinstance(result, (list, tuple)):
        return {_PREFIX + "result.count": len(result)}
    if isinstance(result, BaseModel) or dataclasses.is_dataclass(result):
        return {_PREFIX + "result.count": 1}
    return {}


#: The arguments a span reports, by parameter name.
_DESCRIBED = ("user_id", "agent_id", "channel", "channels", "conversation_id")


def call_describer(method: Callable[..., Any]) -> Describe:
    """Attributes of a call of an :class:`~agentx_memory.memory.AsyncAgentMemory` method, read from its arguments
    by parameter name (where each one sits is worked out once, here, not at each call)."""
    params = list(inspect.signature(method).parameters.values())[1:]  # self
    first = params[0].name if params else None
    # name -> (position when it can be passed positionally, default)
    specs: dict[str, tuple[int | None, Any]] = {
        p.name: (i if p.kind in _POSITIONAL else None, None if p.default is inspect.Parameter.empty else p.default)
        for i, p in enumerate(params) if p.name in _DESCRIBED}

    def argument(args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> Any:
        spec = specs.get(name)
        if spec is None:
            return None
        if name in kwargs:
            return kwargs[name]
        position, default = spec
        return args[position] if position is not None and position < len(args) else default

    def describe(memory: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        model = args[0] if args else kwargs.get(first) if first else None
        if not isinstance(model, BaseModel):
            model = None
        values = {name: argument(args, kwargs, name) for name in ("user_id", "agent_id", "channel", "conversation_id")}
        if values["user_id"] is None:
            values["user_id"] = getattr(model, "user_id", None) or memory.default_user_id
        if values["agent_id"] is None:
            values["agent_id"] = getattr(model, "agent_id", None) or memory.agent_id
        for name in ("channel", "conversation_id"):
            if values[name] is None and model is not None:
                values[name] = getattr(model, name, None)
        attrs: dict[str, Any] = {_PREFIX + name: value for name, value in values.items() if isinstance(value, str)}
        channels = argument(args, kwargs, "channels")
        if isinstance(channels, str):
            attrs[_PREFIX + "channels"] = [channels]
        elif isinstance(channels, (list, tuple)) and all(isinstance(c, str) for c in channels):
            attrs[_PREFIX + "channels"] = list(channels)
        return attrs

    return describe


def instance_describer(fields: Mapping[str, str]) -> Describe:
    """Attributes of a call read from the instance (a session's working memory, a tier router): attribute name →
    instance attribute, e.g. ``{"user_id": "user_id", "channel": "channel"}``."""
    items = tuple(fields.items())

    def describe(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        return {_PREFIX + key: value for key, attr in items if isinstance(value := getattr(instance, attr, None), str)}

    return describe

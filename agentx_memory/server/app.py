"""The application factory: :func:`create_app`.

The app serves the ``/v1`` API, ``/health`` and ``/ready``, the memory explorer page at ``/explorer/`` (who may
open it: :mod:`agentx_memory.server.explorer_access`) and, when ``observability.enabled``, the Prometheus
``/metrics`` of :func:`agentx_memory.observability.metrics_app`. More can be added: ``extra_routers`` (FastAPI
routers, included after the API's own; their routes share the app's error handling and its memory through
:func:`agentx_memory.server.auth.memory_of`) and ``mounts`` (path → any ASGI app; a ``/metrics`` given here replaces
the default one). Both are also plain FastAPI: ``app.include_router(...)`` and ``app.mount(...)`` work on the
returned app too.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from ..errors import ConfigurationError

try:
    from fastapi import APIRouter, FastAPI
    from fastapi.openapi.utils import get_openapi
    from fastapi.responses import JSONResponse
    from starlette.types import ASGIApp, Message, Receive, Scope, Send
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ConfigurationError('the REST service needs the [server] extra: pip install "agentx-memory[server]"') from exc

from ..explorer import explorer_router
from ..memory import AsyncAgentMemory
from ..settings import Settings, load_settings
from .explorer_access import explorer_memory
from .problems import PROBLEM_MEDIA_TYPE, install_problem_handlers, problem
from .routers import all_routers, health

__all__ = ["MemoryJSONResponse", "create_app"]

API_VERSION = "1"


def _plain(value: Any) -> Any:
    """``value`` without vectors (``embedding`` keys) and with NaN/infinite floats as null (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "embedding"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class MemoryJSONResponse(JSONResponse):
    """The API's JSON: no vectors, and no NaN (a stored zero vector gives a NaN cosine)."""

    def render(self, content: Any) -> bytes:
        """Encode ``content`` as JSON without vectors or non-finite numbers."""
        return super().render(_plain(content))


class _BodyLimit:
    """Refuse a request whose body passes ``limit`` bytes with 413, before the route reads it whole."""

    def __init__(self, app: ASGIApp, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or ()).get(b"content-length")
        if length is not None:  # the server holds the body to its declared length
            if length.isdigit() and int(length) > self.limit:
                await self._refuse(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        # A streamed (chunked) body: read it here, up to the limit, so that one past it is refused with 413 before
        # the route sees it (an error raised while the route reads it would reach the client as FastAPI's 400).
        received: list[Message] = []
        seen, more = 0, True
        while more:
            message = await receive()
            received.append(message)
            if message["type"] != "http.request":
                break
            seen += len(message.get("body", b""))
            if seen > self.limit:
                await self._refuse(scope, receive, send)
                return
            more = bool(message.get("more_body", False))

        async def replayed() -> Message:
            return received.pop(0) if received else await receive()

        await self.app(scope, replayed, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = problem(413, "ValidationError", f"the request body passes server.max_request_bytes "
                                                   f"({self.limit:,} bytes)", field="body")
        await response(scope, receive, send)


def _problem_media_types(schema: dict[str, Any]) -> dict[str, Any]:
    """Document error responses as ``application/problem+json`` (FastAPI writes every model as application/json)."""
    for path in schema.get("paths", {}).values():
        for operation in path.values():
            for status, response in operation.get("responses", {}).items():
                content = response.get("content")
                plain = (content or {}).get("application/json")
                if status[:1] in "45" and plain is not None and plain.get("schema", {}).get("$ref", "").endswith(
                        "/Problem"):
                    content[PROBLEM_MEDIA_TYPE] = content.pop("application/json")
    return schema


def create_app(settings: Settings | None = None, *, memory: AsyncAgentMemory | None = None,
               extra_routers: Sequence[APIRouter] = (), mounts: Mapping[str, ASGIApp] | None = None) -> FastAPI:
    """The REST service as a FastAPI app (docs/server.md).

    Its lifespan opens one :class:`~agentx_memory.AsyncAgentMemory` on ``settings`` (default: from the
    environment) and closes it on shutdown, after the server stopped taking requests and the ones in flight
    finished; pass ``memory`` to serve one you opened (it is then yours to close). ``extra_routers`` and ``mounts``
    are the hooks for more routes and ASGI apps (see the module docstring). OpenAPI is at ``/openapi.json``, the
    interactive docs at ``/docs``.
    """
    settings = settings or (memory.settings if memory is not None else load_settings())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        opened = memory if memory is not None else await AsyncAgentMemory.open(settings)
        app.state.memory = opened
        try:
            yield
        finally:
            if memory is None:
                await opened.close()

    app = FastAPI(
        title="agentx-memory", version=API_VERSION, lifespan=lifespan, default_response_class=MemoryJSONResponse,
        description="Graph-centric memory for AI agents over HTTP. Every /v1 route acts for the user of the API "
                    "key it is called with (Authorization: Bearer <key>); errors are application/problem+json "
                    "(RFC 9457). See docs/server.md.",
    )
    app.state.settings = settings
    install_problem_handlers(app)
    app.include_router(health.router)
    for router in all_routers():
        app.include_router(router)
    app.include_router(explorer_router(explorer_memory))
    for router in extra_routers:
        app.include_router(router)
    mounted = dict(mounts or {})
    if settings.observability.enabled and "/metrics" not in mounted:
        from ..observability import metrics_app  # the [otel] extra, imported only when observability is on

        mounted["/metrics"] = metrics_app()
    for path, asgi in mounted.items():
        app.mount(path, asgi)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _problem_media_types(get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_middleware(_BodyLimit, limit=settings.server.max_request_bytes)
    return app

"""The explorer's routes: the page, its two static files, and the read-only JSON the page reads.

Every JSON route names the user in its path and asks the application's ``memory_for(request, user_id)`` for the
memory to read that user through; what it returns is passed ``user_id`` explicitly on every call, so a route can only
ever show the user of its path. Errors of the engine become ``application/problem+json`` responses naming the field.
"""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable, Coroutine
from datetime import datetime
from importlib import resources
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field

from ..errors import AgentXMemoryError, NotFoundError, ValidationError
from ..memory import AsyncAgentMemory
from ..server.problems import memory_error_response
from .views import bundle_json, fact_record_json, model_json, page

__all__ = ["MemoryFor", "explorer_router"]

#: ``memory_for(request, user_id)``: authenticate ``request`` and return the memory to read ``user_id``'s memory
#: through (``None``: the memory to list every user with, for an administrator only); refuse by raising
#: ``fastapi.HTTPException`` (401, 403, 404 ...).
MemoryFor = Callable[[Request, str | None], Awaitable[AsyncAgentMemory]]

#: The files under ``static/`` the page loads, with their media types; nothing else is served.
_STATIC = {"explorer.css": "text/css; charset=utf-8", "explorer.js": "text/javascript; charset=utf-8"}


class _ProblemRoute(APIRoute):
    """A route whose engine errors become problem responses (the application's own handlers never see them)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handler(request)
            except AgentXMemoryError as exc:
                return memory_error_response(exc, request)

        return route


class SearchRequest(BaseModel):
    """The search box: a ``remember()`` query."""

    query: str = Field(description="what to recall")
    top_k: int = Field(10, description="how many items of each kind (1 to 50)")


def _static(name: str) -> str:
    return (resources.files(__package__) / "static" / name).read_text(encoding="utf-8")


def explorer_router(memory_for: MemoryFor, *, prefix: str = "/explorer", key_header: str = "Authorization",
                    include_in_schema: bool = False) -> APIRouter:
    """The explorer's router: the page at ``{prefix}/``, its JSON under ``{prefix}/api/``. Mount it with
    ``app.include_router(explorer_router(memory_for))``.

    ``memory_for`` authenticates each request (see :data:`MemoryFor`). ``key_header`` is the header the page sends
    an API key in once the reader typed one (after a 401): ``Authorization`` gets ``Bearer <key>``, any other header
    the key itself. ``include_in_schema`` puts the JSON routes in the application's OpenAPI document.
    """
    router = APIRouter(prefix=prefix.rstrip("/"), route_class=_ProblemRoute, tags=["explorer"],
                       include_in_schema=include_in_schema)

    @router.get("/", response_class=HTMLResponse, name="explorer_page", include_in_schema=False)
    async def explorer_page(request: Request) -> HTMLResponse:
        base = request.scope.get("root_path", "") + prefix.rstrip("/") + "/"
        text = (_static("index.html").replace("{{BASE}}", html.escape(base, quote=True))
                .replace("{{KEY_HEADER}}", html.escape(key_header, quote=True)))
        return HTMLResponse(text, headers={
            "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
            "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                                       "script-src 'self'; connect-src 'self'; frame-ancestors 'none'"})

    @router.get("/static/{name}", include_in_schema=False)
    async def explorer_static(name: str) -> Response:
        if name not in _STATIC:
            raise NotFoundError("file", name)
        return Response(_static(name), media_type=_STATIC[name],
                        headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"})

    @router.get("/api/users")
    async def users(request: Request, after: str | None = None, limit: int = 100) -> dict[str, Any]:
        """Users that have memory, in order, after ``after``."""
        memory = await memory_for(request, None)
        found = await memory.list_users(after=after, limit=limit)
        return {"items": found, "next_after": found[-1] if len(found) == limit else None}

    @router.get("/api/users/{user_id}")
    async def overview(request: Request, user_id: str) -> dict[str, Any]:
        """How much memory the user has, and their profile."""
        memory = await memory_for(request, user_id)
        counts = await memory.memory_overview(user_id)
        profile = await memory.get_profile(user_id)
        return {"user_id": user_id, "counts": counts, "profile": model_json(profile)}

    @router.get("/api/users/{user_id}/access")
    async def access(request: Request, user_id: str) -> dict[str, Any]:
        """What this reader may open of the user's pages: everything, except that an agent's view does not read the
        audit trail (it holds every agent's queries and results), so the page leaves that section out."""
        memory = await memory_for(request, user_id)
        return {"user_id": user_id, "audit_trail": memory.agent_id is None}

    @router.get("/api/users/{user_id}/conversations")
    async def conversations(request: Request, user_id: str, limit: int = 20, offset: int = 0) -> dict[str, Any]:
        """The user's conversations, the latest first."""
        memory = await memory_for(request, user_id)
        found = await memory.list_conversations(user_id, limit=limit, offset=offset)
        return page([model_json(c) for c in found], limit=limit, offset=offset)

    @router.get("/api/users/{user_id}/conversations/{conversation_id}")
    async def conversation(request: Request, user_id: str, conversation_id: str, from_index: int = 0,
                           limit: int = 50) -> dict[str, Any]:
        """A page of one conversation's turns from ``from_index`` on."""
        memory = await memory_for(request, user_id)
        turns = await memory.conversation_turns(conversation_id, user_id, from_index=from_index, limit=limit)
        if not turns and from_index == 0:
            raise NotFoundError("conversation", conversation_id)
        last = turns[-1].index if turns else None
        return {"conversation_id": conversation_id, "items": [model_json(t) for t in turns],
                "next_index": last + 1 if last is not None and len(turns) == limit else None}

    @router.get("/api/users/{user_id}/turns/{turn_id}")
    async def turn(request: Request, user_id: str, turn_id: str) -> dict[str, Any]:
        """One of the user's turns."""
        memory = await memory_for(request, user_id)
        found = await memory.get_turns([turn_id], user_id)
        if not found:
            raise NotFoundError("turn", turn_id)
        return model_json(found[0])

    @router.get("/api/users/{user_id}/graph")
    async def graph(request: Request, user_id: str, limit: int = 40) -> dict[str, Any]:
        """The user's most salient entities and the relationships among them."""
        memory = await memory_for(request, user_id)
        found = await memory.entity_map(user_id, limit=limit)
        return {"nodes": [{"id": e.id, "name": e.name, "type": e.type, "salience": e.salience, "channel": e.channel}
                          for e in found.entities],
                "edges": [{"source": r.source_id, "target": r.target_id, "type": r.rel_type}
                          for r in found.relationships]}

    @router.get("/api/users/{user_id}/entities")
    async def entities(request: Request, user_id: str, limit: int = 50, offset: int = 0) -> dict[str, Any]:
        """A page of the user's entities, the most salient first."""
        memory = await memory_for(request, user_id)
        found = await memory.list_entities(user_id, limit=limit, offset=offset)
        return page([model_json(e) for e in found], limit=limit, offset=offset)

    @router.get("/api/users/{user_id}/entities/{entity_id}")
    async def entity(request: Request, user_id: str, entity_id: str) -> dict[str, Any]:
        """One entity with its neighbours, the relationships among them and the facts about them."""
        memory = await memory_for(request, user_id)
        found = await memory.get_entity(entity_id, user_id)
        around = await memory.get_entity_graph([entity_id], depth=1, user_id=user_id, limit=25)
        return {"entity": model_json(found),
                "neighbours": [model_json(e) for e in around.entities if e.id != entity_id],
                "relationships": [model_json(r) for r in around.relationships],
                "facts": [model_json(f) for f in around.facts if entity_id in f.entity_ids]}

    @router.get("/api/users/{user_id}/facts")
    async def facts(request: Request, user_id: str, status: str | None = None, limit: int = 50,
                    offset: int = 0) -> dict[str, Any]:
        """A page of the user's facts (every status, or ``status``), the newest first, with provenance."""
        memory = await memory_for(request, user_id)
        found = await memory.list_facts(user_id, status=status or None, limit=limit, offset=offset)
        return page([fact_record_json(r) for r in found], limit=limit, offset=offset)

    @router.get("/api/users/{user_id}/facts/{fact_id}")
    async def fact(request: Request, user_id: str, fact_id: str) -> dict[str, Any]:
        """One fact with its source turns, the fact that superseded it and those it superseded."""
        memory = await memory_for(request, user_id)
        record = await memory.fact_record(fact_id, user_id)
        sources = await memory.get_turns(record.source_turn_ids[:50], user_id)
        linked = [record.fact.superseded_by] if record.fact.superseded_by else []
        others = {}
        for other_id in [*linked, *record.supersedes[:50]]:
            try:
                others[other_id] = fact_record_json(await memory.fact_record(other_id, user_id))
            except NotFoundError:  # forgotten since, or another agent's private fact
                continue
        return {"fact": fact_record_json(record), "source_turns": [model_json(t) for t in sources],
                "superseded_by": others.get(record.fact.superseded_by or ""),
                "supersedes": [others[x] for x in record.supersedes if x in others]}

    @router.get("/api/users/{user_id}/goals")
    async def goals(request: Request, user_id: str, limit: int = 500) -> dict[str, Any]:
        """The user's goals in every channel (``parent_id`` and ``blocked_by`` make the tree)."""
        memory = await memory_for(request, user_id)
        return {"items": [model_json(g) for g in await memory.goal_tree(user_id, limit=limit)]}

    @router.get("/api/users/{user_id}/tools")
    async def tools(request: Request, user_id: str) -> dict[str, Any]:
        """Per-tool usage, success rate and latency."""
        memory = await memory_for(request, user_id)
        rows = await memory.get_tool_stats(user_id=user_id)
        return {"items": [{k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}
                          for row in rows]}

    @router.get("/api/users/{user_id}/audit")
    async def audit(request: Request, user_id: str, operation: str | None = None, before: datetime | None = None,
                    before_id: int | None = None, limit: int = 50) -> dict[str, Any]:
        """The user's audit trail, newest first; ``before`` / ``before_id`` page back from the previous page."""
        memory = await memory_for(request, user_id)
        rows = await memory.audit_trail(user_id, operation=operation or None, before=before, before_id=before_id,
                                        limit=limit)
        items = [{k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()} for row in rows]
        last = rows[-1] if len(rows) == limit else None
        return {"items": items,
                "next": {"before": last["timestamp"].isoformat(), "before_id": last["id"]} if last else None}

    @router.get("/api/users/{user_id}/audit-operations")
    async def audit_operations(request: Request, user_id: str, days: int = 30) -> dict[str, Any]:
        """The operations of the user's audit entries of the last ``days`` days."""
        memory = await memory_for(request, user_id)
        return {"items": await memory.audit_operations(user_id, days=days)}

    @router.post("/api/users/{user_id}/search")
    async def search(request: Request, user_id: str, body: SearchRequest) -> dict[str, Any]:
        """``remember(query)`` for the user: every item with its score breakdown. A real recall: it counts as an
        access of what it returns and is audited, like any other."""
        memory = await memory_for(request, user_id)
        if not 1 <= body.top_k <= 50:
            raise ValidationError("top_k", f"must be between 1 and 50, got {body.top_k}")
        bundle = await memory.remember(body.query, user_id=user_id, top_k=body.top_k)
        return bundle_json(bundle)

    return router

"""The REST service's routes, one module per area (:func:`all_routers`).

Every router documents the error statuses any of its routes can answer (:data:`ERRORS`), each as
``application/problem+json`` (:mod:`agentx_memory.server.problems`).
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter

from ..problems import Problem

__all__ = ["ERRORS", "all_routers", "api_router"]

#: The error responses every ``/v1`` route documents (the app turns their media type into problem+json).
ERRORS: Final[dict[int | str, dict[str, Any]]] = {
    400: {"model": Problem, "description": "the body is not JSON"},
    401: {"model": Problem, "description": "no API key, or a malformed, unknown or revoked one"},
    403: {"model": Problem, "description": "the key does not cover this (an agent's access, a channel)"},
    404: {"model": Problem, "description": "no such memory for this user"},
    409: {"model": Problem, "description": "the write conflicts with stored state (an id in use, a stale version)"},
    413: {"model": Problem, "description": "the body or a working memory would pass its size cap"},
    422: {"model": Problem, "description": "bad input: `field` names it"},
    429: {"model": Problem, "description": "the key passed its rate limit: see Retry-After"},
    500: {"model": Problem, "description": "the server failed (nothing internal is shown)"},
    503: {"model": Problem, "description": "a store is unavailable: retry later"},
}


def api_router(tag: str) -> APIRouter:
    """A ``/v1`` router of one area, documenting :data:`ERRORS`."""
    return APIRouter(prefix="/v1", tags=[tag], responses=ERRORS)


def all_routers() -> list[APIRouter]:
    """Every ``/v1`` router, in the order the OpenAPI document lists them (health and readiness live in
    :mod:`.health`, without a key)."""
    from . import audit, forget, goals, pools, procedural, recall, semantic, turns, working

    return [turns.router, semantic.router, goals.router, procedural.router, working.router, pools.router,
            recall.router, forget.router, audit.router]


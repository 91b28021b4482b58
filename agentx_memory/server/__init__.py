"""The REST service of agentx-memory (extra ``[server]``: ``pip install -e ".[server]"``; ``agentx-memory serve``).

A FastAPI application over the public API of :class:`~agentx_memory.AsyncAgentMemory` (docs/server.md):

``app``        :func:`create_app`: the application, its lifespan (one memory, closed on shutdown) and the hooks
               where more routers and ASGI apps (metrics, the explorer page) are mounted
``auth``       API keys → the caller (user, agent, channels) every route acts for; per-key rate limits
``problems``   errors as ``application/problem+json`` (RFC 9457), our error tree mapped to HTTP statuses
``schemas``    request and response models beyond :mod:`agentx_memory.models`
``routers``    one module per area: turns and conversations, entities/facts/relationships, goals, tools and
               strategies, working memory and the injection ledger, pools, remember, forget, audit, health
``commands``   the ``serve`` and ``keys`` subcommands of the CLI

Importing this package does not import FastAPI; :func:`create_app` does (and says which extra to install when it
is missing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    """Load :func:`create_app` on first use (it imports FastAPI)."""
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

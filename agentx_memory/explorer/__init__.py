"""The memory explorer page: a read-only look at one user's memory in a browser (extra ``[server]``).

:func:`explorer_router` returns a FastAPI router serving the page (plain HTML, CSS and JavaScript from
``agentx_memory/explorer/static``, no build step, nothing fetched from elsewhere) and the JSON it reads. The
application that mounts it supplies ``memory_for(request, user_id)``, which authenticates the request and returns the
:class:`~agentx_memory.AsyncAgentMemory` to read that user through (``user_id=None``: to list users, for an
administrator only)::

    from fastapi import FastAPI
    from agentx_memory.explorer import explorer_router

    app = FastAPI()
    app.include_router(explorer_router(memory_for))        # the page at /explorer/, its JSON at /explorer/api/...

See ``docs/explorer.md``.
"""

from __future__ import annotations

try:
    import fastapi  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("the memory explorer needs the server extra: pip install 'agentx-memory[server]'") from exc

from .router import MemoryFor, explorer_router

__all__ = ["MemoryFor", "explorer_router"]

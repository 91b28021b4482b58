"""Liveness and readiness, without a key (for load balancers and orchestrators)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ..auth import memory_of
from ..schemas import Health, Ready, StoreHealth

__all__ = ["router"]

router = APIRouter(tags=["health"])


@router.get("/health", response_model=Health, summary="Liveness")
async def health() -> Health:
    """200 while the process answers (it does not ask the stores)."""
    return Health(status="ok")


@router.get("/ready", response_model=Ready, summary="Readiness: each store",
            responses={503: {"model": Ready, "description": "a store did not answer"}})
async def ready(request: Request) -> Ready | JSONResponse:
    """Probe graph, PostgreSQL and Redis: each one's status and latency; 503 (same body) when one is down."""
    stores = await memory_of(request).store_health()
    body = Ready(status="ready" if all(s["status"] == "up" for s in stores.values()) else "unavailable",
                 stores={name: StoreHealth(**s) for name, s in stores.items()})
    if body.status == "ready":
        return body
    return JSONResponse(body.model_dump(mode="json", exclude_none=True), status_code=503)

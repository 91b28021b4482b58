"""Errors as ``application/problem+json`` (RFC 9457): ``type``, ``title``, ``status``, ``detail``, ``instance``,
plus ``error`` (our error class: the nearest one of :mod:`agentx_memory.errors`) and ``field`` when the error names
one.

=====================================================  ======  ==================================================
error                                                  status  notes
=====================================================  ======  ==================================================
ValidationError, request validation (FastAPI)          422     ``field`` names the input
a body that is not JSON                                400     ``field`` is ``body``
WorkingMemoryFullError                                 413
a body past ``server.max_request_bytes``              413     declared or streamed; ``field`` is ``body``
NotFoundError                                          404     also unknown routes
ConflictError, StaleVersionError                       409     a database's own words are not shown
PermissionDeniedError                                  403     also a key used outside its agent or channels
missing, malformed, unknown or revoked API key         401     ``WWW-Authenticate: Bearer``
RateLimitedError                                       429     ``Retry-After`` (whole seconds, rounded up)
StorageUnavailableError, ClosedError                   503     ``Retry-After: 1``; the store is not named
LLMUnavailableError (the provider did not answer)      503     ``Retry-After: 1``; the provider is not named
LLMOutputError, LLMRefusalError                        502     the model's answer could not be used (logged)
anything else                                          500     nothing of the exception is shown (it is logged)
=====================================================  ======  ==================================================
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import errors

__all__ = ["PROBLEM_MEDIA_TYPE", "Problem", "ProblemResponse", "error_name", "http_status", "install_problem_handlers",
           "memory_error_response", "problem"]

log = logging.getLogger(__name__)

PROBLEM_MEDIA_TYPE: Final = "application/problem+json"
_TYPE_PREFIX: Final = "urn:agentx-memory:error:"

_TITLES: Final[dict[int, str]] = {
    400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
    409: "Conflict", 413: "Content Too Large", 415: "Unsupported Media Type", 422: "Unprocessable Content",
    429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable",
}


class Problem(BaseModel):
    """An error, as RFC 9457 describes it, with our error class and the field at fault."""

    type: str = Field(description="a URN naming the error class, e.g. urn:agentx-memory:error:NotFoundError")
    title: str = Field(description="the HTTP status's phrase")
    status: int = Field(description="the HTTP status code")
    detail: str = Field(description="what went wrong, for people")
    instance: str | None = Field(None, description="the request path")
    error: str = Field(description="our error class (agentx_memory.errors), e.g. ValidationError")
    field: str | None = Field(None, description="the input at fault, when the error names one")
    retry_after: float | None = Field(None, description="429: seconds until a request is let through again")


class ProblemResponse(JSONResponse):
    """A JSON response with the problem media type."""

    media_type = PROBLEM_MEDIA_TYPE


def error_name(exc: BaseException) -> str:
    """The nearest class of our error tree (a server-side subclass reports its public parent)."""
    for cls in type(exc).__mro__:
        if cls.__module__ == errors.__name__:
            return cls.__name__
    return "InternalError"


def problem(status: int, error: str, detail: str, *, request: Request | None = None, field: str | None = None,
            retry_after: float | None = None, headers: dict[str, str] | None = None) -> ProblemResponse:
    """The problem response of ``status``."""
    body = Problem(type=_TYPE_PREFIX + error, title=_TITLES.get(status, "Error"), status=status, detail=detail,
                   instance=None if request is None else request.url.path, error=error, field=field,
                   retry_after=retry_after)
    return ProblemResponse(body.model_dump(exclude_none=True), status_code=status, headers=headers)


def http_status(exc: errors.AgentXMemoryError) -> int:
    """The HTTP status of an engine error: the one map of the REST service and the explorer (module docstring)."""
    for kind, status in ((errors.WorkingMemoryFullError, 413), (errors.ValidationError, 422),
                         (errors.NotFoundError, 404), (errors.ConflictError, 409), (errors.PermissionDeniedError, 403),
                         (errors.RateLimitedError, 429), (errors.StorageUnavailableError, 503),
                         (errors.ClosedError, 503), (errors.LLMUnavailableError, 503),
                         (errors.LLMOutputError, 502), (errors.LLMRefusalError, 502)):
        if isinstance(exc, kind):
            return status
    return 500


def memory_error_response(exc: errors.AgentXMemoryError, request: Request) -> ProblemResponse:
    """The problem response of an engine error raised while serving ``request`` (a 5xx is logged, and its detail
    names neither the store nor the exception)."""
    status = http_status(exc)
    if status >= 500:
        log.error("%s %s failed: %s", request.method, request.url.path, exc, exc_info=exc)
    headers: dict[str, str] = {}
    retry_after: float | None = None
    if isinstance(exc, errors.RateLimitedError):
        retry_after = round(exc.retry_after, 3)
        headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after)))
    elif status == 503:
        headers["Retry-After"] = "1"
    return problem(status, error_name(exc), errors.public_message(exc), request=request,
                   field=getattr(exc, "field", None), retry_after=retry_after, headers=headers)


async def _on_memory_error(request: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, errors.AgentXMemoryError)
    return memory_error_response(exc, request)


def _field(loc: Sequence[Any]) -> str:
    parts = [str(p) for p in loc]
    if len(parts) > 1 and parts[0] in ("body", "query", "path", "header", "cookie"):
        parts = parts[1:]
    return ".".join(parts) or "body"


async def _on_request_validation(request: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, RequestValidationError)
    found = list(exc.errors())
    first = found[0] if found else {"loc": ("body",), "msg": "invalid request"}
    if first.get("type") == "json_invalid":  # FastAPI locates it at ("body", <character position>)
        context = first.get("ctx")
        why = context.get("error") if isinstance(context, dict) else None
        return problem(400, "ValidationError", "body: not valid JSON" + (f" ({why})" if why else ""),
                       request=request, field="body")
    field = _field(first.get("loc", ()))
    return problem(422, "ValidationError", f"{field}: {first.get('msg', 'invalid')}", request=request, field=field)


async def _on_http_error(request: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, StarletteHTTPException)
    error = {400: "ValidationError", 401: "Unauthorized", 404: "NotFoundError"}.get(exc.status_code, "HTTPError")
    detail = exc.detail if isinstance(exc.detail, str) else _TITLES.get(exc.status_code, "error")
    return problem(exc.status_code, error, detail, request=request, field="body" if exc.status_code == 400 else None,
                   headers=dict(exc.headers or {}))


async def _on_anything(request: Request, exc: Exception) -> ProblemResponse:
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return problem(500, "InternalError", "the server failed; the error is in its log", request=request)


def install_problem_handlers(app: FastAPI) -> None:
    """Make every error of ``app`` a problem response."""
    app.add_exception_handler(errors.AgentXMemoryError, _on_memory_error)
    app.add_exception_handler(RequestValidationError, _on_request_validation)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_exception_handler(Exception, _on_anything)

"""A local HTTP server that answers in the Anthropic Messages or OpenAI Chat Completions wire format: the far end of
the wire for the LLM providers' tests and the extraction cost benchmark, which run the real SDK clients against it
(the SDKs are never mocked).

A test scripts the replies (:class:`Reply`: status, JSON or raw body, headers, a delay before answering); the last
reply repeats once the script is used up. Every request is recorded (path, headers, JSON body).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Recorded", "Reply", "WireServer", "anthropic_error", "anthropic_message", "openai_completion",
           "openai_error"]


@dataclass
class Reply:
    """One scripted answer: ``body`` is JSON-encoded unless it is ``bytes``."""

    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class WireServer:
    """The running server: ``url`` to point an SDK at, ``requests`` received, :meth:`script` to set the replies (or
    ``answer``, a function of the request body, for servers that answer by content)."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._replies: list[Reply] = []
        self.answer: Callable[[dict[str, Any]], Reply] | None = None
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"

    def script(self, *replies: Reply) -> None:
        """Answer the next requests with ``replies`` in order (the last one repeats)."""
        with self._lock:
            self._replies = list(replies)

    def _next(self, body: dict[str, Any]) -> Reply:
        if self.answer is not None:
            return self.answer(body)
        with self._lock:
            return self._replies.pop(0) if len(self._replies) > 1 else self._replies[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw) if raw else {}
                server.requests.append(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                reply = server._next(body)
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    @contextmanager
    def running(self) -> Iterator[WireServer]:
        """Serve in a thread for the duration of the block."""
        thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._http.shutdown()
            self._http.server_close()


# --- bodies in each provider's wire format ------------------------------------------------------------------------

def anthropic_message(*, text: str = "", tool: str | None = None, arguments: dict[str, Any] | None = None,
                      stop_reason: str | None = None, input_tokens: int = 120, output_tokens: int = 30,
                      model: str = "claude-haiku-4-5") -> dict[str, Any]:
    """A Messages API response: a text block and/or a tool_use block."""
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    if tool is not None:
        content.append({"type": "tool_use", "id": "toolu_test", "name": tool, "input": arguments or {}})
    return {"id": "msg_test", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": stop_reason or ("tool_use" if tool else "end_turn"), "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}}


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    """A Messages API error body."""
    return {"type": "error", "error": {"type": kind, "message": message}}


def openai_completion(content: str | None, *, finish_reason: str = "stop", refusal: str | None = None,
                      input_tokens: int = 120, output_tokens: int = 30, model: str = "gpt-4o-mini",
                      usage: bool = True) -> dict[str, Any]:
    """A Chat Completions response with one choice."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1700000000, "model": model,
        "choices": [{"index": 0, "finish_reason": finish_reason,
                     "message": {"role": "assistant", "content": content, "refusal": refusal}}]}
    if usage:
        body["usage"] = {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                         "total_tokens": input_tokens + output_tokens}
    return body


def openai_error(kind: str, message: str) -> dict[str, Any]:
    """A Chat Completions error body."""
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}

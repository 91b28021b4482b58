"""The REST service on a real socket for tests: :class:`LiveServer` runs ``create_app`` under uvicorn on a free
loopback port in a thread of its own (with its own event loop), exactly as ``agentx-memory serve`` runs it, and
stops it the way SIGTERM does (uvicorn's graceful shutdown, then the app's lifespan closes the memory).

:func:`served` is the fixture factory the ``test_server_*`` modules use: a server on a test namespace, keys made
through the public API, and an :class:`httpx.Client` per key.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import httpx
import pytest
import uvicorn

from agentx_memory import AgentMemory
from agentx_memory.server import create_app
from agentx_memory.settings import Settings

__all__ = ["LiveServer", "Served", "free_port", "served"]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """``create_app(settings)`` served by uvicorn on 127.0.0.1 in a background thread."""

    def __init__(self, settings: Settings, **app_options):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.app = create_app(settings, **app_options)
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning",
                                timeout_graceful_shutdown=settings.server.shutdown_timeout_seconds)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="agentx-test-uvicorn", daemon=True)

    def start(self, timeout: float = 60) -> LiveServer:
        """Start serving; return once the lifespan opened the memory and the socket listens."""
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("uvicorn stopped during startup (see the log above)")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the REST service did not start within {timeout} s")
            time.sleep(0.02)
        return self

    def stop(self, timeout: float = 60) -> None:
        """Shut down as on SIGTERM and wait for the thread (lifespan shutdown included)."""
        self.server.should_exit = True
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise TimeoutError("the REST service did not shut down")


@dataclass
class Served:
    """A running service on a test namespace."""

    settings: Settings
    server: LiveServer
    clients: list[httpx.Client] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The service's base URL."""
        return self.server.url

    def key(self, user_id: str, *, agent_id: str | None = None, channels: Sequence[str] = ()) -> str:
        """A new API key's token (made through the public API, as `keys create` makes it)."""
        with AgentMemory(self.settings) as memory:
            return memory.create_api_key(user_id, agent_id=agent_id, channels=channels).token

    def client(self, token: str | None = None) -> httpx.Client:
        """An httpx client of the service sending ``token`` (None: no key)."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        made = httpx.Client(base_url=self.url, headers=headers, timeout=60)
        self.clients.append(made)
        return made

    def as_user(self, user_id: str, **key_options) -> httpx.Client:
        """A client with a new key of ``user_id``."""
        return self.client(self.key(user_id, **key_options))


@pytest.fixture
def served(settings) -> Iterator:
    """A factory: ``served(**settings_overrides)`` starts the REST service on a fresh namespace; all are stopped
    after the test."""
    running: list[Served] = []

    def start(**overrides) -> Served:
        s = settings(**overrides)
        made = Served(s, LiveServer(s).start())
        running.append(made)
        return made

    yield start
    for made in running:
        for c in made.clients:
            c.close()
        made.server.stop()

"""A link to a real server that a test can break: the network faults of issue 11's outage tests; and a worker process
that dies mid-job (:func:`die_after_write`).

:class:`FaultyLink` forwards bytes between the engine and one real server (over a unix socket or TCP, either side).
A test points the engine at the link instead of the server, then:

- :meth:`FaultyLink.refuse`: the server is down -- live connections are reset and new ones refused;
- :meth:`FaultyLink.hang`: the server hangs -- connections stay open but nothing comes back;
- :meth:`FaultyLink.heal`: the server is back (a restart: connections made before the fault stay dead).

Nothing is faked: every byte that passes comes from the real server. The link runs its own event loop in a daemon
thread, so it works under the synchronous facade and under ``asyncio.run`` alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import threading
from pathlib import Path
from typing import Literal

Target = tuple[str, int] | str  # (host, port) for TCP, a path for a unix socket

__all__ = ["FaultyLink", "die_after_write"]


class FaultyLink:
    """A forwarder in front of one server; listens on a unix socket (``unix_name``) or on TCP (loopback)."""

    def __init__(self, target: Target, *, unix_name: str | None = None):
        self.target = target
        self.mode: Literal["pass", "refuse", "hang"] = "pass"
        self._unix_name = unix_name
        self._dir = Path(tempfile.mkdtemp(prefix="agentx-link-"))
        self._dir.chmod(0o755)
        self.port = 0
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="faulty-link", daemon=True)
        self._thread.start()
        self._call(self._listen())

    @property
    def path(self) -> Path:
        """The unix socket the link listens on (when it was made with ``unix_name``)."""
        assert self._unix_name is not None
        return self._dir / self._unix_name

    @property
    def directory(self) -> Path:
        """The directory of the link's unix socket (a libpq ``host``)."""
        return self._dir

    def refuse(self) -> None:
        """The server goes down: reset every connection and refuse new ones."""
        self.mode = "refuse"
        self._call(self._close_all())

    def hang(self) -> None:
        """The server hangs: connections (old and new) are kept, and nothing more reaches either side."""
        self.mode = "hang"

    def heal(self) -> None:
        """The server is back; connections broken by :meth:`refuse` stay broken, as after a restart."""
        self.mode = "pass"
        self._call(self._close_all())  # hung connections are dead too: their bytes were swallowed
        self._call(self._listen())

    def close(self) -> None:
        """Stop forwarding and stop the link's thread."""
        self._call(self._close_all())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        with contextlib.suppress(OSError):
            if self._unix_name:
                self.path.unlink()
            self._dir.rmdir()

    # --- on the link's loop ----------------------------------------------------------------------------------------

    def _call(self, coro) -> None:
        asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=10)

    async def _listen(self) -> None:
        if self._server is not None:
            return
        if self._unix_name:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self._server = await asyncio.start_unix_server(self._accept, path=os.fspath(self.path))
            self.path.chmod(0o777)
        else:
            self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
            self.port = self._server.sockets[0].getsockname()[1]

    async def _close_all(self) -> None:
        if self.mode == "refuse" and self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode == "refuse":
            writer.transport.abort()
            return
        try:
            if isinstance(self.target, str):
                up_reader, up_writer = await asyncio.open_unix_connection(self.target)
            else:
                up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers.update((writer, up_writer))
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                if self.mode == "hang":
                    continue  # swallowed: the other side waits forever
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.discard(writer)
            writer.transport.abort()


_DIE_AFTER_WRITE = """
import asyncio, os, sys
from datetime import datetime
from agentx_memory import AsyncAgentMemory

async def main():
    memory = await AsyncAgentMemory.open()
    graph = memory.ctx.graph
    write = graph.write

    async def write_then_die(query, params=None):
        rows = await write(query, params)
        if MARKER in query:
            os._exit(9)
        return rows

    graph.write = write_then_die
    await JOB

asyncio.run(main())
"""


def die_after_write(marker: str, job: str) -> str:
    """A Python program (for ``python -c``) that opens the memory its environment configures, runs ``job`` (an
    awaitable expression on ``memory``, e.g. ``memory.apply_decay()``; ``sys`` and ``datetime`` are imported) and
    dies with exit status 9 right after the job's first graph write whose statement contains ``marker``: a worker
    killed at that point, with what the database already holds."""
    return _DIE_AFTER_WRITE.replace("MARKER", repr(marker)).replace("JOB", job)

"""The few Redis commands the embedded FalkorDB's probe needs, spoken over its unix socket without redis-py.

``agentx-memory status`` must start in 0.3 s (issue 17); importing redis-py alone costs 55-80 ms (its package imports
the asyncio client and OpenTelemetry hooks). Probing asks three commands (``PING``, ``INFO server``, ``MODULE
LIST``), whose RESP2 replies this module reads. Everything that stores or reads data uses redis-py.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

__all__ = ["RespConnection", "RespError", "info_fields"]


class RespError(Exception):
    """The server answered a command with an error reply (e.g. ``LOADING Redis is loading the dataset``)."""


class RespConnection:
    """One connection to a Redis-protocol server on a unix socket; ``call`` sends a command and reads its reply.

    Replies decode as RESP2: simple strings and bulk strings as ``bytes``, integers as ``int``, arrays as lists, nil
    as ``None``. Error replies raise :class:`RespError`; a reply that is not RESP raises ``ValueError`` and a dead or
    silent socket ``OSError`` (``TimeoutError`` after ``timeout`` seconds).
    """

    def __init__(self, path: Path, timeout: float = 2.0) -> None:
        """Connect to the socket at ``path``, waiting at most ``timeout`` seconds for it and for each reply."""
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.settimeout(timeout)
            self._sock.connect(os.fspath(path))
        except OSError:
            self._sock.close()
            raise
        self._reader: BinaryIO = self._sock.makefile("rb")

    def call(self, *args: str) -> Any:
        """Send one command (``call("INFO", "server")``) and return its decoded reply."""
        parts = [f"*{len(args)}\r\n".encode()]
        for arg in args:
            data = arg.encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
        self._sock.sendall(b"".join(parts))
        return self._reply()

    def close(self) -> None:
        """Close the connection."""
        self._reader.close()
        self._sock.close()

    def __enter__(self) -> RespConnection:
        """The connection itself; it is closed on leaving the block."""
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """Close the connection."""
        self.close()

    def _line(self) -> bytes:
        line = self._reader.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("the server closed the connection in the middle of a reply")
        return line[:-2]

    def _reply(self) -> Any:
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RespError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            if size < 0:
                return None
            data = self._reader.read(size + 2)
            if len(data) != size + 2:
                raise ConnectionError("the server closed the connection in the middle of a reply")
            return data[:-2]
        if kind == b"*":
            count = int(rest)
            return None if count < 0 else [self._reply() for _ in range(count)]
        raise ValueError(f"not a RESP2 reply: {line[:40]!r}")


def info_fields(reply: bytes) -> dict[str, str]:
    """The ``field:value`` lines of an ``INFO`` reply as a dict (section headers and blank lines skipped)."""
    fields: dict[str, str] = {}
    for line in reply.decode(errors="replace").splitlines():
        if line and not line.startswith("#") and ":" in line:
            key, value = line.split(":", 1)
            fields[key] = value
    return fields

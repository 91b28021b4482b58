"""The embedded stack: one FalkorDB and one PostgreSQL per data directory, shared by every process using it.

``ensure_running`` is cheap when both servers answer (a PING and a connect, no lock). Otherwise it takes the
runtime file lock, re-checks, clears stale pid files / sockets left by a crash or ``kill -9``, and starts what is
missing; the data survives (AOF for FalkorDB, WAL crash recovery for PostgreSQL). Servers are daemons: they keep
running after the starting process exits, until :meth:`EmbeddedStack.stop`.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import RuntimeServerError
from ..settings import EmbeddedSettings
from .falkordb import FalkorDBServer
from .layout import FALKORDB_SOCKET_NAME, DataLayout
from .locks import runtime_lock
from .managed import ManagedServer
from .postgres import PostgresServer, postgres_os_user
from .processes import current_user

__all__ = ["EmbeddedStack", "Endpoints"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Endpoints:
    """Where clients reach the embedded servers."""

    falkordb_socket: Path
    """Unix socket of the FalkorDB/redis server."""
    falkordb_url: str
    """``unix:///abs/path/to/falkordb.sock`` (the form ``redis.Redis.from_url`` accepts)."""
    postgres_dsn: str
    """libpq conninfo, e.g. ``host=/abs/sockdir port=5432 dbname=agentx user=postgres``."""


class EmbeddedStack:
    """Starts, finds, reports on and stops the embedded servers of ``settings.home``."""

    def __init__(self, settings: EmbeddedSettings) -> None:
        """Bind to ``settings`` (the data directory is made absolute now); nothing is started or created."""
        self._settings = settings
        self._layout = DataLayout.for_home(settings.home)
        self._falkordb = FalkorDBServer(self._layout, settings)
        self._postgres = PostgresServer(self._layout, settings)

    @property
    def home(self) -> Path:
        """The absolute data directory."""
        return self._layout.home

    def endpoints(self) -> Endpoints:
        """Where the servers are (or would be), without starting or creating anything."""
        sock = self._layout.socket_dir() / FALKORDB_SOCKET_NAME
        return Endpoints(
            falkordb_socket=sock,
            falkordb_url="unix://" + quote(os.fspath(sock)),
            postgres_dsn=self._postgres.dsn(),
        )

    @property
    def _servers(self) -> tuple[ManagedServer, ...]:
        """Both servers, in start order."""
        return (self._falkordb, self._postgres)

    def _healthy(self) -> bool:
        if self._layout.recorded_socket_dir() is None:
            return False
        return all(server.healthy() for server in self._servers)

    def ensure_running(self) -> Endpoints:
        """Start whichever server is not running (restarting stale ones) and return the endpoints.

        Idempotent and safe to call from many processes at once: exactly one server of each kind ends up running
        for the data directory. Raises :class:`RuntimeServerError` with an actionable message on failure.

        When it has to start servers it says where the data directory is (INFO on the ``agentx_memory.runtime.stack``
        logger), and that it is new when it did not exist: a process started elsewhere with a relative or unset
        ``AGENTX_HOME`` would otherwise silently get a second directory and a second pair of daemons.
        """
        if self._healthy():
            return self.endpoints()
        if not self._layout.home.exists():
            log.info("creating a new embedded data directory %s (set AGENTX_HOME to share an existing one)",
                     self._layout.home)
        self._layout.ensure_home()
        log.info("starting the embedded servers of the data directory %s", self._layout.home)
        with runtime_lock(self._layout.lock_file, self._lock_timeout()):
            self._prepare_socket_dir()
            for server in self._servers:
                server.ensure_running()
        return self.endpoints()

    def stop(self) -> None:
        """Shut both servers down cleanly (FalkorDB ``SHUTDOWN`` fsyncs the AOF; ``pg_ctl stop -m fast``)."""
        if not self._layout.home.is_dir():
            return
        with runtime_lock(self._layout.lock_file, self._lock_timeout()):
            errors: list[str] = []
            for server in self._servers:
                try:
                    server.stop()
                except RuntimeServerError as exc:
                    errors.append(str(exc))
            sock_dir = self._layout.socket_dir()
            if sock_dir == self._layout.short_socket_dir:
                with suppress(OSError):
                    sock_dir.rmdir()  # only succeeds when empty
            if errors:
                raise RuntimeServerError("; ".join(errors))

    def run_postgres_script(self, script: str, variables: Mapping[str, str] | None = None) -> str | None:
        """Run a psql script on the embedded PostgreSQL's database (:meth:`.postgres.PostgresServer.run_script`):
        what it printed, or None when the server does not take the connection."""
        return self._postgres.run_script(script, variables=variables)

    def status(self) -> dict[str, Any]:
        """``{"falkordb": {...}, "postgres": {...}}``; each has ``running`` (bool), ``version`` (str|None), ``pid``,
        ``socket``, ``data_dir``, ``data_size_bytes`` (plus ``log_file``, ``state`` and server-specific extras)."""
        return {"falkordb": self._falkordb.status(), "postgres": self._postgres.status()}

    # ------------------------------------------------------------------ internals

    def _lock_timeout(self) -> float:
        # Another process may be doing a first initdb plus both starts, one of them loading a large data set, while
        # we wait.
        return 3 * self._settings.start_timeout_seconds + self._settings.load_timeout_seconds + 120

    def _prepare_socket_dir(self) -> Path:
        """Create the socket directory (private, owned by us or the PostgreSQL account) and record it."""
        L = self._layout
        directory = L.socket_dir()
        in_tmp = directory != L.local_socket_dir
        try:
            if in_tmp:
                with suppress(FileExistsError):
                    directory.mkdir(mode=0o700)
            else:
                directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = os.lstat(directory)
        except OSError as exc:
            raise RuntimeServerError(f"cannot create the socket directory {directory}: {exc.strerror or exc}") from exc
        if not stat.S_ISDIR(st.st_mode):
            raise RuntimeServerError(
                f"the socket path {directory} exists but is not a directory (a symlink or file); remove it and retry"
            )
        pg_user = postgres_os_user(L.pgdata)
        allowed = {current_user().uid, pg_user.uid}
        if st.st_uid not in allowed:
            raise RuntimeServerError(
                f"the socket directory {directory} belongs to another user (uid {st.st_uid}); it may be another "
                f"user's server: remove it or use another AGENTX_HOME"
            )
        try:
            os.chmod(directory, 0o700)
        except OSError as exc:
            raise RuntimeServerError(f"cannot set permissions on the socket directory {directory}: {exc}") from exc
        L.record_socket_dir(directory)
        return directory

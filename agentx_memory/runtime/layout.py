"""Where everything of the embedded runtime lives inside (and, for sockets, next to) the data directory.

Layout of ``<home>`` (``EmbeddedSettings.home``)::

    runtime.lock        file lock held around check-then-start / stop (cross-process)
    runtime.json        records the socket directory so every process finds the same one
    falkordb/           redis ``dir``: appendonlydir/ (AOF), falkordb.conf, falkordb.pid
    postgres/           PGDATA (PostgreSQL 18 cluster)
    logs/               falkordb.log, postgres.log
    run/                unix sockets (falkordb.sock, .s.PGSQL.5432) -- unless the path is too long

Unix socket paths are limited to 107 bytes on Linux (``sun_path`` is 108 bytes with the NUL). When ``<home>/run``
is too deep, the sockets go to ``<tempdir>/agentx-<sha256(abs home)[:16]>`` instead, and that choice is written to
``runtime.json`` so processes with a different ``TMPDIR`` still agree.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import RuntimeServerError

__all__ = [
    "FALKORDB_SOCKET_NAME",
    "MAX_SOCKET_PATH_BYTES",
    "POSTGRES_PORT",
    "POSTGRES_SOCKET_NAME",
    "DataLayout",
    "directory_size",
]

#: Longest usable unix socket path (bytes, without the terminating NUL) on Linux.
MAX_SOCKET_PATH_BYTES = 107
#: The embedded PostgreSQL listens on no TCP port; the number only names its socket file.
POSTGRES_PORT = 5432
#: File name of the FalkorDB (redis) socket inside the socket directory.
FALKORDB_SOCKET_NAME = "falkordb.sock"
#: File name PostgreSQL gives its socket inside the socket directory.
POSTGRES_SOCKET_NAME = f".s.PGSQL.{POSTGRES_PORT}"

_STATE_FILE = "runtime.json"


def _socket_path_fits(directory: Path) -> bool:
    longest = max(len(FALKORDB_SOCKET_NAME), len(POSTGRES_SOCKET_NAME) + len(".lock"))
    return len(os.fsencode(str(directory))) + 1 + longest <= MAX_SOCKET_PATH_BYTES


@dataclass(frozen=True)
class DataLayout:
    """Absolute paths of one data directory; pure path arithmetic, nothing is created on construction."""

    home: Path

    @classmethod
    def for_home(cls, home: Path | str) -> DataLayout:
        """The layout of ``home`` made absolute (symlinks resolved so every process hashes the same path)."""
        return cls(Path(home).expanduser().resolve())

    @property
    def lock_file(self) -> Path:
        """The cross-process lock file."""
        return self.home / "runtime.lock"

    @property
    def state_file(self) -> Path:
        """JSON file recording the chosen socket directory."""
        return self.home / _STATE_FILE

    @property
    def falkordb_dir(self) -> Path:
        """Redis ``dir``: AOF, config and pid file."""
        return self.home / "falkordb"

    @property
    def falkordb_conf(self) -> Path:
        """The generated redis configuration file (rewritten at every start)."""
        return self.falkordb_dir / "falkordb.conf"

    @property
    def falkordb_pidfile(self) -> Path:
        """Pid file written by the daemonized redis-server."""
        return self.falkordb_dir / "falkordb.pid"

    @property
    def pgdata(self) -> Path:
        """The PostgreSQL data directory."""
        return self.home / "postgres"

    @property
    def logs_dir(self) -> Path:
        """Directory of both server logs."""
        return self.home / "logs"

    @property
    def falkordb_log(self) -> Path:
        """The redis/FalkorDB log file."""
        return self.logs_dir / "falkordb.log"

    @property
    def postgres_log(self) -> Path:
        """The PostgreSQL server log (pg_ctl -l)."""
        return self.logs_dir / "postgres.log"

    @property
    def local_socket_dir(self) -> Path:
        """The preferred socket directory inside the data directory."""
        return self.home / "run"

    @property
    def short_socket_dir(self) -> Path:
        """The fallback socket directory under the system temp dir, named by a hash of the data directory."""
        digest = hashlib.sha256(os.fsencode(str(self.home))).hexdigest()[:16]
        return Path(tempfile.gettempdir()).resolve() / f"agentx-{digest}"

    def recorded_socket_dir(self) -> Path | None:
        """The socket directory recorded in ``runtime.json``, if any."""
        try:
            data = json.loads(self.state_file.read_text())
            value = data.get("socket_dir")
        except (OSError, ValueError, AttributeError):
            return None
        return Path(value) if isinstance(value, str) and value else None

    def socket_dir(self) -> Path:
        """Where the sockets are (recorded choice first, else computed); creates nothing."""
        recorded = self.recorded_socket_dir()
        # Only trust a record made for this very directory (a moved data dir recomputes).
        if recorded is not None and (recorded == self.local_socket_dir or recorded.name == self.short_socket_dir.name):
            return recorded
        return self.local_socket_dir if _socket_path_fits(self.local_socket_dir) else self.short_socket_dir

    def record_socket_dir(self, directory: Path) -> None:
        """Write ``runtime.json`` (atomically) so every process uses ``directory`` for sockets."""
        if self.recorded_socket_dir() == directory:
            return
        tmp = self.state_file.with_name(f".{_STATE_FILE}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps({"socket_dir": str(directory)}, indent=2) + "\n")
            os.replace(tmp, self.state_file)
        except OSError as exc:
            raise RuntimeServerError(f"cannot write {self.state_file}: {exc}") from exc

    def falkordb_socket(self) -> Path:
        """The FalkorDB/redis unix socket path."""
        return self.socket_dir() / FALKORDB_SOCKET_NAME

    def postgres_socket(self) -> Path:
        """The PostgreSQL unix socket path."""
        return self.socket_dir() / POSTGRES_SOCKET_NAME

    def ensure_home(self) -> None:
        """Create the data directory and prove it is writable, or raise :class:`RuntimeServerError` naming it."""
        probe = self.home / f".write-probe-{os.getpid()}"
        try:
            self.home.mkdir(parents=True, exist_ok=True)
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise RuntimeServerError(
                f"the embedded data directory {self.home} is not writable ({exc.strerror or exc}); "
                f"set AGENTX_HOME (or AGENTX_EMBEDDED__HOME) to a writable directory"
            ) from exc


def directory_size(path: Path) -> int:
    """Total size in bytes of the regular files under ``path`` (0 if it does not exist)."""
    total = 0
    for root, _dirs, files in os.walk(path, onerror=lambda _exc: None):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total

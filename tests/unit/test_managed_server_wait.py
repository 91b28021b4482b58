"""How long a launched embedded server is waited for (:class:`agentx_memory.runtime.managed.ManagedServer`): the start
timeout while it does not answer, the load timeout once it has said it is loading its data.

The server here is a timeline of probe results: the state machine under test only ever sees probes, and a real
server that loads for longer than the start timeout needs gigabytes of data (the 1M-turn bench's directory, where
the defect was found; ``tests/integration/test_runtime.py`` starts a real FalkorDB through the same code).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentx_memory.errors import RuntimeServerError
from agentx_memory.runtime.layout import DataLayout
from agentx_memory.runtime.managed import ManagedServer, ServerProbe
from agentx_memory.settings import EmbeddedSettings

NOT_LISTENING = ServerProbe("starting", 42, "not listening on its socket")
LOADING = ServerProbe("starting", 42, "loading its data", loading=True)
NOT_ANSWERING = ServerProbe("starting", 42, "not answering")  # between two chunks of a large file
RUNNING = ServerProbe("running", 42)


class TimelineServer(ManagedServer):
    """A server whose probes follow ``timeline``: (seconds since launch, probe) steps; stopped before the launch."""

    name = "Timeline"
    process_names = ("timeline",)
    poll_interval = 0.01

    def __init__(self, tmp_path: Path, timeline: list[tuple[float, ServerProbe]], **settings: float):
        super().__init__(DataLayout.for_home(tmp_path), EmbeddedSettings(home=tmp_path, **settings))
        self.timeline, self.launched_at = timeline, None

    socket = property(lambda self: self._layout.home / "s.sock")
    data_dir = property(lambda self: self._layout.home)
    pid_file = property(lambda self: self._layout.home / "pid")
    log_file = property(lambda self: self._layout.home / "log")

    def probe(self) -> ServerProbe:
        if self.launched_at is None:
            return ServerProbe("stopped")
        elapsed = time.monotonic() - self.launched_at
        return [probe for since, probe in self.timeline if since <= elapsed][-1]

    def _launch(self) -> None:
        self.launched_at = time.monotonic()

    def _shutdown(self, probe: ServerProbe) -> None:
        self.launched_at = None

    def _clear_stale(self) -> None:
        pass


LOADS_FOR_A_SECOND = [(0.0, NOT_LISTENING), (0.05, LOADING), (0.3, NOT_ANSWERING), (0.35, LOADING),
                      (1.0, RUNNING)]


def test_a_server_loading_its_data_is_waited_for_past_the_start_timeout(tmp_path):
    server = TimelineServer(tmp_path, LOADS_FOR_A_SECOND, start_timeout_seconds=0.2, load_timeout_seconds=60)
    started = time.monotonic()
    assert server.ensure_running() == 42
    assert 1.0 <= time.monotonic() - started < 5


def test_the_load_timeout_bounds_the_wait_and_is_named(tmp_path):
    server = TimelineServer(tmp_path, LOADS_FOR_A_SECOND, start_timeout_seconds=0.2, load_timeout_seconds=0.5)
    with pytest.raises(RuntimeServerError, match=r"within 0\.5s \(AGENTX_EMBEDDED__LOAD_TIMEOUT_SECONDS\)"):
        server.ensure_running()


def test_a_server_that_never_says_it_is_loading_gets_the_start_timeout(tmp_path):
    server = TimelineServer(tmp_path, [(0.0, NOT_LISTENING), (1.0, RUNNING)], start_timeout_seconds=0.2,
                            load_timeout_seconds=60)
    started = time.monotonic()
    with pytest.raises(RuntimeServerError, match=r"within 0\.2s \(AGENTX_EMBEDDED__START_TIMEOUT_SECONDS\)"):
        server.ensure_running()
    assert time.monotonic() - started < 0.9


def test_another_process_start_that_is_loading_is_waited_out_too(tmp_path):
    server = TimelineServer(tmp_path, LOADS_FOR_A_SECOND, start_timeout_seconds=0.2, load_timeout_seconds=60)
    server._launch()  # launched by another process: this one finds it starting
    assert server.ensure_running() == 42

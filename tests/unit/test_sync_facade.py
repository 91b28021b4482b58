"""The sync facade is generated from the async API and stays its exact twin (scripts/gen_sync_facade.py)."""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agentx_memory import (
    AgentMemory,
    AsyncAgentMemory,
    ContextWindow,
    SyncContextWindow,
    SyncWorkingMemory,
    WorkingMemory,
)
from tests.scripts import load_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "gen_sync_facade.py"

# (async class, sync twin, public coroutines the twin writes by hand with its own signature)
PAIRS = [
    pytest.param(AsyncAgentMemory, AgentMemory, {"open", "close"}, id="AgentMemory"),
    pytest.param(WorkingMemory, SyncWorkingMemory, set(), id="SyncWorkingMemory"),
    pytest.param(ContextWindow, SyncContextWindow, set(), id="SyncContextWindow"),
]
# public attributes only the sync side has: the async object it drives and what it passes through
SYNC_ONLY = {"core", "settings", "user_id", "conversation_id", "channel", "agent_id"}  # properties over core attributes


@pytest.fixture(scope="module")
def gen():
    module = load_script(SCRIPT)
    yield module
    sys.modules.pop(module.__name__, None)


def _public(cls: type, predicate) -> dict[str, Any]:
    return {name: member for name, member in inspect.getmembers(cls, predicate) if not name.startswith("_")}


def test_generated_twins_are_up_to_date():
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("async_cls", "sync_cls", "hand_written"), PAIRS)
def test_every_public_coroutine_has_a_blocking_twin(async_cls, sync_cls, hand_written):
    coroutines = _public(async_cls, inspect.iscoroutinefunction)
    assert coroutines, async_cls
    missing = sorted(name for name in coroutines if not callable(getattr(sync_cls, name, None)))
    assert not missing, f"{sync_cls.__name__} lacks twins of: {', '.join(missing)}"
    still_async = sorted(name for name in coroutines if inspect.iscoroutinefunction(getattr(sync_cls, name)))
    assert not still_async, still_async
    assert hand_written <= set(coroutines), "a hand-written twin whose coroutine no longer exists"


@pytest.mark.parametrize(("async_cls", "sync_cls", "hand_written"), PAIRS)
def test_twins_have_the_coroutines_signature_and_docstring(async_cls, sync_cls, hand_written):
    for name, coroutine in _public(async_cls, inspect.iscoroutinefunction).items():
        if name in hand_written:
            continue
        twin = getattr(sync_cls, name)
        expected = inspect.signature(coroutine, eval_str=True)
        actual = inspect.signature(twin, eval_str=True)
        assert list(actual.parameters.values()) == list(expected.parameters.values()), f"{name}: {actual} != {expected}"
        for param in actual.parameters.values():  # == compares these too; a message that names the difference
            assert param.annotation is not inspect.Parameter.empty or param.name == "self", f"{name}.{param.name}"
        assert actual.return_annotation == expected.return_annotation, name
        assert expected.return_annotation is not inspect.Signature.empty, f"{name} has no return annotation"
        assert inspect.getdoc(twin) == inspect.getdoc(coroutine), name


@pytest.mark.parametrize(("async_cls", "sync_cls", "hand_written"), PAIRS)
def test_other_public_methods_have_twins_taking_the_same_parameters(async_cls, sync_cls, hand_written):
    """Non-coroutine methods (``working``) and the hand-written twins (``open``) are written by hand on both sides."""
    plain = set(_public(async_cls, inspect.isfunction)) - set(_public(async_cls, inspect.iscoroutinefunction))
    for name in sorted(plain | hand_written):
        ours = inspect.signature(getattr(sync_cls, name), eval_str=True).parameters
        theirs = inspect.signature(getattr(async_cls, name), eval_str=True).parameters
        assert list(ours.values()) == list(theirs.values()), name


@pytest.mark.parametrize(("async_cls", "sync_cls", "hand_written"), PAIRS)
def test_the_sync_side_has_nothing_the_async_side_lacks(async_cls, sync_cls, hand_written):
    """A twin of a coroutine that was removed or renamed would linger here."""
    sync_public = {name for name in vars(sync_cls) if not name.startswith("_")}
    async_public = {name for name in dir(async_cls) if not name.startswith("_")}
    assert sync_public - async_public - SYNC_ONLY == set()


def test_working_and_context_window_return_the_typed_twins():
    assert inspect.signature(AgentMemory.working, eval_str=True).return_annotation is SyncWorkingMemory
    assert inspect.signature(AgentMemory.context_window, eval_str=True).return_annotation is SyncContextWindow


# --- the generator itself, on a made-up class -----------------------------------------------------------------------

SOURCE = textwrap.dedent('''
    class Core:
        async def every_kind(self, a: int, /, b: str = "x", *rest: float, c: bool = True, **extra: Any) -> list[int]:
            """Every kind of parameter."""

        async def nothing(self) -> None:
            """Returns nothing."""

        async def long_one(self, first_parameter_with_a_long_name: dict[str, Any] | None = None,
                           second_parameter_with_a_long_name: dict[str, Any] | None = None, *,
                           third_parameter_with_a_long_name: dict[str, Any] | None = None) -> dict[str, Any]:
            """A signature that needs wrapping.

            Over two paragraphs.
            """

        async def _private(self) -> None:
            """Not twinned."""

        def not_a_coroutine(self) -> None:
            """Not twinned either."""
''')


class FakePortal:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def run(self, coro):
        self.calls.append(coro.cr_code.co_name)
        try:
            coro.send(None)
        except StopIteration as stop:
            return stop.value
        raise AssertionError("the fake coroutine suspended")


def _render(gen, tmp_path: Path, source: str) -> str:
    path = tmp_path / "core.py"
    path.write_text(source)
    twin = gen.Twin(path, "Core", "Sync", "self._core")
    lines = ["class Sync:", "    def __init__(self, core, portal):", "        self._core = core",
             "        self._portal = portal"]
    for func in gen.public_coroutines(twin):
        lines += ["", *gen.render_method(func, source, twin)]
    return "\n".join(lines) + "\n"


def test_generator_copies_signatures_wraps_lines_and_passes_every_argument(gen, tmp_path):
    text = _render(gen, tmp_path, SOURCE)
    assert all(len(line) <= gen.WIDTH for line in text.splitlines())
    assert "_private" not in text and "not_a_coroutine" not in text
    assert "        self._portal.run(self._core.nothing())" in text.splitlines()  # no `return` for -> None

    namespace: dict[str, Any] = {"Any": Any}
    exec(compile(SOURCE, "core.py", "exec"), namespace)
    exec(compile(text, "sync.py", "exec"), namespace)
    core_cls, sync_cls = namespace["Core"], namespace["Sync"]
    for name in ("every_kind", "nothing", "long_one"):
        assert inspect.signature(getattr(sync_cls, name)) == inspect.signature(getattr(core_cls, name)), name
        assert inspect.getdoc(getattr(sync_cls, name)) == inspect.getdoc(getattr(core_cls, name)), name

    class Recorder:
        async def every_kind(self, a, /, b="x", *rest, c=True, **extra):
            return [a, b, rest, c, extra]

        async def long_one(self, first_parameter_with_a_long_name=None, second_parameter_with_a_long_name=None, *,
                           third_parameter_with_a_long_name=None):
            return {"third": third_parameter_with_a_long_name}

    portal = FakePortal()
    sync = sync_cls(Recorder(), portal)
    assert sync.every_kind(1, "y", 2.0, 3.0, c=False, k="v") == [1, "y", (2.0, 3.0), False, {"k": "v"}]
    assert sync.long_one(third_parameter_with_a_long_name={"a": 1}) == {"third": {"a": 1}}
    assert portal.calls == ["every_kind", "long_one"]


@pytest.mark.parametrize(("source", "error"), [
    ("class Core:\n    async def f(self, x) -> None:\n        'Doc.'\n", "parameter 'x' has no annotation"),
    ("class Core:\n    async def f(self):\n        'Doc.'\n", "no return annotation"),
    ("class Core:\n    async def f(self) -> None:\n        pass\n", "no docstring"),
])
def test_generator_refuses_untyped_or_undocumented_coroutines(gen, tmp_path, source, error):
    with pytest.raises(gen.GenerationError, match=error):
        _render(gen, tmp_path, source)


def test_generator_refuses_names_the_target_module_does_not_import(gen, monkeypatch, tmp_path):
    path = tmp_path / "core.py"
    path.write_text("class Core:\n    async def f(self, x: Unknown) -> None:\n        'Doc.'\n")
    twin = gen.Twin(path, "Core", "Sync", "self._core")
    with pytest.raises(gen.GenerationError, match="does not import: Unknown"):
        gen.render_region(twin, {"Any"})
    monkeypatch.setattr(gen, "TWINS", (twin,))
    with pytest.raises(gen.GenerationError, match="markers"):
        gen.update("class Sync:\n    pass\n")


def test_a_stopped_portal_raises_our_closed_error_and_closes_the_coroutine():
    """Issue 11 item 13: a twin called after close() raised RuntimeError('Event loop is closed') and left the
    coroutine un-awaited; every twin goes through the portal, so the check lives there once."""
    import warnings

    from agentx_memory.errors import AgentXMemoryError, ClosedError
    from agentx_memory.memory import _Portal

    async def work() -> int:
        return 1

    portal = _Portal()
    assert portal.run(work()) == 1
    portal.stop()
    coro = work()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a coroutine never awaited would warn when collected
        with pytest.raises(ClosedError, match="closed") as caught:
            portal.run(coro)
    assert isinstance(caught.value, AgentXMemoryError) and isinstance(caught.value, RuntimeError)
    assert coro.cr_frame is None  # closed, not left pending

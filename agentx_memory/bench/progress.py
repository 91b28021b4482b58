"""Progress bars of the benchmarks, drawn with :mod:`rich.progress` on stderr (stdout stays the report).

Two shapes, as the benchmarks need them::

    with progress_bar("engine: store_turns", total=len(rows), unit="turn") as bar:
        ...
        bar.update(len(chunk))

    for question in track(questions, "recall", unit="q"):
        ...

A bar opened while another is showing joins the same display (rich allows one live display at a time). ``transient``
bars disappear when done; the others stay as a line of the log. On a non-terminal stderr (a CI log, a subprocess)
rich draws nothing while a bar runs and prints its last state when it ends; transient bars are not drawn there.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from contextlib import contextmanager
from typing import TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

__all__ = ["Bar", "progress_bar", "track"]

T = TypeVar("T")

_console = Console(stderr=True)
_active: Progress | None = None


class _RateColumn(ProgressColumn):
    """Items per second, in the task's unit (``12.3 q/s``)."""

    def render(self, task: Task) -> Text:
        """The task's current speed, or ``?`` before rich can estimate it."""
        unit = task.fields.get("unit", "")
        speed = task.finished_speed or task.speed
        if speed is None:
            return Text("?", style="progress.data.speed")
        return Text(f"{speed:,.{1 if speed < 100 else 0}f} {unit}/s", style="progress.data.speed", no_wrap=True)


class Bar:
    """One task of a progress display: :meth:`update` advances it."""

    def __init__(self, progress: Progress, task: TaskID):
        self._progress = progress
        self._task = task

    def update(self, advance: int = 1) -> None:
        """Count ``advance`` more items done."""
        self._progress.advance(self._task, advance)


@contextmanager
def progress_bar(description: str, total: int | None = None, *, unit: str = "it",
                 transient: bool = False) -> Iterator[Bar]:
    """A progress bar for the ``with`` block (see the module docstring); ``total=None`` shows a count only."""
    global _active
    if _active is not None:  # a bar is showing: add a task to its display
        outer = _active
        task = outer.add_task(description, total=total, unit=unit)
        try:
            yield Bar(outer, task)
        finally:
            if transient:
                outer.remove_task(task)
        return
    # A transient bar on a non-terminal would leave only an empty line: it is not drawn at all there.
    progress = Progress(TextColumn("{task.description}"), BarColumn(bar_width=24), MofNCompleteColumn(),
                        _RateColumn(), TimeElapsedColumn(), TimeRemainingColumn(), console=_console,
                        transient=transient, disable=transient and not _console.is_terminal)
    task = progress.add_task(description, total=total, unit=unit)
    _active = progress
    try:
        with progress:
            yield Bar(progress, task)
    finally:
        _active = None


def track(items: Iterable[T], description: str, *, total: int | None = None, unit: str = "it",
          transient: bool = False) -> Iterator[T]:
    """Iterate over ``items`` with a progress bar (``total`` defaults to ``len(items)`` when it has one)."""
    if total is None and isinstance(items, Sized):
        total = len(items)
    with progress_bar(description, total, unit=unit, transient=transient) as bar:
        for item in items:
            yield item
            bar.update()

"""Load conversations from JSONL: one turn per line.

Each line is a JSON object with ``user_id``, ``conversation_id``, ``role``, ``content``, ``timestamp`` (ISO 8601),
and optionally ``metadata`` (object), ``channel``, ``id`` and ``index``. Every line is validated on its own first; a
bad line is reported with its line number and skipped, never half-stored. Good lines are stored in batches; a batch
that collides with stored state (a conversation of another user, two users in one conversation, a turn index taken
by a different turn) is stored again line by line, so only the colliding lines are skipped and reported.

A line is bad when it is not UTF-8, not a JSON object, misses a field, or holds a value no store accepts (a lone
surrogate or NUL in text, an id with surrounding whitespace or a control character, an index beyond PostgreSQL's
INTEGER …): every check raises our ValidationError, so a bad line never reaches a server. Only an unreachable
server (:class:`~agentx_memory.errors.StorageUnavailableError`) stops an ingest.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import pydantic

from .errors import AgentXMemoryError, StorageUnavailableError, ValidationError
from .memory import AsyncAgentMemory
from .models import Turn

__all__ = ["IngestReport", "ingest_file", "read_turns"]

_REQUIRED = ("user_id", "conversation_id", "role", "content", "timestamp")


@dataclass
class IngestReport:
    """What an ingest did: turns stored, and each skipped line with its reason."""

    stored: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)


def _open(path: Path) -> BinaryIO:
    try:
        return path.open("rb")
    except OSError as exc:
        raise ValidationError("file", f"cannot read {str(path)!r}: {exc.strerror or exc}") from exc


def read_turns(path: Path, report: IngestReport) -> Iterator[tuple[int, Turn]]:
    """``(line number, Turn)`` parsed from a JSONL file; malformed lines are added to ``report.skipped``.

    A file that cannot be read raises :class:`~agentx_memory.errors.ValidationError` (field ``file``).
    """
    with _open(path) as handle:
        for number, data in enumerate(handle, start=1):
            if not data.strip():
                continue
            try:
                line = data.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                report.skipped.append((number, f"not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})"))
                continue
            try:
                raw = json.loads(line)
                if not isinstance(raw, dict):
                    raise ValueError("a line must be a JSON object")
                missing = [k for k in _REQUIRED if k not in raw]
                if missing:
                    raise ValueError(f"missing field(s): {', '.join(missing)}")
                yield number, Turn(**raw)
            except (ValueError, pydantic.ValidationError) as exc:
                report.skipped.append((number, _short(exc)))
            except RecursionError:  # json and pydantic recurse: a line nested thousands of levels deep
                report.skipped.append((number, "nested too deeply to read"))


def _short(exc: Exception) -> str:
    if isinstance(exc, pydantic.ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return str(exc).splitlines()[0]


async def ingest_file(memory: AsyncAgentMemory, path: Path, *, batch_size: int = 200,
                      progress: Callable[[int], None] | None = None) -> IngestReport:
    """Validate every line, then store the valid turns in batches (each batch atomic in the durable log)."""
    report = IngestReport()
    numbered = list(read_turns(path, report))
    valid: list[Turn] = []
    for number, turn in numbered:
        try:
            memory.episodic.validate([turn])  # the same checks store_turns applies
            valid.append(turn)
        except (AgentXMemoryError, ValueError, TypeError) as exc:
            report.skipped.append((number, str(exc)))
    numbers = {id(turn): number for number, turn in numbered}
    for start in range(0, len(valid), batch_size):
        batch = valid[start:start + batch_size]
        try:
            await memory.store_turns(batch)
        except StorageUnavailableError:
            raise
        except AgentXMemoryError:
            # Nothing of the batch was stored (the durable log writes it in one transaction): find the lines that
            # collide with stored state or that a store refused by storing the batch again one line at a time, in
            # file order.
            for turn in batch:
                try:
                    await memory.store_turns([turn])
                except StorageUnavailableError:
                    raise
                except AgentXMemoryError as exc:
                    report.skipped.append((numbers[id(turn)], str(exc)))
                    continue
                report.stored += 1
                if progress:
                    progress(1)
            continue
        report.stored += len(batch)
        if progress:
            progress(len(batch))
    report.skipped.sort()
    return report


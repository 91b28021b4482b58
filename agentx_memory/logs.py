"""Where the command line's log records go: stderr, as plain lines for a terminal or one JSON object per line for a
log pipeline, from a level on (``agentx-memory --log-level``; the worker logs INFO unless told otherwise)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

__all__ = ["LEVELS", "JsonLines", "configure"]

#: The levels ``--log-level`` takes, lowest first.
LEVELS = ("debug", "info", "warning", "error")

#: Record attributes every LogRecord has; anything else was passed with ``extra=`` and goes into the JSON object.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonLines(logging.Formatter):
    """A record as one JSON object: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, the fields passed
    with ``extra=`` (the worker passes ``job``, ``summary`` and ``outcome``) and ``error`` with the traceback."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON."""
        out = {"time": datetime.fromtimestamp(record.created, UTC).isoformat(), "level": record.levelname,
               "logger": record.name, "message": record.getMessage()}
        out.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure(*, json_lines: bool = False, level: str = "info") -> None:
    """Log records of ``level`` (one of :data:`LEVELS`) and above to stderr, as JSON lines or as plain text."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLines() if json_lines else logging.Formatter(
        "%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)

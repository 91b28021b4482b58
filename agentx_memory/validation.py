"""Input checks shared by every write path. Each failure is a ValidationError naming the field and the limit."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from .errors import ValidationError
from .models import GLOBAL_CHANNEL

M = TypeVar("M", bound=BaseModel)

__all__ = [
    "INT32_MAX", "MAX_JSON_DEPTH", "check_channel", "check_channels", "check_datetime", "check_depth", "check_id",
    "check_ids", "check_int", "check_json", "check_range", "check_text", "checked_copy", "first_bytes",
]

_CHANNEL = re.compile(r"^[a-z0-9](?:[a-z0-9._-]{0,98}[a-z0-9])?$")
#: The longest id: ids are VARCHAR(100) columns in PostgreSQL (conversation ids VARCHAR(200): pass ``max_len=200``).
_ID_MAX = 100
#: The largest value of a PostgreSQL INTEGER column (turn index, token count, latency).
INT32_MAX = 2**31 - 1
#: The range of a graph integer (both graph databases store 64-bit integers).
_INT64 = (-(2**63), 2**63 - 1)
#: Characters no id may contain: control characters (C0, DEL, C1: newline, tab, NUL …), lone surrogates (not
#: encodable as UTF-8), line and paragraph separators.
_BAD_ID_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})
#: The deepest nesting of lists and objects a JSON value (metadata, properties, tool input …) may have. Copying,
#: encoding and the database drivers all recurse, so a value nested a few hundred levels deep raised RecursionError.
MAX_JSON_DEPTH = 64


def check_channel(channel: str, field: str = "channel") -> str:
    """``_global`` or a project slug: lowercase letters, digits, ``.``, ``_``, ``-``; 1-100 characters."""
    if channel == GLOBAL_CHANNEL:
        return channel
    if not isinstance(channel, str) or not _CHANNEL.match(channel):
        raise ValidationError(
            field,
            f"{channel!r} is not a channel name: use '_global' or a project slug of 1-100 characters "
            "(lowercase letters, digits, '.', '_', '-'; starting and ending with a letter or digit)",
        )
    return channel


def check_channels(channels: Iterable[str] | str | None, *, active: str | None = None) -> list[str]:
    """A validated, de-duplicated channel list that always includes ``_global`` (and ``active`` if given)."""
    if isinstance(channels, str):
        channels = [channels]
    elif channels is not None and (isinstance(channels, (bytes, Mapping)) or not isinstance(channels, Iterable)):
        raise ValidationError("channels", f"must be a channel name or a list of them, got {type(channels).__name__}")
    out: list[str] = []
    for ch in [*(channels or []), *([active] if active else []), GLOBAL_CHANNEL]:
        check_channel(ch, "channels")
        if ch not in out:
            out.append(ch)
    return out


def check_id(value: Any, field: str, *, max_len: int = _ID_MAX) -> str:
    """The one rule for every id (user, conversation, turn, entity, fact, goal, invocation, tool name …).

    A string of 1 to ``max_len`` characters (so it always fits its VARCHAR column), with no leading or trailing
    whitespace and no control character (newline, tab, NUL …), lone surrogate or line separator anywhere: such ids
    are easy to produce by accident, cannot be told apart when printed, and some crash the graph server. Returns the
    id unchanged.
    """
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string id, got {type(value).__name__}")
    if not value:
        raise ValidationError(field, "must be a non-empty string")
    if len(value) > max_len:
        raise ValidationError(field, f"is {len(value)} characters; the limit is {max_len}")
    # printable ASCII holds none of the refused characters: only other ids need the look at each character
    for ch in () if value.isascii() and value.isprintable() else value:
        if unicodedata.category(ch) in _BAD_ID_CATEGORIES:
            raise ValidationError(field, f"must not contain control characters, lone surrogates or line separators "
                                         f"(found {ch!r} in {value!r})")
    if value != value.strip():
        raise ValidationError(field, f"must not start or end with whitespace: {value!r}")
    return value


def check_ids(values: Any, field: str, *, max_len: int = _ID_MAX) -> list[str]:
    """A list of ids, each checked by :func:`check_id` (a single string is not a list of ids)."""
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise ValidationError(field, f"must be a list of ids, got {type(values).__name__}")
    return [check_id(v, field, max_len=max_len) for v in values]


def _check_chars(value: str, field: str) -> None:
    """No NUL (neither database stores it in text) and no lone surrogate (not encodable as UTF-8)."""
    if "\x00" in value:
        raise ValidationError(field, "must not contain NUL characters (\\x00); neither database stores them in text")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(field, f"is not valid Unicode text: a lone surrogate {value[exc.start]!r} at "
                                     f"position {exc.start}") from exc


def check_text(value: Any, field: str, *, max_bytes: int, limit_name: str = "") -> str:
    """Non-empty text of at most ``max_bytes`` UTF-8 bytes, without NUL characters or lone surrogates."""
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValidationError(field, "must not be empty")
    _check_chars(value, field)
    size = len(value.encode("utf-8"))
    if size > max_bytes:
        hint = f" ({limit_name})" if limit_name else ""
        raise ValidationError(field, f"is {size} bytes; the limit is {max_bytes} bytes{hint}")
    return value


def first_bytes(text: str, max_bytes: int) -> str:
    """``text`` itself when it fits in ``max_bytes`` UTF-8 bytes, else its longest prefix that does (a character is
    never cut): for text a limit bounds where the caller cuts rather than refuses."""
    if len(text) * 4 <= max_bytes:  # no character takes more than 4 bytes: fits without encoding it
        return text
    encoded = text.encode("utf-8")
    return text if len(encoded) <= max_bytes else encoded[:max_bytes].decode("utf-8", errors="ignore")


def check_json(value: Any, field: str, *, max_bytes: int) -> str:
    """JSON text of ``value`` (must be serializable, at most ``max_bytes``).

    Strings in it (keys and values) must not hold NUL or lone surrogates, and numbers must be finite: PostgreSQL's
    JSONB rejects all three.
    """
    check_depth(value, field)
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValidationError(field, f"must be JSON-serializable: {exc}") from exc
    _check_json_strings(value, field)
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise ValidationError(
            field, f"is {size} bytes as JSON; the limit is {max_bytes} bytes (limits.max_metadata_bytes)"
        )
    return text


def check_depth(value: Any, field: str) -> None:
    """Refuse lists and objects nested deeper than :data:`MAX_JSON_DEPTH` (checked without recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (Mapping, list, tuple, set)):
            if depth >= MAX_JSON_DEPTH:
                raise ValidationError(field, f"is nested more than {MAX_JSON_DEPTH} levels deep")
            children = list(item.values()) if isinstance(item, Mapping) else list(item)
            stack.extend((child, depth + 1) for child in children)


def checked_copy(model: M, *, keep: tuple[str, ...] = ()) -> M:
    """A deep copy of a model whose container fields were first held to :data:`MAX_JSON_DEPTH` (deep copying a
    deeper value raises RecursionError), each named in the error.

    Fields in ``keep`` are neither checked nor copied: the copy holds the caller's object, which the caller replaces
    with a checked one of its own (an embedding: ``Embedder.check`` builds a new list; deep-copying hundreds of
    floats first only costs time)."""
    for name in type(model).model_fields:
        if name not in keep:
            check_depth(getattr(model, name), name)
    if not keep:
        return model.model_copy(deep=True)
    kept = {name: getattr(model, name) for name in keep}
    # pydantic deep-copies before it applies ``update``: the kept values are not copied
    return model.model_copy(update=dict.fromkeys(keep)).model_copy(deep=True, update=kept)


def _check_json_strings(value: Any, field: str) -> None:
    # Iterative: json.dumps already bounded the depth, and this must not hit the recursion limit either.
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            _check_chars(item, field)
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def check_range(value: float, field: str, low: float, high: float) -> float:
    """A finite number within [low, high]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not (low <= value <= high):
        raise ValidationError(field, f"must be between {low} and {high}, got {value!r}")
    return float(value)


def check_int(value: Any, field: str, *, low: int = _INT64[0], high: int = _INT64[1]) -> int:
    """An integer (not a bool) within [low, high]; the default range is what the graph stores (64 bits)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(field, f"must be an integer, got {type(value).__name__}")
    if not (low <= value <= high):
        raise ValidationError(field, f"must be between {low} and {high}, got {value}")
    return value


#: The instants every store can hold and compute with: a day inside Python's year 1-9999 range in UTC (year 1 at
#: +05:00 is year 0 in UTC, which neither Python nor PostgreSQL represents).
_DATETIME_RANGE = (datetime(1, 1, 2, tzinfo=UTC), datetime(9999, 12, 30, tzinfo=UTC))


def check_datetime(value: Any, field: str, *, low: datetime = _DATETIME_RANGE[0],
                   high: datetime = _DATETIME_RANGE[1]) -> datetime:
    """A ``datetime`` within [low, high] (naive means UTC, as the models take it); returns it timezone-aware."""
    if not isinstance(value, datetime):
        raise ValidationError(field, f"must be a datetime, got {type(value).__name__}")
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if not (low <= aware <= high):
        raise ValidationError(field, f"must be between {low.isoformat()} and {high.isoformat()}, got "
                                     f"{aware.isoformat()}")
    return aware

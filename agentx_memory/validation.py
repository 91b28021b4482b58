"""Input checks shared by every write path. Each failure is a ValidationError naming the field and the limit."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from .errors import ValidationError
from .models import GLOBAL_CHANNEL

__all__ = ["check_channel", "check_channels", "check_id", "check_json", "check_range", "check_text"]

_CHANNEL = re.compile(r"^[a-z0-9](?:[a-z0-9._-]{0,98}[a-z0-9])?$")
_ID_MAX = 100


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
    out: list[str] = []
    for ch in [*(channels or []), *([active] if active else []), GLOBAL_CHANNEL]:
        check_channel(ch, "channels")
        if ch not in out:
            out.append(ch)
    return out


def check_id(value: Any, field: str, *, max_len: int = _ID_MAX) -> str:
    """A non-empty id string of at most ``max_len`` characters."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field, "must be a non-empty string")
    if len(value) > max_len:
        raise ValidationError(field, f"is {len(value)} characters; the limit is {max_len}")
    return value


def check_text(value: Any, field: str, *, max_bytes: int, limit_name: str = "") -> str:
    """Non-empty text of at most ``max_bytes`` UTF-8 bytes."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field, "must not be empty")
    if "\x00" in value:
        raise ValidationError(field, "must not contain NUL characters (\\x00); neither database stores them in text")
    size = len(value.encode("utf-8"))
    if size > max_bytes:
        hint = f" ({limit_name})" if limit_name else ""
        raise ValidationError(field, f"is {size} bytes; the limit is {max_bytes} bytes{hint}")
    return value


def check_json(value: Any, field: str, *, max_bytes: int) -> str:
    """JSON text of ``value`` (must be serializable, at most ``max_bytes``)."""
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(field, f"must be JSON-serializable: {exc}") from exc
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise ValidationError(
            field, f"is {size} bytes as JSON; the limit is {max_bytes} bytes (limits.max_metadata_bytes)"
        )
    return text


def check_range(value: float, field: str, low: float, high: float) -> float:
    """A number within [low, high]."""
    if not isinstance(value, (int, float)) or not (low <= value <= high):
        raise ValidationError(field, f"must be between {low} and {high}, got {value!r}")
    return float(value)

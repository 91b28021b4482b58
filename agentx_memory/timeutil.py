"""Time conversions: the graph stores epoch milliseconds (UTC); Python uses aware datetimes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload

__all__ = ["from_ms", "now_ms", "to_ms"]


@overload
def to_ms(value: datetime) -> int: ...
@overload
def to_ms(value: None) -> None: ...
@overload
def to_ms(value: datetime | None) -> int | None: ...


def to_ms(value: datetime | None) -> int | None:
    """Aware (or naive = UTC) datetime to epoch milliseconds (None stays None)."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return int(value.timestamp() * 1000)


@overload
def from_ms(value: float) -> datetime: ...
@overload
def from_ms(value: None) -> None: ...
@overload
def from_ms(value: float | None) -> datetime | None: ...


def from_ms(value: float | None) -> datetime | None:
    """Epoch milliseconds to an aware UTC datetime."""
    if value is None:
        return None
    return datetime.fromtimestamp(value / 1000, tz=UTC)


def now_ms() -> int:
    """The current time in epoch milliseconds."""
    return to_ms(datetime.now(UTC))

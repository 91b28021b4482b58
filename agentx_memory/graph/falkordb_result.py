"""FalkorDB's compact replies read straight into the port's rows (dicts, lists and scalars), without the client.

The ``falkordb`` client reads a reply value by value through coroutines (one ``await`` per cell and per map entry:
a recall's 30 facts of 16 properties are some 540), and the adapter then copies its ordered dicts into plain ones.
A recall's graph statements return scalars, lists and maps only, so :func:`rows` reads those in one plain pass; a
reply holding a node, an edge, a path or a temporal value (their properties are named through the graph's schema,
which only the client keeps) raises :class:`NeedsClient`, and the adapter has the client read that reply instead.
"""

from __future__ import annotations

from typing import Any, Final

from redis.exceptions import ResponseError

__all__ = ["NeedsClient", "rows"]

# FalkorDB's compact value types (``ResultSetScalarTypes`` in the client).
_NULL: Final = 1
_STRING: Final = 2
_INTEGER: Final = 3
_BOOLEAN: Final = 4
_DOUBLE: Final = 5
_ARRAY: Final = 6
_MAP: Final = 10
_POINT: Final = 11
_VECTORF32: Final = 12


class NeedsClient(Exception):
    """The reply holds a value only the client reads (a node, edge, path, temporal value or an unknown type)."""


def rows(reply: list[Any]) -> list[dict[str, Any]]:
    """The rows of a ``GRAPH.QUERY … --compact`` reply, keyed by column name; a run-time error in the reply is raised
    as the client raises it (:class:`redis.exceptions.ResponseError`)."""
    if reply and isinstance(reply[-1], ResponseError):
        raise reply[-1]
    if reply and isinstance(reply[0], ResponseError):
        raise reply[0]
    if len(reply) == 1:  # statistics only: a statement that returns nothing
        return []
    names = [column[1] for column in reply[0]]
    return [dict(zip(names, [_value(cell[0], cell[1]) for cell in row], strict=True)) for row in reply[1]]


def _value(kind: int, raw: Any) -> Any:
    # ordered by how often a recall's rows hold each kind
    if kind == _STRING:
        return _text(raw)
    if kind == _INTEGER:
        return int(raw)
    if kind == _NULL:
        return None
    if kind == _DOUBLE:
        return float(raw)
    if kind == _MAP:  # keys and values alternate; a string value (most of them) is read inline
        return {key if type(key) is str else _text(key): cell[1] if cell[0] == _STRING and type(cell[1]) is str
                else _value(cell[0], cell[1]) for key, cell in zip(raw[::2], raw[1::2], strict=True)}
    if kind == _ARRAY:
        return [_value(cell[0], cell[1]) for cell in raw]
    if kind == _BOOLEAN:
        return (raw.decode() if isinstance(raw, bytes) else raw) == "true"
    if kind == _VECTORF32:
        return [float(x) for x in raw]
    if kind == _POINT:
        return {"latitude": float(raw[0]), "longitude": float(raw[1])}
    raise NeedsClient(kind)


def _text(raw: Any) -> str:
    """A string value or map key as the client reads it (bytes only where the connection does not decode)."""
    return raw if type(raw) is str else raw.decode() if isinstance(raw, bytes) else str(raw)

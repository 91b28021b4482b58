"""The ``AGENTX_*`` environment read into the nested values of the settings models.

``AGENTX_RETRIEVAL__EPISODIC_WEIGHT=0.4`` is ``{"retrieval": {"episodic_weight": "0.4"}}``; a whole section may be
given as JSON (``AGENTX_RETRIEVAL='{"episodic_weight": 0.4}'``), which the section's own variables then override; a
setting that holds a list, a dict or a model is read as JSON too (``AGENTX_SECURITY__ENCRYPTION_KEYS='{"k2": "..."}'``).
Names are matched without regard to case, variables that name no setting at the top level are left alone
(``AGENTX_HOME`` is read by the settings themselves), and values stay strings for pydantic to validate, so a bad one
is reported with its setting's range. Nothing is read from a ``.env`` file.

This replaces pydantic-settings, whose import (asyncio, its cloud providers, dotenv) cost about a third of the CLI's
0.3 s start-up budget (issue 17) for the one source used here.
"""

from __future__ import annotations

import json
import os
import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from .errors import ConfigurationError

__all__ = ["deep_update", "environment_values"]

_COMPLEX = (list, dict, tuple, set, frozenset)


def environment_values(model: type[BaseModel], prefix: str, *, nested: str = "__",
                       environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The values ``environ`` (the process environment by default) gives ``model``'s fields, nested at ``nested``.

    Raises :class:`ConfigurationError` naming the variable when a value that must be JSON is not."""
    source = os.environ if environ is None else environ
    prefix = prefix.lower()
    whole: dict[str, Any] = {}
    parts: dict[str, Any] = {}
    for name, raw in sorted(source.items()):
        key = name.lower()
        if not key.startswith(prefix):
            continue
        path = key[len(prefix):].split(nested)
        if path[0] not in model.model_fields or not all(path):
            continue
        annotation = _annotation_at(model, path)
        value: Any = _json(name, raw) if _is_complex(annotation) else raw
        if len(path) == 1:
            whole[path[0]] = value
        else:
            deep_update(parts, _nest(path, value))
    return deep_update(whole, parts)


def deep_update(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """``update`` merged into ``base`` in place, dicts key by key at every depth; ``base`` is returned."""
    for key, value in update.items():
        current = base.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            deep_update(current, value)
        else:
            base[key] = dict(value) if isinstance(value, Mapping) else value
    return base


def _nest(path: list[str], value: Any) -> dict[str, Any]:
    nested: Any = value
    for key in reversed(path):
        nested = {key: nested}
    return typing.cast(dict[str, Any], nested)


def _annotation_at(model: type[BaseModel], path: list[str]) -> Any:
    """The annotation of the field ``path`` names, or None when it goes below a model's fields (a dict's keys)."""
    annotation: Any = model
    for key in path:
        owner = _model_of(annotation)
        if owner is None or key not in owner.model_fields:
            return None
        annotation = owner.model_fields[key].annotation
    return annotation


def _model_of(annotation: Any) -> type[BaseModel] | None:
    for candidate in _members(annotation):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _members(annotation: Any) -> tuple[Any, ...]:
    """The types of a union (``X | None``), or the annotation alone."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def _is_complex(annotation: Any) -> bool:
    for member in _members(annotation):
        origin = typing.get_origin(member) or member
        if isinstance(origin, type) and (issubclass(origin, _COMPLEX) or issubclass(origin, BaseModel)):
            return True
    return False


def _json(name: str, raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ConfigurationError(f"setting {name} could not be read (expected JSON): {exc}") from exc

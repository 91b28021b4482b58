"""User profiles in PostgreSQL ``user_profiles``: preferences, expertise, communication style. Updates merge."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .context import MemoryContext
from .errors import ValidationError
from .models import UserProfile
from .validation import check_id, check_json, check_text

__all__ = ["ProfileStore"]


class ProfileStore:
    """Read and merge user profiles."""

    def __init__(self, ctx: MemoryContext):
        self.ctx = ctx

    async def get_profile(self, user_id: str) -> UserProfile:
        """The user's profile (an empty one if nothing was stored yet)."""
        check_id(user_id, "user_id")
        stored = await self.ctx.sql.profiles.get(user_id)
        return stored if stored is not None else UserProfile(user_id=user_id)

    async def update_profile(self, user_id: str, *, preferences: dict[str, Any] | None = None,
                             expertise_areas: list[Any] | None = None,
                             communication_style: dict[str, Any] | None = None,
                             metadata: dict[str, Any] | None = None) -> UserProfile:
        """Merge into the profile: dicts are merged key by key, expertise areas are a set union.

        ``preferences``, ``communication_style`` and ``metadata`` must be dicts with string keys and JSON values;
        ``expertise_areas`` a list of non-empty strings. Anything else is a ValidationError and nothing is written.
        """
        check_id(user_id, "user_id")
        limit = self.ctx.settings.limits.max_metadata_bytes
        objects = {"preferences": preferences, "communication_style": communication_style, "metadata": metadata}
        for name, value in objects.items():
            if value is not None:
                _check_object(value, name)
            check_json(value, name, max_bytes=limit)
        if expertise_areas is not None:
            _check_areas(expertise_areas)
        check_json(expertise_areas, "expertise_areas", max_bytes=limit)
        expertise: dict[str, Any] = {}  # a set from the first write on (first-seen order)
        for area in expertise_areas or []:
            expertise.setdefault(json.dumps(area, sort_keys=True), area)
        profile = await self.ctx.sql.profiles.merge(
            user_id, preferences=preferences or {}, expertise_areas=list(expertise.values()),
            communication_style=communication_style or {}, metadata=metadata or {},
        )
        await self.ctx.audit.log_write("update", "profile", None, [user_id], user_id=user_id)
        return profile


    # --- preferences (spec 004's PreferenceStore, on the profile's ``preferences``) --------------------------------

    async def set_preference(self, user_id: str, key: str, value: Any) -> None:
        """Set one preference (any JSON value); the others stay."""
        check_text(key, "key", max_bytes=200)
        await self.update_profile(user_id, preferences={key: value})

    async def get_preference(self, user_id: str, key: str) -> Any:
        """One preference, or None when it is not set."""
        check_text(key, "key", max_bytes=200)
        return (await self.get_profile(user_id)).preferences.get(key)

    async def get_all_preferences(self, user_id: str) -> dict[str, Any]:
        """Every preference of the user (empty when none)."""
        return dict((await self.get_profile(user_id)).preferences)

    async def delete_preference(self, user_id: str, key: str) -> bool:
        """Remove one preference; True when it was set."""
        check_id(user_id, "user_id")
        check_text(key, "key", max_bytes=200)
        removed = await self.ctx.sql.profiles.delete_preference(user_id, key)
        if removed:
            await self.ctx.audit.log_write("update", "profile", None, [user_id], {"deleted_preference": key},
                                           user_id=user_id)
        return removed


def _check_object(value: Any, field: str) -> None:
    """A JSON object: a mapping with string keys (the merge is key by key, so a list or a scalar cannot merge)."""
    if not isinstance(value, Mapping):
        raise ValidationError(field, f"must be a dict (a JSON object), got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise ValidationError(field, f"keys must be strings, got {key!r}")


def _check_areas(value: Any) -> None:
    """A list of non-empty strings (a single string would be stored character by character)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple, set, frozenset)):
        raise ValidationError("expertise_areas", f"must be a list of strings, got {type(value).__name__}")
    for area in value:
        check_text(area, "expertise_areas", max_bytes=1000)

"""User profiles in PostgreSQL ``user_profiles``: preferences, expertise, communication style. Updates merge."""

from __future__ import annotations

import json
from typing import Any

from .context import MemoryContext
from .models import UserProfile
from .validation import check_id, check_json

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
        """Merge into the profile: dicts are merged key by key, expertise areas are a set union."""
        check_id(user_id, "user_id")
        limit = self.ctx.settings.limits.max_metadata_bytes
        for name, value in (("preferences", preferences), ("expertise_areas", expertise_areas),
                            ("communication_style", communication_style), ("metadata", metadata)):
            check_json(value, name, max_bytes=limit)
        expertise: dict[str, Any] = {}  # a set from the first write on (JSON equality, first-seen order)
        for area in expertise_areas or []:
            expertise.setdefault(json.dumps(area, sort_keys=True), area)
        profile = await self.ctx.sql.profiles.merge(
            user_id, preferences=preferences or {}, expertise_areas=list(expertise.values()),
            communication_style=communication_style or {}, metadata=metadata or {},
        )
        await self.ctx.audit.log_write("update", "profile", None, [user_id], user_id=user_id)
        return profile

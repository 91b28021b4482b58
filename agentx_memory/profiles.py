"""User profiles in PostgreSQL ``user_profiles``: preferences, expertise, communication style. Updates merge."""

from __future__ import annotations

import json
from typing import Any

from psycopg.types.json import Jsonb

from .context import MemoryContext
from .models import UserProfile
from .validation import check_id, check_json

__all__ = ["ProfileStore"]

_UPSERT = (
    "INSERT INTO user_profiles AS p (user_id, preferences, expertise_areas, communication_style, metadata)"
    " VALUES (%(user_id)s, %(preferences)s, %(expertise)s, %(style)s, %(metadata)s)"
    " ON CONFLICT (user_id) DO UPDATE SET"
    "  preferences = coalesce(p.preferences, '{}') || EXCLUDED.preferences,"
    # a set union that keeps first-seen order (existing areas first, then the new ones)
    "  expertise_areas = (SELECT coalesce(jsonb_agg(u.e ORDER BY u.first), '[]'::jsonb) FROM ("
    "     SELECT x.e, min(x.ord) AS first"
    "     FROM jsonb_array_elements(coalesce(p.expertise_areas, '[]') || EXCLUDED.expertise_areas)"
    "          WITH ORDINALITY AS x(e, ord) GROUP BY x.e) AS u),"
    "  communication_style = coalesce(p.communication_style, '{}') || EXCLUDED.communication_style,"
    "  metadata = coalesce(p.metadata, '{}') || EXCLUDED.metadata,"
    "  updated_at = NOW()"
    " RETURNING user_id, preferences, expertise_areas, communication_style, metadata, created_at, updated_at"
)


class ProfileStore:
    """Read and merge user profiles."""

    def __init__(self, ctx: MemoryContext):
        self.ctx = ctx

    async def get_profile(self, user_id: str) -> UserProfile:
        """The user's profile (an empty one if nothing was stored yet)."""
        check_id(user_id, "user_id")
        rows = await self.ctx.postgres.fetch(
            "SELECT user_id, preferences, expertise_areas, communication_style, metadata, created_at, updated_at"
            " FROM user_profiles WHERE user_id = %s", (user_id,),
        )
        return UserProfile(**rows[0]) if rows else UserProfile(user_id=user_id)

    async def update_profile(self, user_id: str, *, preferences: dict[str, Any] | None = None,
                             expertise_areas: list[Any] | None = None, communication_style: dict[str, Any] | None = None,
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
        rows = await self.ctx.postgres.fetch(_UPSERT, {
            "user_id": user_id, "preferences": Jsonb(preferences or {}), "expertise": Jsonb(list(expertise.values())),
            "style": Jsonb(communication_style or {}), "metadata": Jsonb(metadata or {}),
        })
        await self.ctx.audit.log_write("update", "profile", None, [user_id], user_id=user_id)
        return UserProfile(**rows[0])

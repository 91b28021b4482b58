"""The ``user_profiles`` repository: one row per user, merged into on every update."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, LiteralString

from psycopg.types.json import Jsonb

from ..models import UserProfile
from .postgres import PostgresStore

__all__ = ["ProfileRows"]

_COLUMNS: Final[LiteralString] = (
    "user_id, preferences, expertise_areas, communication_style, metadata, created_at, updated_at"
)

GET_PROFILE: Final[LiteralString] = "SELECT " + _COLUMNS + " FROM user_profiles WHERE user_id = %s"

#: Insert, or merge into the stored profile: dicts key by key, expertise areas as a set union that keeps first-seen
#: order (the stored areas first, then the new ones).
MERGE_PROFILE: Final[LiteralString] = (
    "INSERT INTO user_profiles AS p (user_id, preferences, expertise_areas, communication_style, metadata)"
    " VALUES (%(user_id)s, %(preferences)s, %(expertise)s, %(style)s, %(metadata)s)"
    " ON CONFLICT (user_id) DO UPDATE SET"
    "  preferences = coalesce(p.preferences, '{}') || EXCLUDED.preferences,"
    "  expertise_areas = (SELECT coalesce(jsonb_agg(u.e ORDER BY u.first), '[]'::jsonb) FROM ("
    "     SELECT x.e, min(x.ord) AS first"
    "     FROM jsonb_array_elements(coalesce(p.expertise_areas, '[]') || EXCLUDED.expertise_areas)"
    "          WITH ORDINALITY AS x(e, ord) GROUP BY x.e) AS u),"
    "  communication_style = coalesce(p.communication_style, '{}') || EXCLUDED.communication_style,"
    "  metadata = coalesce(p.metadata, '{}') || EXCLUDED.metadata,"
    "  updated_at = NOW()"
    " RETURNING " + _COLUMNS
)


class ProfileRows:
    """Reads and merges ``user_profiles`` rows as :class:`~agentx_memory.models.UserProfile`."""

    def __init__(self, store: PostgresStore):
        self.store = store

    async def get(self, user_id: str) -> UserProfile | None:
        """The stored profile, or ``None`` when nothing was stored for the user."""
        rows = await self.store.fetch(GET_PROFILE, (user_id,), what="reading user_profiles")
        return UserProfile(**rows[0]) if rows else None

    async def merge(self, user_id: str, *, preferences: Mapping[str, Any], expertise_areas: Sequence[Any],
                    communication_style: Mapping[str, Any], metadata: Mapping[str, Any]) -> UserProfile:
        """Create the profile or merge into it (see :data:`MERGE_PROFILE`); return it as stored."""
        rows = await self.store.fetch(MERGE_PROFILE, {
            "user_id": user_id, "preferences": Jsonb(dict(preferences)), "expertise": Jsonb(list(expertise_areas)),
            "style": Jsonb(dict(communication_style)), "metadata": Jsonb(dict(metadata)),
        }, what="writing user_profiles")
        return UserProfile(**rows[0])

"""The ``user_profiles`` repository: one row per user, merged into on every update."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final, LiteralString

from psycopg.types.json import Jsonb

from ..models import UserProfile
from .postgres import PostgresStore

__all__ = ["ProfileRows", "profile_from_row"]

log = logging.getLogger(__name__)

_COLUMNS: Final[LiteralString] = (
    "user_id, preferences, expertise_areas, communication_style, metadata, created_at, updated_at"
)

GET_PROFILE: Final[LiteralString] = "SELECT " + _COLUMNS + " FROM user_profiles WHERE user_id = %s"


def _stored_object(column: LiteralString) -> LiteralString:
    """The stored value of a JSON-object column as an object, whatever an older version left there: an object as it
    is; an array (``'{}' || [1]`` stored ``[{}, 1]`` before inputs were checked) as the merge of its objects, in
    order; anything else (NULL, a scalar) as ``{}``. Reads do the same (:func:`profile_from_row`)."""
    return (
        "(CASE jsonb_typeof(p." + column + ") WHEN 'object' THEN p." + column
        + " WHEN 'array' THEN (SELECT coalesce(jsonb_object_agg(kv.key, kv.value ORDER BY x.ord), '{}'::jsonb)"
        " FROM jsonb_array_elements(p." + column + ") WITH ORDINALITY AS x(e, ord),"
        " jsonb_each(CASE jsonb_typeof(x.e) WHEN 'object' THEN x.e ELSE '{}'::jsonb END) AS kv)"
        " ELSE '{}'::jsonb END)"
    )


#: The stored expertise areas as an array: an array as it is, a lone string as a one-element array, else empty.
_STORED_AREAS: Final[LiteralString] = (
    "(CASE jsonb_typeof(p.expertise_areas) WHEN 'array' THEN p.expertise_areas"
    " WHEN 'string' THEN jsonb_build_array(p.expertise_areas) ELSE '[]'::jsonb END)"
)

#: Insert, or merge into the stored profile: dicts key by key, expertise areas as a set union that keeps first-seen
#: order (the stored areas first, then the new ones). A stored value of the wrong JSON type is read as
#: :func:`_stored_object` says, so an update also repairs a row written before inputs were checked.
MERGE_PROFILE: Final[LiteralString] = (
    "INSERT INTO user_profiles AS p (user_id, preferences, expertise_areas, communication_style, metadata)"
    " VALUES (%(user_id)s, %(preferences)s, %(expertise)s, %(style)s, %(metadata)s)"
    " ON CONFLICT (user_id) DO UPDATE SET"
    "  preferences = " + _stored_object("preferences") + " || EXCLUDED.preferences,"
    "  expertise_areas = (SELECT coalesce(jsonb_agg(u.e ORDER BY u.first), '[]'::jsonb) FROM ("
    "     SELECT x.e, min(x.ord) AS first"
    "     FROM jsonb_array_elements(" + _STORED_AREAS + " || EXCLUDED.expertise_areas)"
    "          WITH ORDINALITY AS x(e, ord) GROUP BY x.e) AS u),"
    "  communication_style = " + _stored_object("communication_style") + " || EXCLUDED.communication_style,"
    "  metadata = " + _stored_object("metadata") + " || EXCLUDED.metadata,"
    "  updated_at = NOW()"
    " RETURNING " + _COLUMNS
)


#: One preference removed (a no-op when absent): whether it was there; no row when the user has no profile.
DELETE_PREFERENCE: Final[LiteralString] = (
    "UPDATE user_profiles AS p SET preferences = " + _stored_object("preferences") + " - %(key)s,"
    " updated_at = NOW()"
    " FROM (SELECT p.user_id, " + _stored_object("preferences") + " ? %(key)s AS had"
    "       FROM user_profiles AS p WHERE p.user_id = %(user_id)s) AS old"
    " WHERE p.user_id = old.user_id RETURNING old.had"
)


def profile_from_row(row: Mapping[str, Any]) -> UserProfile:
    """A :class:`UserProfile` from a ``user_profiles`` row; never fails on what is stored.

    A row written before inputs were checked may hold the wrong JSON type: an object column that is an array keeps
    the merge of its objects (other entries are dropped), any other value becomes ``{}``; expertise areas that are a
    string become a one-element list, any other non-list ``[]``. Each repair is logged as a warning; the next
    ``update_profile`` stores the repaired form.
    """
    user_id = row["user_id"]
    fields: dict[str, Any] = {"user_id": user_id, "created_at": row.get("created_at"),
                              "updated_at": row.get("updated_at")}
    for name in ("preferences", "communication_style", "metadata"):
        value = row.get(name)
        if isinstance(value, dict):
            fields[name] = value
            continue
        merged: dict[str, Any] = {}
        if isinstance(value, list):
            for entry in value:
                if isinstance(entry, dict):
                    merged.update(entry)
        if value is not None:
            log.warning("user_profiles row of user %r: %s is a JSON %s, not an object; read as %r (the next "
                        "update_profile stores that)", user_id, name, type(value).__name__, merged)
        fields[name] = merged
    areas = row.get("expertise_areas")
    if not isinstance(areas, list):
        repaired = [areas] if isinstance(areas, str) else []
        if areas is not None:
            log.warning("user_profiles row of user %r: expertise_areas is a JSON %s, not an array; read as %r",
                        user_id, type(areas).__name__, repaired)
        areas = repaired
    fields["expertise_areas"] = areas
    return UserProfile(**fields)


class ProfileRows:
    """Reads and merges ``user_profiles`` rows as :class:`~agentx_memory.models.UserProfile`."""

    def __init__(self, store: PostgresStore):
        self.store = store

    async def get(self, user_id: str) -> UserProfile | None:
        """The stored profile, or ``None`` when nothing was stored for the user."""
        rows = await self.store.read(GET_PROFILE, (user_id,), what="reading user_profiles")
        return profile_from_row(rows[0]) if rows else None

    async def merge(self, user_id: str, *, preferences: Mapping[str, Any], expertise_areas: Sequence[Any],
                    communication_style: Mapping[str, Any], metadata: Mapping[str, Any]) -> UserProfile:
        """Create the profile or merge into it (see :data:`MERGE_PROFILE`); return it as stored."""
        rows = await self.store.fetch(MERGE_PROFILE, {
            "user_id": user_id, "preferences": Jsonb(dict(preferences)), "expertise": Jsonb(list(expertise_areas)),
            "style": Jsonb(dict(communication_style)), "metadata": Jsonb(dict(metadata)),
        }, what="writing user_profiles")
        return profile_from_row(rows[0])

    async def delete_preference(self, user_id: str, key: str) -> bool:
        """Remove one preference of the user's profile; True when it was there."""
        rows = await self.store.fetch(DELETE_PREFERENCE, {"user_id": user_id, "key": key},
                                      what="writing user_profiles")
        return bool(rows and rows[0]["had"])

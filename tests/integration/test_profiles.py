"""User profiles on the real embedded PostgreSQL: empty by default, updates merge instead of replacing."""

from __future__ import annotations

import pytest

from agentx_memory.errors import ValidationError


def test_unknown_user_has_an_empty_profile(memory):
    profile = memory.get_profile("nobody")
    assert profile.user_id == "nobody"
    assert (profile.preferences, profile.expertise_areas, profile.communication_style, profile.metadata) == (
        {},
        [],
        {},
        {},
    )
    assert profile.created_at is None
    assert memory._portal.run(memory.core.ctx.postgres.fetch("SELECT count(*) AS n FROM user_profiles"))[0]["n"] == 0


def test_update_profile_merges(memory):
    first = memory.update_profile(preferences={"language": "pt", "units": "metric", "food": {"likes": ["fish"]}},
                                  expertise_areas=["python", "sql", "python"],
                                  communication_style={"tone": "casual", "length": "short"},
                                  metadata={"source": "onboarding"})
    assert first.expertise_areas == ["python", "sql"]  # a set from the start
    assert first.created_at is not None

    second = memory.update_profile(preferences={"units": "imperial", "theme": "dark"},
                                   expertise_areas=["rust", "SQL", "sql"],
                                   communication_style={"length": "long"})
    assert second.preferences == {"language": "pt", "units": "imperial", "theme": "dark", "food": {"likes": ["fish"]}}
    assert second.expertise_areas == ["python", "sql", "rust", "SQL"]  # union, first-seen order kept
    assert second.communication_style == {"tone": "casual", "length": "long"}
    assert second.metadata == {"source": "onboarding"}  # untouched when not given
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at

    # an update with nothing changes nothing
    third = memory.update_profile()
    assert (third.preferences, third.expertise_areas, third.communication_style) == \
        (second.preferences, second.expertise_areas, second.communication_style)
    assert memory.get_profile() == third

    # another user's profile is separate
    bob = memory.update_profile("bob", preferences={"language": "en"})
    assert bob.preferences == {"language": "en"} and bob.expertise_areas == []
    assert memory.get_profile().preferences["language"] == "pt"


def test_update_profile_rejects_bad_input(memory):
    with pytest.raises(ValidationError, match="preferences"):
        memory.update_profile(preferences={"x": object()})
    with pytest.raises(ValidationError, match="preferences"):
        memory.update_profile(preferences={"x": "y" * 20_000})
    with pytest.raises(ValidationError, match="user_id"):
        memory.update_profile("x" * 101, preferences={"a": 1})
    assert memory.get_profile().created_at is None

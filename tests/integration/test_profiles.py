"""User profiles on the real embedded PostgreSQL: empty by default, updates merge instead of replacing."""

from __future__ import annotations

import pytest

from agentx_memory import AgentMemory, Turn
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


@pytest.mark.parametrize(("field", "value"), [
    ("preferences", [1]),
    ("preferences", "dark mode"),
    ("preferences", {1: "one"}),
    ("preferences", {"x": "\ud800"}),
    ("metadata", [{"a": 1}]),
    ("communication_style", "formal"),
    ("expertise_areas", "rust"),
    ("expertise_areas", [1, 2]),
    ("expertise_areas", {"rust": True}),
    ("expertise_areas", ["rust", ""]),
])
def test_update_profile_checks_types_before_writing(memory, field, value):
    """Issue 11 item 3: preferences=[1] stored [{}, 1] and then failed; expertise_areas="rust" stored r, u, s, t."""
    memory.update_profile(preferences={"language": "pt"}, expertise_areas=["python"])
    before = memory.get_profile()
    with pytest.raises(ValidationError) as caught:
        memory.update_profile(**{field: value})
    assert caught.value.field.startswith(field)
    assert memory.get_profile() == before


def test_a_profile_broken_by_the_old_bug_still_loads_and_heals(memory, caplog):
    """Rows written before the type checks (a JSON array where an object belongs, a string for the areas, NULL)
    load with what is usable in them, a warning in the log, and the next update repairs them."""
    from tests.conftest import sql

    sql(memory, "INSERT INTO user_profiles (user_id, preferences, expertise_areas, communication_style, metadata)"
                " VALUES ('alice', '[{\"language\": \"pt\"}, 1]', '\"rust\"', '\"formal\"', NULL) RETURNING user_id")
    with caplog.at_level("WARNING", logger="agentx_memory"):
        profile = memory.get_profile()
    assert profile.preferences == {"language": "pt"}
    assert profile.expertise_areas == ["rust"]
    assert (profile.communication_style, profile.metadata) == ({}, {})
    assert "user_profiles" in caplog.text and "alice" in caplog.text
    assert memory.remember("where do we fly?").user_context.preferences == {"language": "pt"}

    healed = memory.update_profile(preferences={"units": "metric"}, expertise_areas=["sql"],
                                   communication_style={"tone": "casual"}, metadata={"source": "test"})
    assert healed.preferences == {"language": "pt", "units": "metric"}
    assert healed.expertise_areas == ["rust", "sql"]
    assert (healed.communication_style, healed.metadata) == ({"tone": "casual"}, {"source": "test"})
    stored = sql(memory, "SELECT jsonb_typeof(preferences) AS p, jsonb_typeof(expertise_areas) AS e,"
                         " jsonb_typeof(communication_style) AS c, jsonb_typeof(metadata) AS m FROM user_profiles")
    assert stored == [{"p": "object", "e": "array", "c": "object", "m": "object"}]


def test_preferences_set_read_delete_and_reach_the_prompt(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        assert memory.get_all_preferences() == {} and memory.delete_preference("units") is False  # no profile yet
        memory.set_preference("units", "metric")
        memory.set_preference("tone", {"style": "brief", "emoji": False})
        memory.set_preference("units", "imperial")  # set again: replaced, the others stay
        memory.set_preference("units", "metric", user_id="bob")
        assert memory.get_preference("units") == "imperial" and memory.get_preference("missing") is None
        assert memory.get_all_preferences() == {"units": "imperial", "tone": {"style": "brief", "emoji": False}}
        memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="What should I pack?"))
        assert '"units": "imperial"' in memory.remember("What should I pack?").to_prompt(500)
        assert memory.delete_preference("units") is True and memory.delete_preference("units") is False
        assert memory.get_all_preferences() == {"tone": {"style": "brief", "emoji": False}}
        assert memory.get_preference("units", user_id="bob") == "metric"  # another user's stays
        for key, value in (("", 1), ("units", float("nan"))):
            with pytest.raises(ValidationError):
                memory.set_preference(key, value)
        assert memory.get_all_preferences() == {"tone": {"style": "brief", "emoji": False}}

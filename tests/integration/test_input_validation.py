"""Bad input never reaches a server (issue 11 items 1, 7, 13).

Every id of every public call is held to one rule (validation.check_id): ids with surrounding whitespace, a newline,
NUL, a lone surrogate, an empty id or a 5,000-character one used to reach FalkorDB (and crash it for every tenant:
SIGSEGV in ``EnforceUniqueEntity``), or PostgreSQL (a field-less StorageError). Each must raise our ValidationError
naming the field, with nothing written to the graph or to PostgreSQL. The same for text and JSON that PostgreSQL
cannot store (NUL, lone surrogates) and integers beyond their column.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentx_memory import Entity, Fact, Goal, Turn
from agentx_memory.errors import ValidationError
from tests.store_counts import store_counts

#: Ids that look ordinary but are not: each one has crashed FalkorDB or been rejected by PostgreSQL.
BAD_IDS = [" trip", "grep ", "turn-1\n", "", "a\x00b", "a\ud800b", "tab\there", "x" * 5000]



def _turn(**fields: Any) -> Turn:
    return Turn(**{"conversation_id": "trip", "user_id": "alice", "content": "We fly to Lisbon on May 3rd.",
                   **fields})


def _invocation(memory, **fields: Any) -> Any:
    args: dict[str, Any] = {"conversation_id": "trip", "turn_id": None, "tool_name": "grep", "tool_input": {"q": 1},
                            "tool_output": "ok", "success": True, "latency_ms": 5, **fields}
    return memory.record_invocation(**args)


#: (field named by the error, call with the bad id in that field). The first turn, entity, fact, goal and strategy
#: of the setup below exist, so only the bad id can be what fails.
CASES: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "store_turn.id": ("id", lambda m, bad: m.store_turn(_turn(id=bad))),
    "store_turn.conversation_id": ("conversation_id", lambda m, bad: m.store_turn(_turn(conversation_id=bad))),
    "store_turn.user_id": ("user_id", lambda m, bad: m.store_turn(_turn(user_id=bad))),
    "store_turn.model": ("model", lambda m, bad: m.store_turn(_turn(role="assistant", model=bad))),
    "store_turns.id": ("turns[1].id", lambda m, bad: m.store_turns([_turn(), _turn(id=bad)])),
    "get_conversation": ("conversation_id", lambda m, bad: m.get_conversation(bad)),
    "working": ("conversation_id", lambda m, bad: m.working("alice", bad)),
    "upsert_entity.id": ("id", lambda m, bad: m.upsert_entity(Entity(id=bad, user_id="alice", name="Porto"))),
    "upsert_entity.user_id": ("user_id", lambda m, bad: m.upsert_entity(Entity(user_id=bad, name="Porto"))),
    "get_entity": ("entity_id", lambda m, bad: m.get_entity(bad)),
    "get_entity_graph": ("entity_ids", lambda m, bad: m.get_entity_graph(["e1", bad])),
    "create_relationship.source_id": ("source_id", lambda m, bad: m.create_relationship(bad, "e1", "KNOWS")),
    "create_relationship.target_id": ("target_id", lambda m, bad: m.create_relationship("e1", bad, "KNOWS")),
    "learn_fact.id": ("id", lambda m, bad: m.learn_fact(Fact(id=bad, user_id="alice", claim="Lisbon is sunny"))),
    "learn_fact.user_id": ("user_id", lambda m, bad: m.learn_fact(Fact(user_id=bad, claim="Lisbon is sunny"))),
    "learn_fact.source_turn_id": ("source_turn_id", lambda m, bad: m.learn_fact(
        Fact(user_id="alice", claim="Lisbon is sunny", source_turn_id=bad))),
    "learn_fact.conversation_id": ("conversation_id", lambda m, bad: m.learn_fact(
        Fact(user_id="alice", claim="Lisbon is sunny", conversation_id=bad))),
    "learn_fact.entity_ids": ("entity_ids", lambda m, bad: m.learn_fact(
        Fact(user_id="alice", claim="Lisbon is sunny", entity_ids=["e1", bad]))),
    "get_fact": ("fact_id", lambda m, bad: m.get_fact(bad)),
    "promote_to_global": ("fact_id", lambda m, bad: m.promote_to_global(bad, "it holds everywhere")),
    "record_invocation.conversation_id": ("conversation_id", lambda m, bad: _invocation(m, conversation_id=bad)),
    "record_invocation.turn_id": ("turn_id", lambda m, bad: _invocation(m, turn_id=bad)),
    "record_invocation.tool_name": ("tool_name", lambda m, bad: _invocation(m, tool_name=bad)),
    "record_invocation.invocation_id": ("invocation_id", lambda m, bad: _invocation(m, invocation_id=bad)),
    "record_invocation.task_type": ("task_type", lambda m, bad: _invocation(m, task_type=bad)),
    "record_invocation.user_id": ("user_id", lambda m, bad: _invocation(m, user_id=bad)),
    "learn_strategy.tool_sequence": ("tool_sequence", lambda m, bad: m.learn_strategy(
        "search then read", tool_sequence=["grep", bad])),
    "learn_strategy.from_conversation_id": ("from_conversation_id", lambda m, bad: m.learn_strategy(
        "search then read", from_conversation_id=bad)),
    "learn_strategy.user_id": ("user_id", lambda m, bad: m.learn_strategy("search then read", user_id=bad)),
    "reinforce_strategy": ("strategy_id", lambda m, bad: m.reinforce_strategy(bad, True)),
    "add_goal.id": ("id", lambda m, bad: m.add_goal(Goal(id=bad, user_id="alice", description="visit Porto"))),
    "add_goal.user_id": ("user_id", lambda m, bad: m.add_goal(Goal(user_id=bad, description="visit Porto"))),
    "add_goal.parent_id": ("parent_id", lambda m, bad: m.add_goal(
        Goal(user_id="alice", description="visit Porto", parent_id=bad))),
    "add_goal.blocked_by": ("blocked_by", lambda m, bad: m.add_goal(
        Goal(user_id="alice", description="visit Porto", blocked_by=["g1", bad]))),
    "get_goal": ("goal_id", lambda m, bad: m.get_goal(bad)),
    "complete_goal": ("goal_id", lambda m, bad: m.complete_goal(bad)),
    "block_goal.goal_id": ("goal_id", lambda m, bad: m.block_goal(bad, "g1")),
    "block_goal.blocker_id": ("blocker_id", lambda m, bad: m.block_goal("g1", bad)),
    "update_profile.user_id": ("user_id", lambda m, bad: m.update_profile(bad, preferences={"a": 1})),
    "get_profile.user_id": ("user_id", lambda m, bad: m.get_profile(bad)),
}


def _setup(memory) -> None:
    memory.store_turn(_turn(id="t1"))
    memory.upsert_entity(Entity(id="e1", user_id="alice", name="Lisbon", type="place"))
    memory.learn_fact(Fact(id="f1", user_id="alice", claim="Lisbon is in Portugal", entity_ids=["e1"]))
    memory.add_goal(Goal(id="g1", user_id="alice", description="plan the trip"))
    memory.learn_strategy("search then read", tool_sequence=["grep"])


@pytest.mark.parametrize("case", list(CASES))
def test_bad_ids_are_rejected_before_any_write(memory, case):
    field, call = CASES[case]
    _setup(memory)
    before = store_counts(memory)
    for bad in BAD_IDS:
        with pytest.raises(ValidationError) as caught:
            call(memory, bad)
        assert caught.value.field == field, (bad, str(caught.value))
    assert store_counts(memory) == before
    # the server survived: the graph still answers
    assert memory.get_entity("e1").name == "Lisbon"


def test_wrong_typed_ids_are_our_validation_error(memory):
    for bad in (None, 7, ["a"]):
        with pytest.raises(ValidationError, match="entity_id"):
            memory.get_entity(bad)
        with pytest.raises(ValidationError, match="tool_sequence"):
            memory.learn_strategy("search then read", tool_sequence=[bad])
    with pytest.raises(ValidationError, match="tool_sequence"):
        memory.learn_strategy("search then read", tool_sequence="grep")  # a string is not a list of tools


def test_ids_at_the_column_width_are_stored(memory):
    stored = memory.store_turn(_turn(id="t" * 100, conversation_id="c" * 200, user_id="u" * 100))
    assert (len(stored.id), len(stored.conversation_id)) == (100, 200)
    entity = memory.upsert_entity(Entity(id="e" * 100, user_id="alice", name="Porto"))
    assert memory.get_entity(entity.id).id == "e" * 100


BAD_VALUES: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "lone surrogate in content": ("content", lambda m: m.store_turn(_turn(content="caf\udce9 au lait"))),
    "NUL in metadata": ("metadata", lambda m: m.store_turn(_turn(metadata={"note": "a\x00b"}))),
    "lone surrogate in a metadata key": ("metadata", lambda m: m.store_turn(_turn(metadata={"\ud800": 1}))),
    "NaN in metadata": ("metadata", lambda m: m.store_turn(_turn(metadata={"x": float("nan")}))),
    "turn index beyond INTEGER": ("index", lambda m: m.store_turn(_turn(index=99_999_999_999))),
    "negative token_count": ("token_count", lambda m: m.store_turn(_turn(token_count=-5))),
    "token_count beyond INTEGER": ("token_count", lambda m: m.store_turn(_turn(token_count=2**31))),
    "latency beyond INTEGER": ("latency_ms", lambda m: _invocation(m, latency_ms=2**40)),
    "lone surrogate in tool input": ("tool_input", lambda m: _invocation(m, tool_input={"q": "\udfff"})),
    "lone surrogate in an entity name": ("name", lambda m: m.upsert_entity(Entity(user_id="alice", name="\ud800"))),
    "NUL in a claim": ("claim", lambda m: m.learn_fact(Fact(user_id="alice", claim="a\x00b"))),
    "goal priority beyond 64 bits": ("priority", lambda m: m.add_goal(
        Goal(user_id="alice", description="visit Porto", priority=2**70))),
    "lone surrogate in a goal description": ("description", lambda m: m.add_goal(
        Goal(user_id="alice", description="\ud800"))),
    "lone surrogate in a strategy": ("description", lambda m: m.learn_strategy("\ud800")),
    "lone surrogate in the recall query": ("query", lambda m: m.remember("\ud800")),
}


def test_values_no_store_can_hold_are_rejected_before_any_write(memory):
    _setup(memory)
    before = store_counts(memory)
    for name, (field, call) in BAD_VALUES.items():
        with pytest.raises(ValidationError) as caught:
            call(memory)
        assert caught.value.field == field, (name, str(caught.value))
    assert store_counts(memory) == before


#: A lone surrogate cannot be encoded as UTF-8: it reached the drivers as a raw UnicodeEncodeError (issue 11 item 13).
_S = "\ud800x"

SURROGATE_CALLS: dict[str, Callable[[Any], Any]] = {
    "turn role": lambda m: m.store_turn(_turn(role=_S)),
    "turn channel": lambda m: m.store_turn(_turn(channel=_S)),
    "recent turns channels": lambda m: m.get_recent_turns(channels=[_S]),
    "entity type": lambda m: m.upsert_entity(Entity(user_id="alice", name="Porto", type=_S)),
    "entity alias": lambda m: m.upsert_entity(Entity(user_id="alice", name="Porto", aliases=[_S])),
    "entity description": lambda m: m.upsert_entity(Entity(user_id="alice", name="Porto", description=_S)),
    "entity property key": lambda m: m.upsert_entity(Entity(user_id="alice", name="Porto", properties={_S: 1})),
    "relationship type": lambda m: m.create_relationship("e1", "e1", _S),
    "relationship property": lambda m: m.create_relationship("e1", "e1", "KNOWS", {"a": _S}),
    "fact source": lambda m: m.learn_fact(Fact(user_id="alice", claim="Lisbon is sunny", source=_S)),
    "fact metadata": lambda m: m.learn_fact(Fact(user_id="alice", claim="Lisbon is sunny", metadata={"a": _S})),
    "promotion reason": lambda m: m.promote_to_global("f1", _S),
    "invocation error message": lambda m: _invocation(m, success=False, error_message=_S),
    "invocation output": lambda m: _invocation(m, tool_output=_S),
    "invocation channel": lambda m: _invocation(m, channel=_S),
    "strategy context": lambda m: m.learn_strategy("search then read", context_pattern=_S),
    "strategy channel": lambda m: m.learn_strategy("search then read", channel=_S),
    "strategy search": lambda m: m.find_strategies(_S),
    "strategy search channels": lambda m: m.find_strategies("search", channels=[_S]),
    "tool stats task type": lambda m: m.get_tool_stats(task_type=_S),
    "tool stats channel": lambda m: m.get_tool_stats(channel=_S),
    "goal status": lambda m: m.add_goal(Goal(user_id="alice", description="visit Porto", status=_S)),
    "goal metadata": lambda m: m.add_goal(Goal(user_id="alice", description="visit Porto", metadata={"a": _S})),
    "goal completion status": lambda m: m.complete_goal("g1", status=_S),
    "goal result": lambda m: m.complete_goal("g1", result=_S),
    "goal list status": lambda m: m.list_goals(status=_S),
    "goal list channels": lambda m: m.list_goals(channels=[_S]),
    "recall channel": lambda m: m.remember("Lisbon", channel=_S),
    "profile preference": lambda m: m.update_profile(preferences={"a": _S}),
    "profile expertise": lambda m: m.update_profile(expertise_areas=[_S]),
}


def test_lone_surrogates_anywhere_are_our_validation_error(memory):
    _setup(memory)
    before = store_counts(memory)
    raised = {}
    for name, call in SURROGATE_CALLS.items():
        try:
            call(memory)
        except Exception as exc:  # the point is which type it is
            raised[name] = type(exc)
    assert {name: kind for name, kind in raised.items() if kind is not ValidationError} == {}
    assert set(raised) == set(SURROGATE_CALLS)  # every call raised
    assert store_counts(memory) == before


def test_a_model_of_the_wrong_kind_is_our_validation_error(memory):
    """``upsert_entity(Turn(...))`` raised AttributeError (issue 11 item 13)."""
    turn = _turn()
    for call, field in ((memory.upsert_entity, "entity"), (memory.learn_fact, "fact"), (memory.add_goal, "goal"),
                        (memory.store_turn, "turns[0]")):
        with pytest.raises(ValidationError) as caught:
            call(Goal(user_id="alice", description="x") if field == "turns[0]" else turn)
        assert caught.value.field == field


def test_recent_turns_arguments_of_the_wrong_type_are_our_validation_error(memory):
    """``hours="24"`` or ``limit="5"`` raised TypeError from a comparison (issue 11 item 13)."""
    for kwargs, field in (({"hours": "24"}, "hours"), ({"hours": float("nan")}, "hours"), ({"hours": True}, "hours"),
                          ({"limit": "5"}, "limit"), ({"limit": 2.5}, "limit"), ({"limit": 0}, "limit")):
        with pytest.raises(ValidationError) as caught:
            memory.get_recent_turns(**kwargs)
        assert caught.value.field == field


def test_recall_arguments_of_the_wrong_type_are_our_validation_error(memory):
    """``top_k="5"`` raised TypeError, ``reference_time="yesterday"`` AttributeError, and ``top_k=2.5`` passed the
    range check that the integer path applies (issue 11 item 13)."""
    for kwargs, field in (({"top_k": "5"}, "top_k"), ({"top_k": 2.5}, "top_k"), ({"top_k": True}, "top_k"),
                          ({"top_k": 0}, "top_k"), ({"time_window_hours": "24"}, "time_window_hours"),
                          ({"time_window_hours": float("nan")}, "time_window_hours"),
                          ({"reference_time": "yesterday"}, "reference_time")):
        with pytest.raises(ValidationError) as caught:
            memory.remember("Lisbon", **kwargs)
        assert caught.value.field == field


def test_instants_outside_what_the_stores_represent_are_our_validation_error(memory):
    """Year 1 at +05:00 is year 0 in UTC: to_ms raised ValueError for facts and goals, PostgreSQL refused it in a
    search; recall around year 1 or 9999 raised OverflowError resolving "last week" (issue 11 item 13)."""
    from datetime import UTC, datetime, timedelta, timezone

    _setup(memory)
    before = store_counts(memory)
    year0 = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5)))
    calls = {
        "timestamp": lambda: memory.store_turn(_turn(timestamp=year0)),
        "first_seen": lambda: memory.upsert_entity(Entity(user_id="alice", name="Porto", first_seen=year0)),
        "created_at": lambda: memory.learn_fact(Fact(user_id="alice", claim="Porto is north", created_at=year0)),
        "deadline": lambda: memory.add_goal(Goal(user_id="alice", description="visit Porto", deadline=year0)),
    }
    for field, call in calls.items():
        with pytest.raises(ValidationError) as caught:
            call()
        assert caught.value.field == field
    with pytest.raises(ValidationError, match="timestamp"):
        _invocation(memory, timestamp=year0)
    for reference in (datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, tzinfo=UTC), year0):
        with pytest.raises(ValidationError) as caught:
            memory.remember("what happened last week", reference_time=reference)
        assert caught.value.field == "reference_time"
    assert store_counts(memory) == before


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


#: Found by the property suite: each raised something other than our ValidationError (a raw TypeError or
#: RecursionError, a StorageError from a server), or was refused only after a write.
_DEEP = {"d": _nested(5000)}
PROPERTY_FINDINGS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "turns without len()": ("turns", lambda m: m.store_turns(5)),  # type: ignore[arg-type]
    "deep turn metadata": ("metadata", lambda m: m.store_turn(_turn(metadata=_DEEP))),
    "deep entity properties": ("properties", lambda m: m.upsert_entity(Entity(user_id="alice", name="X",
                                                                              properties=_DEEP))),
    "deep fact metadata": ("metadata", lambda m: m.learn_fact(Fact(user_id="alice", claim="X", metadata=_DEEP))),
    "deep goal metadata": ("metadata", lambda m: m.add_goal(Goal(user_id="alice", description="X", metadata=_DEEP))),
    "deep tool input": ("tool_input", lambda m: _invocation(m, tool_input=_DEEP)),
    "deep working value": ("value", lambda m: m.working("alice", "trip").set("draft", _DEEP)),
    "deep thought": ("thought", lambda m: m.working("alice", "trip").push_thought(_DEEP)),
    "huge read limit": ("limit", lambda m: m.working("alice", "trip").get_thoughts(10**30)),
    "falsy context pattern": ("context_pattern", lambda m: m.learn_strategy("s", context_pattern={})),  # type: ignore
    "int property keys": ("properties", lambda m: m.create_relationship("e1", "e1", "KNOWS", {1: 2})),
    "index at the column top": ("index", lambda m: m.store_turn(_turn(conversation_id="top", index=2**31 - 1))),
}


@pytest.mark.parametrize("case", list(PROPERTY_FINDINGS))
def test_what_the_property_suite_found_is_our_validation_error_before_any_write(memory, case):
    """Each input the property suite found slipping past validation is refused with our ValidationError naming the
    field, and nothing is written (a relationship with int keys was written, then refused)."""
    _setup(memory)
    before = store_counts(memory)
    field, call = PROPERTY_FINDINGS[case]
    with pytest.raises(ValidationError) as caught:
        call(memory)
    assert field in caught.value.field, str(caught.value)
    assert store_counts(memory) == before


def test_the_last_turn_index_is_taken_and_then_the_conversation_is_full(memory):
    """The largest index stores; the next turn without an index is our ValidationError, not an INTEGER overflow."""
    memory.store_turn(_turn(conversation_id="top", index=2**31 - 2))
    with pytest.raises(ValidationError, match="no turn index left"):
        memory.store_turn(_turn(conversation_id="top", content="one more"))


def test_an_invocation_id_again_is_the_same_call_or_a_conflict(memory):
    """Repeating a tool call (same id and fields, a retry) returns it as logged; the id with other fields is a
    ConflictError with nothing written (it returned the new call while the log kept the first)."""
    from agentx_memory.errors import ConflictError

    memory.store_turn(_turn())
    first = _invocation(memory, invocation_id="inv-1", tool_input={"q": 1.5e20})
    again = _invocation(memory, invocation_id="inv-1", tool_input={"q": 150000000000000000000})
    assert (again.id, again.timestamp, again.tool_name) == (first.id, first.timestamp, "grep")
    with pytest.raises(ConflictError, match="other fields"):
        _invocation(memory, invocation_id="inv-1", tool_name="read", success=False)
    assert [(s["tool_name"], s["usage_count"]) for s in memory.get_tool_stats()] == [("grep", 1)]


def test_turn_metadata_comes_back_from_the_store_as_it_reads_back(memory):
    """JSONB keeps numbers by value: what store_turn returns is what the log holds, so it equals every later read."""
    stored = memory.store_turn(_turn(metadata={"e": 1.5e20, "big": 1e308, "small": 0.25}))
    assert memory.get_conversation("trip")[0].metadata == stored.metadata
    assert stored.metadata["small"] == 0.25 and stored.metadata["e"] == 1.5e20

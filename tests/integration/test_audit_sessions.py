"""Issue 19: every audit entry of an operation that has a session names it in ``session_id`` (a conversation is a
session; the short-term tier's entries carry the tier's session; a recall the ``session_id`` given to remember())."""

from __future__ import annotations

import pytest

from agentx_memory import AgentMemory, Fact, Turn
from tests.conftest import sql


@pytest.fixture
def memory(settings):
    with AgentMemory(settings(audit={"level": "reads"}), user_id="alice") as mem:
        yield mem


def entries(memory) -> list[dict]:
    return sql(memory, "SELECT operation, memory_type, session_id, conversation_id FROM memory_audit_log ORDER BY id")


def test_conversation_operations_carry_the_conversation_as_session(memory):
    turn = memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="I live in Lisbon"))
    memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon", source_turn_id=turn.id,
                           conversation_id="c1"))
    memory.learn_strategy("ask where the user lives", from_conversation_id="c1")
    memory.working(None, "c1").set("topic", "moving")
    rows = entries(memory)
    assert [(r["operation"], r["memory_type"]) for r in rows] == [
        ("store", "episodic"), ("store", "semantic"), ("store", "procedural"), ("set", "working")]
    assert all(r["session_id"] == "c1" and r["conversation_id"] == "c1" for r in rows)


def test_short_term_entries_carry_the_tier_session(memory):
    memory.write_short_term("s-42", "plan", {"step": 1}, memory_type="task_context")
    memory.delete_short_term("s-42", "plan")
    rows = entries(memory)
    assert [(r["operation"], r["session_id"], r["conversation_id"]) for r in rows] == [
        ("store", "s-42", None), ("delete", "s-42", None)]


def test_remember_records_the_session_it_is_given(memory):
    memory.remember("where does alice live", session_id="c7")
    memory.remember("what does alice eat")
    memory.drain()
    # each recall's entry is written in the background, so two entries may land in either order: match by query
    reads = sql(memory, "SELECT query_text, session_id FROM memory_audit_log WHERE operation = 'retrieve'")
    assert {r["query_text"]: r["session_id"] for r in reads} == {"where does alice live": "c7",
                                                                  "what does alice eat": None}


def test_operations_outside_a_session_leave_it_empty(memory):
    memory.set_preference("tone", "brief")
    assert [(r["memory_type"], r["session_id"]) for r in entries(memory)] == [("profile", None)]


def test_a_conversation_id_of_the_longest_length_fits_the_session_column(memory):
    long_id = "c" * 200
    memory.store_turn(Turn(conversation_id=long_id, user_id="alice", content="hello"))
    [row] = entries(memory)
    assert row["session_id"] == long_id

"""Isolation between tenants (issue 11, items 8, 10, 11, 12): one user's ids never reach another user's data."""

from __future__ import annotations

import uuid

import pytest

from agentx_memory import Fact, Turn
from agentx_memory.errors import ConflictError, NotFoundError, ValidationError
from agentx_memory.semantic import _PROMOTION_NS
from tests.conftest import gread, sql


def test_a_conversation_belongs_to_its_first_user_in_either_log(memory):
    """Item 8: B's tool call on an unused conversation id makes it B's; A's turns and tool calls are refused (before
    anything is written) instead of attaching to B's node, and B cannot claim a conversation A started."""
    memory.record_invocation("squat", None, "calc", {}, None, True, 1, user_id="bob")
    with pytest.raises(ConflictError, match="conversation_id"):
        memory.store_turn(Turn(conversation_id="squat", user_id="alice", content="my turn"))
    with pytest.raises(ConflictError, match="conversation_id"):
        memory.record_invocation("squat", None, "calc", {}, None, True, 1, user_id="alice")
    assert sql(memory, "SELECT count(*) AS n FROM conversation_logs WHERE conversation_id = 'squat'")[0]["n"] == 0
    assert sql(memory, "SELECT user_id FROM tool_invocations WHERE conversation_id = 'squat'") == [{"user_id": "bob"}]
    assert gread(memory, "MATCH (t:Turn {conversation_id: 'squat'}) RETURN count(t) AS n")[0]["n"] == 0

    # A starts a conversation: B can neither add tool calls nor turns to it, and A's own writes keep working
    turn = memory.store_turn(Turn(conversation_id="trip", user_id="alice", content="plan the trip"))
    with pytest.raises(ConflictError, match="conversation_id"):
        memory.record_invocation("trip", None, "calc", {}, None, True, 1, user_id="bob")
    with pytest.raises(ConflictError, match="conversation_id"):
        memory.store_turn(Turn(conversation_id="trip", user_id="bob", content="mine now"))
    memory.record_invocation("trip", turn.id, "calc", {}, None, True, 1, user_id="alice")
    memory.store_turn(Turn(conversation_id="trip", user_id="alice", content="second turn"))
    assert [t.content for t in memory.get_conversation("trip", user_id="alice")] == ["plan the trip", "second turn"]
    owners = gread(memory, "MATCH (c:Conversation) WHERE c.id IN ['squat', 'trip'] "
                           "RETURN c.id AS id, c.user_id AS user_id ORDER BY id")
    assert owners == [{"id": "squat", "user_id": "bob"}, {"id": "trip", "user_id": "alice"}]
    attached = gread(memory, "MATCH (c:Conversation {id: 'trip'})-[:HAS_TURN|USED_TOOL]->(x) "
                             "RETURN collect(DISTINCT x.user_id) AS users")
    assert attached == [{"users": ["alice"]}]



def test_without_the_episodic_layer_no_turn_is_returned(memory):
    """Item 12: ``include_episodic=False`` returns no turn, not even the source turn of a returned fact."""
    turn = memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="I moved to Lisbon last spring"))
    fact = memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon", source_turn_id=turn.id))
    with_turns = memory.remember("Where does Alice live? Lisbon", include_episodic=True)
    assert turn.id in {t.id for t in with_turns.turns}
    bundle = memory.remember("Where does Alice live? Lisbon", include_episodic=False)
    assert fact.id in {f.id for f in bundle.facts}
    assert bundle.turns == []


def test_another_user_cannot_pre_create_a_promotion(memory):
    """Item 10: the promoted copy's id is the owner's (uuid5 of user and fact id) and merged as theirs: bob, who knows
    alice's fact id, pre-creates the copy under the old id (uuid5 of the fact id alone) and under a guess of the new
    one with his user id; alice's promotion still works and bob's facts are never linked to hers."""
    fact = memory.learn_fact(Fact(user_id="alice", claim="Alice likes Lisbon"), channel="proj")
    for guess in (uuid.uuid5(_PROMOTION_NS, fact.id), uuid.uuid5(_PROMOTION_NS, f"bob\x1f{fact.id}")):
        memory.learn_fact(Fact(id=str(guess), user_id="bob", claim="squatted"), channel="_global")
    promoted = memory.promote_to_global(fact.id, "seen often", user_id="alice")
    assert (promoted.user_id, promoted.channel, promoted.claim) == ("alice", "_global", "Alice likes Lisbon")
    links = gread(memory, "MATCH (g:Fact)-[:PROMOTED_FROM]->(f:Fact) RETURN g.user_id AS g, f.user_id AS f")
    assert links == [{"g": "alice", "f": "alice"}]
    assert memory.promote_to_global(fact.id, "again", user_id="alice").id == promoted.id  # still idempotent
    with pytest.raises(NotFoundError):  # and bob cannot promote alice's fact
        memory.promote_to_global(fact.id, "mine", user_id="bob")


def test_a_tool_call_names_a_turn_of_its_own_conversation_and_counts_for_its_user_only(memory):
    """Item 11: a turn of another conversation (of the same user) is refused, naming turn_id; the shared Tool node
    keeps no counters mixing users, and each user's statistics count their own calls only."""
    other = memory.store_turn(Turn(conversation_id="c-other", user_id="alice", content="elsewhere"))
    memory.store_turn(Turn(conversation_id="c-main", user_id="alice", content="here"))
    with pytest.raises(ValidationError, match="turn_id"):
        memory.record_invocation("c-main", other.id, "calc", {}, None, True, 1, user_id="alice")
    assert sql(memory, "SELECT count(*) AS n FROM tool_invocations")[0]["n"] == 0
    assert gread(memory, "MATCH (ti:ToolInvocation) RETURN count(ti) AS n")[0]["n"] == 0

    memory.record_invocation("c-main", None, "calc", {}, None, True, 10, user_id="alice")
    for _ in range(3):
        memory.record_invocation("c-bob", None, "calc", {}, None, False, 500, user_id="bob")
    alice = memory.get_tool_stats(user_id="alice")
    assert [(s["tool_name"], s["usage_count"], s["success_count"]) for s in alice] == [("calc", 1, 1)]
    assert gread(memory, "MATCH (t:Tool {name: 'calc'}) RETURN properties(t) AS p") == [{"p": {"name": "calc"}}]

"""The facade's read-only browsing methods (agentx_memory.browse) through the sync twin, on both backends: an agent's
view lists what that agent may read, bad paging is refused naming the field, and browsing is not an access."""

from __future__ import annotations

import pytest

from agentx_memory import Fact, Turn, ValidationError


def test_an_agents_view_browses_only_what_it_may_read(memory):
    planner, coder = memory.for_agent("planner"), memory.for_agent("coder")
    planner.store_turns([Turn(conversation_id="plan", user_id="alice", content="private plan step"),
                         Turn(conversation_id="plan", user_id="alice", content="shared plan step", scope="global")])
    secret = planner.learn_fact(Fact(user_id="alice", claim="the vault combination is 7-3-9", scope="agent"))
    shared = planner.learn_fact(Fact(user_id="alice", claim="the office is in Lisbon"))

    assert [c.turns for c in memory.list_conversations()] == [2]  # the user sees every turn
    assert [c.turns for c in planner.list_conversations()] == [2]
    assert [c.turns for c in coder.list_conversations()] == [1]
    assert [t.content for t in coder.conversation_turns("plan")] == ["shared plan step"]
    private_id = memory.conversation_turns("plan")[0].id
    assert coder.get_turns([private_id]) == [] and len(planner.get_turns([private_id])) == 1
    assert {r.fact.id for r in coder.list_facts()} == {shared.id}
    assert {r.fact.id for r in planner.list_facts()} == {shared.id, secret.id}
    with pytest.raises(KeyError):
        coder.fact_record(secret.id)
    assert memory.memory_overview()["turns"] == 2 and coder.memory_overview()["turns"] == 1


def test_paging_is_bounded_and_browsing_is_not_an_access(memory):
    turns = memory.store_turns([Turn(conversation_id="c", user_id="alice", content=f"turn {i}") for i in range(7)])
    fact = memory.learn_fact(Fact(user_id="alice", claim="Alice likes tea", source_turn_id=turns[3].id))
    page = memory.conversation_turns("c", from_index=2, limit=3)
    assert [t.index for t in page] == [2, 3, 4]
    assert [t.index for t in memory.conversation_turns("c", from_index=page[-1].index + 1, limit=3)] == [5, 6]
    for call, field in ((lambda: memory.list_facts(limit=0), "limit"), (lambda: memory.list_facts(limit=501), "limit"),
                        (lambda: memory.list_entities(offset=-1), "offset"),
                        (lambda: memory.list_facts(status="stale"), "status"),
                        (lambda: memory.conversation_turns("c", from_index=-1), "from_index"),
                        (lambda: memory.audit_trail(limit=10_000), "limit"),
                        (lambda: memory.list_users(limit=0), "limit")):
        with pytest.raises(ValidationError) as raised:
            call()
        assert raised.value.field == field
    memory.drain()
    trail = memory.audit_trail(limit=500)
    record = memory.fact_record(fact.id)
    assert record.source_turn_ids == [turns[3].id] and record.supersedes == []
    for _ in range(3):
        memory.list_facts()
        memory.fact_record(fact.id)
    assert memory.get_fact(fact.id).access_count == 0
    memory.drain()
    assert memory.audit_trail(limit=500) == trail  # no entry for browsing
    assert set(memory.audit_operations()) == {e["operation"] for e in trail}
    assert memory.list_users() == ["alice"] and memory.list_users(after="alice") == []

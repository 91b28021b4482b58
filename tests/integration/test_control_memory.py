"""Control memories (seed 001, issue 15) on both graph backends: rules stored per user with their default global
scope, found by similarity (most severe first among equals), first in every prompt block, and the memory_types
filter of recall."""

from __future__ import annotations

import pytest

from agentx_memory import AgentMemory, ControlMemory, Fact, Turn
from agentx_memory.errors import ConflictError, NotFoundError, ValidationError


def _rule(content: str, **extra) -> ControlMemory:
    return ControlMemory(user_id="alice", content=content, **extra)


def test_rules_are_stored_updated_listed_and_deleted_per_user(settings):
    with AgentMemory(settings(audit={"level": "writes"}), user_id="alice") as memory:
        rule = memory.add_control(_rule("Never use range() for unknown-length pagination",
                                        error_pattern="pagination_incomplete", severity="high",
                                        source_trajectory_id="conv-7"))
        assert rule.channel == "_global" and rule.severity == "high"  # 001's default scope: global
        again = memory.add_control(rule.model_copy(update={"severity": "critical"}))
        assert again.id == rule.id and memory.get_control(rule.id).severity == "critical"
        memory.add_control(_rule("Ask before deleting files", error_pattern="destructive_action"), channel="proj")
        assert [c.content for c in memory.list_controls(channel="proj", error_pattern="pagination_incomplete")] == [
            rule.content]
        assert len(memory.list_controls(channel="proj")) == 2 and len(memory.list_controls()) == 1
        with pytest.raises(ConflictError):  # the id is alice's
            memory.add_control(ControlMemory(id=rule.id, user_id="bob", content="Bob's rule"))
        with pytest.raises(ConflictError):  # a rule does not move channels
            memory.add_control(rule, channel="proj")
        with pytest.raises(NotFoundError):
            memory.get_control(rule.id, user_id="bob")
        for bad in (_rule(""), _rule("x").model_copy(update={"severity": "urgent"})):
            with pytest.raises(ValidationError):
                memory.add_control(bad)
        assert memory.delete_control(rule.id) and not memory.delete_control(rule.id)


def test_rules_come_first_in_the_prompt_and_memory_types_filter_recall(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.store_turn(Turn(conversation_id="c1", user_id="alice",
                               content="We paginate the orders API with a cursor."))
        memory.learn_fact(Fact(user_id="alice", claim="The orders API returns 100 items per page", confidence=0.9))
        memory.add_control(_rule("Never use range() for paginated API results", severity="high"))
        memory.add_control(_rule("Reply in Portuguese when the user writes Portuguese", severity="low"))
        memory.add_control(ControlMemory(user_id="bob", content="Bob's rule about paginated API results"))

        bundle = memory.remember("How do I page through the orders API?", top_k=5)
        assert bundle.controls and bundle.controls[0].item.content.startswith("Never use range()")
        assert all(c.item.user_id == "alice" for c in bundle.controls)  # never another user's rules
        prompt = bundle.to_prompt(max_tokens=400)
        assert prompt.startswith("[Control Memory -- Rules to Follow]\n- (high) Never use range()")
        assert prompt.index("[Control Memory") < prompt.index("[Episodic Memory")

        only_rules = memory.remember("How do I page through the orders API?", memory_types=["control"])
        assert only_rules.controls and not (only_rules.turns or only_rules.facts or only_rules.strategies)
        no_rules = memory.remember("How do I page through the orders API?", memory_types=["episodic", "semantic"])
        assert not no_rules.controls and no_rules.turns and no_rules.facts
        for bad in (["rules"], "control", []):
            with pytest.raises(ValidationError) as refused:
                memory.remember("anything", memory_types=bad)
            assert refused.value.field == "memory_types"


def test_a_project_rule_holds_in_its_channel_only(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.add_control(_rule("Run the migrations before the tests"), channel="proj")
        assert memory.find_controls("migrations and tests", channel="proj")[0].content.startswith("Run the")
        assert memory.find_controls("migrations and tests", channel="other") == []
        assert memory.remember("migrations and tests", channel="proj").controls
        assert not memory.remember("migrations and tests", channel="other").controls

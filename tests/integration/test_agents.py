"""Agents of a user (issue 16, seeds 001 and 002) on both graph backends: what an agent writes is its own with the
seed's default scopes, and no read path of another agent returns its private memories, while the user's view and
the agent itself see them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, ClosedError, ControlMemory, Entity, Fact, NotFoundError, Turn, ValidationError


def _texts(bundle) -> str:
    return " ".join(str(s.item.model_dump()) for s in bundle.all_scored()) + " ".join(
        c.item.content for c in bundle.controls)


@pytest.fixture
def agents(memory):
    planner, coder = memory.for_agent("planner"), memory.for_agent("coder")
    vault = memory.upsert_entity(Entity(user_id="alice", name="Vault", type="place"))
    private = planner.store_turns([
        Turn(user_id="alice", conversation_id="plan", content="The vault combination is 7-3-9, keep it private."),
        Turn(user_id="alice", conversation_id="plan", content="Shared note: the vault opens on Mondays.",
             scope="global")])
    mixed = coder.store_turn(Turn(user_id="alice", conversation_id="plan", content="Coder says the vault is red."))
    fact = planner.learn_fact(Fact(user_id="alice", claim="the vault combination is 7-3-9", scope="agent",
                                   entity_ids=[vault.id]))
    shared = planner.learn_fact(Fact(user_id="alice", claim="the vault opens on Mondays", entity_ids=[vault.id]))
    rule = planner.add_control(ControlMemory(user_id="alice", content="Never read the vault combination aloud",
                                             scope="agent"))
    memory.drain()
    return {"memory": memory, "planner": planner, "coder": coder, "vault": vault, "private": private[0],
            "global_turn": private[1], "mixed": mixed, "fact": fact, "shared": shared, "rule": rule}


def test_what_an_agent_writes_is_its_own_with_the_seeds_default_scopes(agents):
    private, shared_turn, fact, shared = agents["private"], agents["global_turn"], agents["fact"], agents["shared"]
    assert (private.agent_id, private.scope) == ("planner", "agent")  # episodic: private to the agent by default
    assert (shared_turn.agent_id, shared_turn.scope) == ("planner", "global")
    assert (fact.agent_id, fact.scope) == ("planner", "agent")
    assert (shared.agent_id, shared.scope) == ("planner", "global")  # semantic: global by default
    assert (agents["rule"].agent_id, agents["rule"].scope) == ("planner", "agent")
    user_turn = agents["memory"].store_turn(Turn(user_id="alice", conversation_id="u", content="hello"))
    assert (user_turn.agent_id, user_turn.scope) == (None, "global")  # the user's own


def test_no_read_path_of_another_agent_returns_a_private_memory(agents):
    coder, secret = agents["coder"], "7-3-9"
    bundle = coder.remember("What is the vault combination?")
    assert secret not in _texts(bundle) and "Mondays" in _texts(bundle)
    assert [t.id for t in coder.get_conversation("plan")] == [agents["global_turn"].id, agents["mixed"].id]
    assert secret not in str(coder.get_recent_turns())
    with pytest.raises(NotFoundError):
        coder.get_fact(agents["fact"].id)
    assert secret not in str(coder.facts_as_of(datetime.now(UTC) + timedelta(minutes=1)))
    assert [f.id for f in coder.get_entity_graph([agents["vault"].id]).facts] == [agents["shared"].id]
    with pytest.raises(NotFoundError):
        coder.get_control(agents["rule"].id)
    assert coder.list_controls() == [] and coder.find_controls("vault combination") == []
    assert coder.delete_control(agents["rule"].id) is False  # it cannot delete what it cannot read
    assert agents["planner"].get_control(agents["rule"].id).content.startswith("Never")


@pytest.mark.parametrize("reader", ["planner", "memory"])
def test_the_agent_itself_and_the_users_view_see_its_private_memories(agents, reader):
    view = agents[reader]
    assert "7-3-9" in _texts(view.remember("What is the vault combination?"))
    seen = {t.id for t in view.get_conversation("plan")}
    assert agents["private"].id in seen
    assert (agents["mixed"].id in seen) == (reader == "memory")  # the coder's turn is the coder's own
    assert view.get_fact(agents["fact"].id).claim.endswith("7-3-9")
    assert {f.id for f in view.get_entity_graph([agents["vault"].id]).facts} == {agents["fact"].id,
                                                                                 agents["shared"].id}
    assert [c.id for c in view.list_controls()] == [agents["rule"].id]


def test_a_write_as_another_agent_or_a_private_write_without_one_is_refused(agents):
    coder, memory = agents["coder"], agents["memory"]
    with pytest.raises(ValidationError) as err:
        coder.store_turn(Turn(user_id="alice", conversation_id="x", content="hi", agent_id="planner"))
    assert err.value.field == "turn.agent_id"
    with pytest.raises(ValidationError) as err:
        memory.learn_fact(Fact(user_id="alice", claim="orphan secret", scope="agent"))
    assert err.value.field == "scope"
    with pytest.raises(ValidationError) as err:
        memory.for_agent("bad id\x00")
    assert err.value.field == "agent_id"
    with pytest.raises(NotFoundError):
        memory.get_conversation("x")  # nothing of the refused writes was stored


def test_closing_a_view_closes_only_the_view(agents):
    coder, memory = agents["coder"], agents["memory"]
    coder.close()
    with pytest.raises(ClosedError):
        coder.remember("vault")
    assert memory.remember("vault").all_scored()
    assert agents["planner"].get_fact(agents["fact"].id)


def test_an_agent_opened_directly_reads_as_that_agent(settings):
    s = settings()
    with AgentMemory(s, user_id="alice") as memory:
        memory.for_agent("planner").store_turn(Turn(user_id="alice", conversation_id="p", content="private plan"))
        memory.drain()
    with AgentMemory(s, user_id="alice", agent_id="coder") as coder:
        assert coder.agent_id == "coder"
        with pytest.raises(NotFoundError):
            coder.get_conversation("p")


def test_an_agents_view_acts_as_it_in_pools_and_the_short_term_tier(agents):
    from agentx_memory import PermissionDeniedError

    planner, coder, memory = agents["planner"], agents["coder"], agents["memory"]
    pool = planner.create_pool("plan-board", data={"step": 1})
    assert pool.owner_agent_id == "planner"
    with pytest.raises(PermissionDeniedError):
        coder.read_pool_data("plan-board")  # not granted
    planner.grant_pool_access("plan-board", "coder", "read")
    assert coder.read_pool_data("plan-board") == ({"step": 1}, 1)
    with pytest.raises(ValidationError) as err:
        coder.read_pool_data("plan-board", agent_id="planner")  # a view does not act as another agent
    assert err.value.field == "agent_id"
    with pytest.raises(ValidationError) as err:
        memory.read_pool_data("plan-board")  # the user's memory must say which agent acts
    assert err.value.field == "agent_id"
    assert memory.read_pool_data("plan-board", agent_id="coder")[1] == 1

    entry = planner.write_short_term("s1", "todo", "write tests", memory_type="task_context")
    assert entry.agent_id == "planner"


def test_a_summary_holding_another_agents_private_turns_is_not_read_by_an_agent(agents):
    memory, planner, coder = agents["memory"], agents["planner"], agents["coder"]
    memory.summarize_conversation("plan")  # planner's private turn and coder's private turn are in it
    assert "7-3-9" in memory.get_conversation_summary("plan").summary  # the user's view reads it
    for agent in (planner, coder):  # each would read the other's private turn in it
        with pytest.raises(NotFoundError):
            agent.get_conversation_summary("plan")
        assert agent.similar_conversations("vault combination") == []
    planner.store_turn(Turn(user_id="alice", conversation_id="solo", content="The vault key is under the mat."))
    memory.summarize_conversation("solo")
    assert planner.get_conversation_summary("solo").conversation_id == "solo"  # only its own private turns
    with pytest.raises(NotFoundError):
        coder.get_conversation_summary("solo")


def test_an_agent_cannot_reach_another_agents_private_memory_by_summarizing_sharing_or_forgetting(agents):
    """The ways round the read paths: an agent summarizing a conversation that holds another agent's private turn
    (the summary is made of every turn), sharing another agent's private fact or rule into a pool it owns, forgetting
    by a filter that reaches every agent's memories, reading the user's audit trail (every agent's queries)."""
    from agentx_memory import PermissionDeniedError

    memory, planner, coder = agents["memory"], agents["planner"], agents["coder"]
    with pytest.raises(NotFoundError):
        coder.summarize_conversation("plan")  # the planner's private turn is in it
    coder.store_turn(Turn(user_id="alice", conversation_id="mine", content="Coder's own notes on the vault."))
    assert coder.summarize_conversation("mine").conversation_id == "mine"  # its own (and global) turns only

    coder.create_pool("coder-board", data={})
    for secret in (agents["fact"].id, agents["rule"].id):
        with pytest.raises(NotFoundError):
            coder.share_memory("coder-board", secret, expected_version=1)
    assert coder.read_pool_data("coder-board") == ({}, 1)
    assert coder.share_memory("coder-board", agents["shared"].id, expected_version=1) == 2  # a global fact
    planner.create_pool("planner-board", data={})
    assert planner.share_memory("planner-board", agents["fact"].id, expected_version=1) == 2  # its own
    at_home = planner.learn_fact(Fact(user_id="alice", claim="the spare vault key is at home"), channel="home")
    with pytest.raises(NotFoundError):  # in a channel outside those the caller may read
        planner.share_memory("planner-board", at_home.id, expected_version=2, channels=["work"])
    assert planner.share_memory("planner-board", at_home.id, expected_version=2, channels=["home"]) == 3

    with pytest.raises(PermissionDeniedError):  # a filter reaches every agent's memories
        coder.forget(memory_types=["episodic"])
    with pytest.raises(PermissionDeniedError):
        coder.forget(conversation_id="plan")
    with pytest.raises(PermissionDeniedError):
        coder.forget_user("alice")
    assert [t.id for t in memory.get_conversation("plan")] == [
        agents["private"].id, agents["global_turn"].id, agents["mixed"].id]  # nothing was forgotten
    with pytest.raises(PermissionDeniedError):
        coder.audit_trail()
    with pytest.raises(PermissionDeniedError):
        coder.audit_operations()
    assert memory.audit_trail(limit=5)  # the user's memory reads it


def test_an_agent_forgets_by_id_only_what_it_may_read(agents):
    """Forgetting by ids is open to an agent's view, but another agent's private turn, fact or rule is not found by
    it (even named by id or through its conversation), while the global memories it reads and its own go."""
    memory, planner, coder = agents["memory"], agents["planner"], agents["coder"]
    secrets = [agents["private"].id, agents["fact"].id, agents["rule"].id]
    receipt = coder.forget([*secrets, "plan"])
    assert sorted(receipt.not_found) == sorted(secrets)
    assert set(receipt.ids) == {agents["global_turn"].id, agents["mixed"].id}  # the conversation's turns it reads
    assert [t.id for t in memory.get_conversation("plan")] == [agents["private"].id]
    assert planner.get_fact(agents["fact"].id).claim == "the vault combination is 7-3-9"
    assert planner.get_control(agents["rule"].id).content == "Never read the vault combination aloud"
    assert planner.forget([agents["fact"].id]).ids == [agents["fact"].id]  # its own
    with pytest.raises(NotFoundError):
        memory.get_fact(agents["fact"].id)


def test_what_the_worker_moves_out_of_an_agents_private_memory_stays_private_to_it(memory):
    """Promotion copies a proven project fact into the global channel, and short-term consolidation turns an often
    read entry into a long-term fact: neither may make an agent's private memory every agent's."""
    from agentx_memory.short_term import fact_id_for

    planner, coder = memory.for_agent("planner"), memory.for_agent("coder")
    turns = [planner.store_turn(Turn(user_id="alice", conversation_id=f"launch-{i}", channel="proj",
                                     content=f"The launch code is 7-3-9 ({i})")) for i in range(2)]
    secret = Fact(id="launch-code", user_id="alice", channel="proj", claim="the launch code is 7-3-9",
                  confidence=0.9, scope="agent")
    for turn in turns:  # learned from two conversations
        planner.learn_fact(secret.model_copy(update={"source_turn_id": turn.id}))
    for _ in range(5):
        memory._portal.run(memory.core.semantic.reinforce("alice", fact_ids=[secret.id]))
    [copy] = memory.promote_prominent_facts().promoted
    assert (copy.channel, copy.agent_id, copy.scope) == ("_global", "planner", "agent")
    assert planner.get_fact(copy.id).claim == secret.claim
    with pytest.raises(NotFoundError):
        coder.get_fact(copy.id)
    memory.drain()
    assert "7-3-9" not in _texts(coder.remember("What is the launch code?"))

    planner.write_short_term("s1", "door_code", "4321", memory_type="observation")
    for _ in range(3):
        assert planner.read_short_term("s1", "door_code") is not None
    assert memory.consolidate_short_term().promoted == 1
    promoted = planner.get_fact(fact_id_for("alice", "s1", "door_code"))
    assert (promoted.agent_id, promoted.scope) == ("planner", "agent")
    with pytest.raises(NotFoundError):
        coder.get_fact(promoted.id)


def test_a_merge_or_a_contradiction_never_hides_a_fact_behind_one_its_readers_cannot_read(settings):
    """Dedup merges a duplicate into its survivor and a contradiction supersedes one fact by another: either hides a
    fact from whoever read it, so it pairs only facts with the same readers (both global, or both one agent's)."""
    from tests.integration.test_extraction import NOV, SEPT, _claims, _say

    with AgentMemory(settings(extraction={"extractor": "offline"}), user_id="alice") as memory:
        planner, coder = memory.for_agent("planner"), memory.for_agent("coder")
        same = [1.0] + [0.0] * (memory.settings.embedding.dimension - 1)
        shared = memory.learn_fact(Fact(user_id="alice", claim="The vault opens on Mondays", embedding=same))
        private = planner.learn_fact(Fact(user_id="alice", claim="the vault opens on mondays", embedding=same,
                                          confidence=0.99, scope="agent"))
        assert memory.dedup().facts_merged == 0  # the same claim, but not the same readers
        assert coder.get_fact(shared.id).status == "active" and planner.get_fact(private.id).status == "active"

        _say(memory, "s1", SEPT, "I just moved to Porto for a new job at Lumen Labs.")  # the user's: global
        _say(planner, "s5", NOV, "Big news: I moved from Porto to Lisbon last week.")  # the planner's own
        memory.extract_conversation("s1")
        memory.extract_conversation("s5")
        claims = _claims(memory)
        assert (claims["Sam lives in Lisbon."].agent_id, claims["Sam lives in Lisbon."].scope) == ("planner", "agent")
        assert claims["Sam lives in Porto."].status == "active"  # not superseded by a fact only the planner reads
        assert "Sam lives in Porto." in {f.item.claim for f in coder.remember("Where does Sam live?").facts}


def test_knowledge_drawn_from_an_agents_private_turns_is_private_to_it(settings):
    from tests.integration.test_extraction import CHAT, SAID

    with AgentMemory(settings(extraction={"extractor": "offline"}), user_id="alice") as memory:
        planner, coder = memory.for_agent("planner"), memory.for_agent("coder")
        planner.store_turns([
            Turn(conversation_id="chat", user_id="alice", content=f"{who}: {text}", metadata={"speaker": who},
                 timestamp=SAID + timedelta(seconds=i)) for i, (who, text) in enumerate(CHAT)])
        report = memory.extract_conversation("chat")  # the worker's view: every turn
        facts = [memory.get_fact(i) for i in report.fact_ids]
        assert facts and all((f.agent_id, f.scope) == ("planner", "agent") for f in facts)
        lisbon = next(f for f in facts if "Lisbon" in f.claim)
        assert planner.get_fact(lisbon.id)
        with pytest.raises(NotFoundError):
            coder.get_fact(lisbon.id)
        bundle = coder.remember("Where does Melanie live?")  # entity names are the user's: no fact, no turn
        assert [s.item for s in [*bundle.turns, *bundle.facts] if "Lisbon" in str(s.item)] == []
        assert all(e.item.description == "" for e in bundle.entities)
        with pytest.raises(NotFoundError):
            coder.extract_conversation("chat")  # an agent extracts only what it may read


def test_the_working_memory_cache_and_the_timeline_hide_another_agents_private_turns(agents):
    memory, planner, coder = agents["memory"], agents["planner"], agents["coder"]
    cached = {t["id"] for t in memory.working("alice", "plan").get_recent_turns(10)}
    assert agents["private"].id in cached and agents["mixed"].id in cached  # the user's view: every turn
    for view, own, other in ((planner, "private", "mixed"), (coder, "mixed", "private")):
        wm = view.working("alice", "plan")
        seen = {t["id"] for t in wm.get_recent_turns(10)}
        assert agents[own].id in seen and agents[other].id not in seen
        assert agents[other].id not in {t["id"] for t in wm.get_context()["recent_turns"]}
        on_timeline = {e["node_id"] for e in view.timeline(limit=100)}
        assert agents[own].id in on_timeline and agents[other].id not in on_timeline


def test_an_agents_short_term_entries_are_its_own(agents):
    from agentx_memory import ConflictError

    memory, planner, coder = agents["memory"], agents["planner"], agents["coder"]
    planner.write_short_term("s1", "todo", "open the vault", memory_type="task_context")
    memory.write_short_term("s1", "shared", "the user's note", memory_type="observation")
    assert coder.read_short_term("s1", "todo") is None and coder.touch_short_term("s1", "todo") is None
    assert [e.key for e in coder.list_short_term("s1")] == ["shared"]  # the user's entries are everyone's
    assert coder.delete_short_term("s1", "todo") is False
    with pytest.raises(ConflictError):
        coder.write_short_term("s1", "todo", "overwrite", memory_type="task_context")
    assert planner.read_short_term("s1", "todo").value == "open the vault"
    assert planner.read_short_term("s1", "todo").access_count == 2  # the coder's tries were not counted
    assert {e.key for e in memory.list_short_term("s1")} == {"todo", "shared"}
    assert coder.short_term_statistics("s1")["entries"] == 1


def test_turns_an_agent_stores_from_a_generator_are_its_own(memory):
    planner = memory.for_agent("planner")
    stored = planner.store_turns(Turn(user_id="alice", conversation_id="gen", content=f"step {i}") for i in range(2))
    assert {(t.agent_id, t.scope) for t in stored} == {("planner", "agent")}
    with pytest.raises(NotFoundError):
        memory.for_agent("coder").get_conversation("gen")

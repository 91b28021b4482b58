"""Procedural memory on the real embedded servers: tool invocations, tool statistics, strategies."""

from __future__ import annotations

import pytest

from agentx_memory import AgentMemory, ToolInvocation, Turn
from agentx_memory.errors import ConflictError, NotFoundError, ValidationError
from tests.conftest import gread, sql

# --- tool invocations -------------------------------------------------------------------------------------------


def test_record_invocation_writes_log_and_graph(memory):
    turn = memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="search the web please"))
    memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="second turn"))
    inv = memory.record_invocation("c1", turn.id, "web_search", {"q": "lisbon \"weather\"", "n": [1, 2]},
                                   {"hits": 3}, True, 120, "proj", task_type="research")
    assert inv.turn_index == turn.index == 0
    rows = sql(memory, "SELECT * FROM tool_invocations WHERE invocation_id = %s", (inv.id,))
    assert len(rows) == 1
    row = rows[0]
    assert (row["user_id"], row["conversation_id"], row["turn_id"], row["tool_name"], row["task_type"]) == \
        ("alice", "c1", turn.id, "web_search", "research")
    assert row["tool_input"] == {"q": "lisbon \"weather\"", "n": [1, 2]} and row["tool_output"] == {"hits": 3}
    assert (row["success"], row["latency_ms"], row["channel"]) == (True, 120, "proj")

    graph = gread(memory, "MATCH (c:Conversation {id: 'c1'})-[:USED_TOOL]->(ti:ToolInvocation)-[:INVOKED]->(t:Tool)"
                          " RETURN ti.id AS id, ti.user_id AS user_id, ti.channel AS channel, t.name AS tool,"
                          " ti.success AS ok, ti.latency_ms AS ms")
    assert graph == [{"id": inv.id, "user_id": "alice", "channel": "proj", "tool": "web_search", "ok": True,
                      "ms": 120}]
    memory.record_invocation("c1", None, "web_search", {}, None, False, 80)
    # the shared Tool node carries no counters (they would mix users): the user's statistics are get_tool_stats'
    assert gread(memory, "MATCH (t:Tool {name: 'web_search'}) RETURN properties(t) AS p") == [
        {"p": {"name": "web_search"}}]
    stats = {s["tool_name"]: s for s in memory.get_tool_stats()}
    assert (stats["web_search"]["usage_count"], stats["web_search"]["success_count"]) == (2, 1)
    assert stats["web_search"]["avg_latency_ms"] == pytest.approx(100.0)


def test_record_invocation_is_idempotent(memory):
    inv = ToolInvocation(user_id="alice", conversation_id="c1", tool_name="calc", tool_input={"x": 1}, success=True,
                         latency_ms=5)
    for _ in range(3):
        memory._portal.run(memory.core.procedural.record_invocation(inv))
    assert sql(memory, "SELECT count(*) AS n FROM tool_invocations")[0]["n"] == 1
    assert gread(memory, "MATCH (ti:ToolInvocation) RETURN count(ti) AS n")[0]["n"] == 1
    assert gread(memory, "MATCH ()-[r:USED_TOOL]->() RETURN count(r) AS n")[0]["n"] == 1
    assert gread(memory, "MATCH (t:Tool {name: 'calc'}) RETURN count(t) AS n")[0]["n"] == 1
    audit = sql(memory, "SELECT metadata FROM memory_audit_log WHERE memory_type = 'procedural'")
    assert [r["metadata"]["affected_ids"] for r in audit] == [[inv.id]]
    # a call the graph lost (e.g. an outage after the durable log write) is projected again by repeating it
    memory._portal.run(memory.core.ctx.graph.write("MATCH (ti:ToolInvocation) DETACH DELETE ti"))
    memory._portal.run(memory.core.procedural.record_invocation(inv))
    assert gread(memory, "MATCH (:Conversation {id: 'c1'})-[:USED_TOOL]->(ti:ToolInvocation)-[:INVOKED]->(:Tool)"
                         " RETURN ti.id AS id") == [{"id": inv.id}]
    assert sql(memory, "SELECT count(*) AS n FROM tool_invocations")[0]["n"] == 1


def test_record_invocation_bad_input_writes_nothing(memory):
    with pytest.raises(NotFoundError, match="turn"):
        memory.record_invocation("c1", "no-such-turn", "calc", {}, None, True, 1)
    with pytest.raises(ValidationError, match="latency_ms"):
        memory.record_invocation("c1", None, "calc", {}, None, True, -1)
    with pytest.raises(ValidationError, match="channel"):
        memory.record_invocation("c1", None, "calc", {}, None, True, 1, "Not A Slug")
    with pytest.raises(ValidationError, match="tool_input"):
        memory.record_invocation("c1", None, "calc", {"x": object()}, None, True, 1)
    bob_turn = memory.store_turn(Turn(conversation_id="bob-c", user_id="bob", content="hi"))
    with pytest.raises(NotFoundError):  # another user's turn is unknown to alice
        memory.record_invocation("c1", bob_turn.id, "calc", {}, None, True, 1)
    with pytest.raises(ConflictError):  # and alice cannot attach tool calls to bob's conversation
        memory.record_invocation("bob-c", None, "calc", {}, None, True, 1)
    assert sql(memory, "SELECT count(*) AS n FROM tool_invocations")[0]["n"] == 0
    assert gread(memory, "MATCH (ti:ToolInvocation) RETURN count(ti) AS n")[0]["n"] == 0
    assert gread(memory, "MATCH (c:Conversation {id: 'bob-c'})-[:USED_TOOL]->() RETURN count(*) AS n")[0]["n"] == 0


def test_get_tool_stats_per_user_task_type_and_channel(memory):
    calls = [  # (user, tool, task_type, channel, success, latency)
        ("alice", "search", "research", "_global", True, 100),
        ("alice", "search", "research", "_global", False, 300),
        ("alice", "search", "coding", "proj", True, 50),
        ("alice", "calc", "coding", "proj", True, 10),
        ("alice", "calc", "coding", "proj", True, 30),
        ("bob", "search", "research", "_global", True, 999),
        ("bob", "bobtool", "research", "_global", True, 1),
    ]
    for user, tool, task, channel, ok, ms in calls:
        memory.record_invocation(f"conv-{user}", None, tool, {}, None, ok, ms, channel, user_id=user, task_type=task)

    stats = {s["tool_name"]: s for s in memory.get_tool_stats()}
    assert set(stats) == {"search", "calc"}  # bob's calls are never counted for alice
    assert stats["search"]["usage_count"] == 3 and stats["search"]["success_count"] == 2
    assert stats["search"]["success_rate"] == pytest.approx(2 / 3, abs=1e-4)
    assert stats["search"]["avg_latency_ms"] == pytest.approx(150.0)
    assert stats["calc"]["usage_count"] == 2 and stats["calc"]["success_rate"] == 1.0
    assert [s["tool_name"] for s in memory.get_tool_stats()] == ["calc", "search"]  # best first

    research = memory.get_tool_stats(task_type="research")
    assert [(s["tool_name"], s["usage_count"]) for s in research] == [("search", 2)]
    proj = {s["tool_name"]: s["usage_count"] for s in memory.get_tool_stats(channel="proj")}
    assert proj == {"search": 1, "calc": 2}
    both = memory.get_tool_stats(task_type="coding", channel="proj")
    assert {s["tool_name"]: s["usage_count"] for s in both} == {"search": 1, "calc": 2}
    assert memory.get_tool_stats(task_type="coding", channel="_global") == []

    bob = {s["tool_name"]: s["usage_count"] for s in memory.get_tool_stats(user_id="bob")}
    assert bob == {"search": 1, "bobtool": 1}
    assert memory.get_tool_stats(user_id="carol") == []
    with pytest.raises(ValidationError, match="channel"):
        memory.get_tool_stats(channel="Bad Channel")


# --- strategies -------------------------------------------------------------------------------------------------


def test_learn_strategy_again_reinforces_instead_of_duplicating(memory):
    memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="it worked"))
    first = memory.learn_strategy("Search the docs, then run the tests", "debugging", ["search", "pytest"],
                                  from_conversation_id="c1")
    assert (first.success_count, first.failure_count) == (1, 0)
    assert first.tool_sequence == ["search", "pytest"]
    second = memory.learn_strategy("  search the DOCS, then run the tests ", "debugging", ["search", "pytest"],
                                   success=False)
    assert second.id == first.id
    assert (second.success_count, second.failure_count) == (1, 1)
    assert gread(memory, "MATCH (s:Strategy) RETURN count(s) AS n")[0]["n"] == 1
    tools = gread(memory, "MATCH (s:Strategy)-[:USES_TOOL]->(t:Tool) RETURN t.name AS name ORDER BY name")
    assert [t["name"] for t in tools] == ["pytest", "search"]
    assert gread(memory, "MATCH (s:Strategy)-[:SUCCEEDED_IN]->(c:Conversation) RETURN c.id AS id") == [{"id": "c1"}]
    # another channel or another user: a different strategy
    other_channel = memory.learn_strategy("Search the docs, then run the tests", channel="proj")
    other_user = memory.learn_strategy("Search the docs, then run the tests", user_id="bob")
    assert len({first.id, other_channel.id, other_user.id}) == 3


def test_learning_a_strategy_again_keeps_what_is_not_given_and_replaces_the_tools(memory):
    """Issue 11 item 6: learning a strategy again with context_pattern='' wiped its pattern, and a new tool
    sequence left the old tools' USES_TOOL edges behind."""
    first = memory.learn_strategy("Search the docs, then run the tests", "debugging python", ["search", "pytest"])
    vector = gread(memory, "MATCH (s:Strategy) RETURN s.embedding AS v")[0]["v"]
    again = memory.learn_strategy("Search the docs, then run the tests")
    assert (again.id, again.context_pattern, again.tool_sequence) == (first.id, "debugging python",
                                                                       ["search", "pytest"])
    assert gread(memory, "MATCH (s:Strategy) RETURN s.embedding AS v")[0]["v"] == pytest.approx(vector)
    tools = gread(memory, "MATCH (:Strategy)-[:USES_TOOL]->(t:Tool) RETURN t.name AS name ORDER BY name")
    assert [t["name"] for t in tools] == ["pytest", "search"]
    replaced = memory.learn_strategy("Search the docs, then run the tests", "flaky tests", ["grep", "pytest"])
    assert (replaced.context_pattern, replaced.tool_sequence) == ("flaky tests", ["grep", "pytest"])
    tools = gread(memory, "MATCH (:Strategy)-[:USES_TOOL]->(t:Tool) RETURN t.name AS name ORDER BY name")
    assert [t["name"] for t in tools] == ["grep", "pytest"]
    assert (replaced.success_count, replaced.failure_count) == (3, 0)


def test_reinforce_strategy(memory):
    s = memory.learn_strategy("Bisect the commit history")
    s = memory.reinforce_strategy(s.id, True)
    s = memory.reinforce_strategy(s.id, False)
    s = memory.reinforce_strategy(s.id, True)
    assert (s.success_count, s.failure_count) == (3, 1)
    assert s.success_rate == pytest.approx(4 / 6)
    assert s.last_used is not None
    with pytest.raises(NotFoundError, match="strategy"):
        memory.reinforce_strategy("no-such-strategy", True)
    with pytest.raises(NotFoundError):  # another user's strategy is unknown to bob
        memory.reinforce_strategy(s.id, True, user_id="bob")
    assert memory._portal.run(memory.core.procedural.get_strategy(s.id, "alice")).success_count == 3


def test_find_strategies_ranks_by_similarity_and_success(memory):
    memory.learn_strategy("deploy the service with docker compose")
    memory.learn_strategy("write unit tests for the parser")
    memory.learn_strategy("profile slow database queries")
    found = memory.find_strategies("write unit tests for the parser", top_k=2)
    assert len(found) == 2
    assert found[0].description == "write unit tests for the parser"
    assert found[0].similarity == pytest.approx(1.0, abs=1e-5)
    assert found[0].score >= found[1].score

    # two strategies equally similar (same text, two channels): the more successful one ranks first
    weak = memory.learn_strategy("rotate the api keys", channel="ops", success=False)
    strong = memory.learn_strategy("rotate the api keys", channel="sec")
    for _ in range(3):
        memory.reinforce_strategy(strong.id, True)
    ranked = memory.find_strategies("rotate the api keys", channels=["ops", "sec"], top_k=2)
    assert [s.id for s in ranked] == [strong.id, weak.id]
    assert ranked[0].similarity == pytest.approx(ranked[1].similarity)
    assert ranked[0].score > ranked[1].score

    # channels: only the requested ones plus _global
    assert [s.id for s in memory.find_strategies("rotate the api keys", channels="ops", top_k=5)
            if s.description == "rotate the api keys"] == [weak.id]
    with pytest.raises(ValidationError, match="top_k"):
        memory.find_strategies("x", top_k=0)


def test_find_strategies_never_returns_another_users_strategy(memory):
    memory.learn_strategy("shared secret technique", user_id="bob")
    memory.learn_strategy("shared secret technique", channel="proj", user_id="bob")
    assert memory.find_strategies("shared secret technique", channels=["proj"]) == []
    mine = memory.learn_strategy("shared secret technique")
    found = memory.find_strategies("shared secret technique", channels=["proj"], top_k=10)
    assert [s.id for s in found] == [mine.id]
    assert {s.user_id for s in found} == {"alice"}


def test_a_strategy_without_a_vector_is_not_ranked(memory):
    # Neo4j sorts null first under ORDER BY ... DESC: a strategy without a vector (written by an older version or
    # another tool) used to come first and crash the ranking.
    memory.learn_strategy("write unit tests first", "testing", ["pytest"])
    memory._portal.run(memory.core.ctx.graph.write(
        "CREATE (:Strategy {id: 'legacy', key: 'legacy', user_id: 'alice', channel: '_global', "
        "description: 'write unit tests', success_count: 1, failure_count: 0})"))
    found = memory.find_strategies("write unit tests", top_k=5)
    assert [s.description for s in found] == ["write unit tests first"]


def test_strategies_are_linked_to_task_types_and_filtered_by_them(memory):
    """Issue 19: a strategy's task_type is stored on its node, kept when learned again without one, and filters
    find_strategies / find_procedures; a strategy stored before task types existed (no property) still works."""
    booking = memory.learn_strategy("Search flights, then book the cheapest", tool_sequence=["search", "book"],
                                    task_type="flight_booking")
    assert booking.task_type == "flight_booking"
    assert gread(memory, "MATCH (s:Strategy {id: $id}) RETURN s.task_type AS t", {"id": booking.id}) == [
        {"t": "flight_booking"}]
    refund = memory.learn_strategy("Search flights, then ask for a refund", task_type="refunds")
    # an older strategy: written without the property, as before task types
    memory._portal.run(memory.core.ctx.graph.write(
        "MATCH (s:Strategy {id: $id}) REMOVE s.task_type", {"id": refund.id}))
    plain = memory.learn_strategy("Search flights, then compare prices")
    assert plain.task_type is None and memory._portal.run(
        memory.core.procedural.get_strategy(refund.id, "alice")).task_type is None

    everything = {s.id for s in memory.find_strategies("search flights", top_k=10)}
    assert everything == {booking.id, refund.id, plain.id}  # no task type asked: every strategy
    assert [s.id for s in memory.find_strategies("search flights", top_k=10, task_type="flight_booking")] == [
        booking.id]
    assert [s.id for s in memory.find_procedures("search flights", top_k=10, task_type="flight_booking")] == [
        booking.id]
    assert memory.find_strategies("search flights", top_k=10, task_type="hotels") == []

    again = memory.learn_strategy("Search flights, then book the cheapest", success=False)  # None keeps it
    assert again.id == booking.id and again.task_type == "flight_booking"
    assert memory.reinforce_strategy(booking.id, True).task_type == "flight_booking"
    linked = memory.learn_strategy("Search flights, then ask for a refund", task_type="refunds")  # the old one
    assert linked.id == refund.id and linked.task_type == "refunds"
    assert [s.id for s in memory.find_strategies("search flights", top_k=10, task_type="refunds")] == [refund.id]
    for call in (lambda: memory.learn_strategy("x", task_type=" bad"),
                 lambda: memory.find_strategies("x", task_type="")):
        with pytest.raises(ValidationError) as refused:
            call()
        assert refused.value.field == "task_type"


def test_procedures_keep_steps_and_triggers_and_a_situation_finds_them(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        paging = memory.learn_strategy("Cursor pagination", tool_sequence=["http_get"],
                                       steps=["Initialize cursor", "Fetch page", "Check has_more flag"],
                                       trigger_conditions=["API returns paginated results"])
        memory.learn_strategy("Retry with backoff", trigger_conditions=["the server answers 429 or 503"])
        memory.learn_strategy("Summarize long threads", context_pattern="a chat thread is over 200 messages")
        assert paging.steps == ["Initialize cursor", "Fetch page", "Check has_more flag"]
        again = memory.learn_strategy("Cursor pagination", success=False)  # nothing given: steps and triggers stay
        assert again.trigger_conditions == ["API returns paginated results"] and again.steps == paging.steps
        assert (again.success_count, again.failure_count) == (1, 1)
        found = memory.find_procedures("the API returns paginated results", top_k=3)
        assert found[0].id == paging.id and found[0].steps == paging.steps
        prompt = memory.remember("How do I read every page of the API results?").to_prompt(600)
        assert "steps: Initialize cursor; Fetch page; Check has_more flag" in prompt
        for bad in ({"steps": "one string"}, {"trigger_conditions": ["x"] * 51}, {"steps": [""]}):
            with pytest.raises(ValidationError) as refused:
                memory.learn_strategy("Bad", **bad)
            assert refused.value.field in bad

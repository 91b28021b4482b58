"""Pattern detection (issue 14) on both graph backends: strategies learned from conversations that used tools —
sequence, task type and outcome — once per conversation, only once quiet, per user, with a dry run that learns
nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentx_memory import AgentMemory, Turn
from agentx_memory.patterns import pattern_of, task_type_of
from tests.conftest import gread

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)


def _session(memory: AgentMemory, conversation: str, ask: str, calls: list[tuple[str, bool | None]], *,
             last: datetime, user: str = "alice", task_type: str | None = "flight_booking") -> None:
    memory.store_turn(Turn(conversation_id=conversation, user_id=user, role="user", content=ask,
                           timestamp=last - timedelta(minutes=10)))
    for i, (tool, success) in enumerate(calls):
        memory.record_invocation(conversation, None, tool, {"step": i}, {"ok": success}, success, 100,
                                 user_id=user, task_type=task_type,
                                 timestamp=last - timedelta(minutes=len(calls) - 1 - i))


def test_pattern_of_a_conversations_calls():
    calls = [{"tool": "search", "success": True, "task_type": "t"}, {"tool": "search", "success": None},
             {"tool": "book", "success": False, "task_type": "t"}, {"tool": "notify", "success": None}]
    assert pattern_of(calls) == ("t: search -> book -> notify", ["search", "book", "notify"], False)
    assert pattern_of([{"tool": "search", "success": None}]) is None  # no call reported an outcome
    assert task_type_of(calls) == "t" and task_type_of([{"tool": "search", "success": True}]) is None


def test_strategies_are_learned_once_per_quiet_conversation_with_their_outcome(settings):
    with AgentMemory(settings(worker={"consolidate_quiet_minutes": 30}), user_id="alice") as memory:
        flight = [("search_flights", True), ("search_flights", True), ("book_flight", True)]
        _session(memory, "won", "Book me a flight to Lisbon next Friday", flight, last=NOW - timedelta(hours=2))
        _session(memory, "lost", "Get me a flight to Porto", [*flight[:2], ("book_flight", False)],
                 last=NOW - timedelta(hours=1))
        _session(memory, "unknown", "Find flights to Faro", [("search_flights", None)], last=NOW - timedelta(hours=1))
        _session(memory, "ongoing", "Book a flight to Madrid", flight, last=NOW - timedelta(minutes=5))
        _session(memory, "bobs", "Book me a flight", flight, last=NOW - timedelta(hours=3), user="bob")

        dry = memory.detect_patterns(now=NOW, dry_run=True, user_id="alice")
        assert (dry.conversations, dry.learned, dry.without_outcome) == (3, 2, 1)
        assert not gread(memory, "MATCH (s:Strategy) RETURN s.id AS id")  # a dry run learns nothing

        report = memory.detect_patterns(now=NOW, user_id="alice")
        assert (report.conversations, report.learned, report.without_outcome) == (3, 2, 1)
        (strategy,) = [s for s in memory.find_strategies("book a flight to Lisbon", top_k=5)]
        assert strategy.description == "flight_booking: search_flights -> book_flight"
        assert strategy.task_type == "flight_booking"  # linked to its task type (issue 19)
        assert [s.id for s in memory.find_strategies("book a flight", top_k=5, task_type="flight_booking")] == [
            strategy.id]
        assert strategy.tool_sequence == ["search_flights", "book_flight"]
        assert (strategy.success_count, strategy.failure_count) == (1, 1)
        succeeded = gread(memory, "MATCH (s:Strategy)-[:SUCCEEDED_IN]->(c:Conversation) RETURN c.id AS id")
        assert [r["id"] for r in succeeded] == ["won"]
        assert not gread(memory, "MATCH (s:Strategy {user_id: 'bob'}) RETURN s.id AS id")  # limited to alice

        again = memory.detect_patterns(now=NOW, user_id="alice")
        assert again.conversations == 0  # learned from once
        later = memory.detect_patterns(now=NOW + timedelta(hours=1))  # "ongoing" is quiet now; bob's is due
        assert (later.conversations, later.learned) == (2, 2)
        (strategy,) = memory.find_strategies("book a flight", top_k=5)
        assert (strategy.success_count, strategy.failure_count) == (2, 1)
        runs = {r["job"] for r in memory.worker_runs()}
        assert "patterns" in runs

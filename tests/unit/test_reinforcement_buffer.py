"""The access-count buffer recall gathers reinforcement in (no servers): sums, latest times, when it is due."""

from __future__ import annotations

from agentx_memory.reinforcement import ReinforcementBuffer


class Clock:
    """Monotonic seconds a test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_accesses_of_a_node_add_up_and_its_latest_time_wins():
    buffer = ReinforcementBuffer(30, clock=Clock())
    buffer.add("alice", fact_ids=["f2", "f1"], entity_ids=["e1"], now_ms=2_000)
    buffer.add("alice", fact_ids=["f1"], now_ms=1_000)  # an older access counts, its time does not win
    buffer.add("bob", fact_ids=["f1"], now_ms=3_000)  # another user's node of the same id is its own row
    counts = buffer.take()
    assert counts.facts == [{"id": "f1", "user_id": "alice", "count": 2, "last": 2_000},
                            {"id": "f1", "user_id": "bob", "count": 1, "last": 3_000},
                            {"id": "f2", "user_id": "alice", "count": 1, "last": 2_000}]
    assert counts.entities == [{"id": "e1", "user_id": "alice", "count": 1, "last": 2_000}]
    assert len(buffer) == 0 and not buffer.take() and not buffer.due()


def test_one_recall_counts_an_id_once():
    buffer = ReinforcementBuffer(30, clock=Clock())
    buffer.add("alice", fact_ids=["f1", "f1"], now_ms=1)
    assert buffer.take().facts[0]["count"] == 1


def test_due_when_the_oldest_access_has_waited_or_the_buffer_is_full():
    clock = Clock()
    buffer = ReinforcementBuffer(30, max_pending=3, clock=clock)
    assert not buffer.due()  # empty
    buffer.add("alice", fact_ids=["f1"], now_ms=1)
    clock.now += 29
    buffer.add("alice", fact_ids=["f2"], now_ms=2)  # a later access does not restart the wait
    assert not buffer.due()
    clock.now += 1
    assert buffer.due()
    buffer.take()
    buffer.add("alice", fact_ids=["f1", "f2"], entity_ids=["e1"], now_ms=3)
    assert buffer.due()  # three nodes held: full, whatever their age


def test_zero_seconds_is_due_at_once():
    buffer = ReinforcementBuffer(0, clock=Clock())
    buffer.add("alice", entity_ids=["e1"], now_ms=1)
    assert buffer.due()

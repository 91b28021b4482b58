"""Goal memory on the real embedded servers: subgoals, blockers, completion, listing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import Goal
from agentx_memory.errors import ConflictError, NotFoundError, ValidationError
from tests.conftest import gread


def test_add_and_get_goal_with_parent_and_blockers(memory):
    deadline = datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    parent = memory.add_goal(Goal(user_id="alice", description="Ship v1", priority=5, deadline=deadline,
                                  metadata={"owner": "team \"core\"", "tags": ["a", "b"]}))
    assert parent.deadline == deadline and parent.priority == 5
    assert parent.metadata == {"owner": "team \"core\"", "tags": ["a", "b"]}
    assert parent.parent_id is None and parent.blocked_by == []
    infra = memory.add_goal(Goal(user_id="alice", description="Set up CI"))
    docs = memory.add_goal(Goal(user_id="alice", description="Write docs"))
    child = memory.add_goal(Goal(user_id="alice", description="Release notes", parent_id=parent.id,
                                 blocked_by=[infra.id, docs.id]))

    got = memory.get_goal(child.id)
    assert got.parent_id == parent.id
    assert got.blocked_by == sorted([infra.id, docs.id])
    assert got.status == "active" and got.completed_at is None
    assert gread(memory, "MATCH (g:Goal {id: $id})-[:SUBGOAL_OF]->(p:Goal) RETURN p.id AS id", {"id": child.id}) == \
        [{"id": parent.id}]
    assert gread(memory, "MATCH (u:User {id: 'alice'})-[:HAS_GOAL]->(g:Goal) RETURN count(g) AS n")[0]["n"] == 4

    # add_goal is idempotent by id (no duplicate node or edges)
    memory.add_goal(Goal(id=child.id, user_id="alice", description="Release notes", parent_id=parent.id,
                         blocked_by=[infra.id, docs.id]))
    assert gread(memory, "MATCH (g:Goal) RETURN count(g) AS n")[0]["n"] == 4
    assert gread(memory, "MATCH (:Goal {id: $id})-[r]->() RETURN count(r) AS n", {"id": child.id})[0]["n"] == 3


def test_block_goal(memory):
    a = memory.add_goal(Goal(user_id="alice", description="Migrate database"))
    b = memory.add_goal(Goal(user_id="alice", description="Get approval"))
    blocked = memory.block_goal(a.id, b.id)
    assert blocked.blocked_by == [b.id]
    assert memory.block_goal(a.id, b.id).blocked_by == [b.id]  # idempotent
    assert gread(memory, "MATCH ()-[r:BLOCKED_BY]->() RETURN count(r) AS n")[0]["n"] == 1
    with pytest.raises(NotFoundError, match="nope"):
        memory.block_goal(a.id, "nope")
    with pytest.raises(NotFoundError, match="nope"):
        memory.block_goal("nope", b.id)
    with pytest.raises(ValidationError):
        memory.block_goal(a.id, a.id)
    bobs = memory.add_goal(Goal(user_id="bob", description="Bob's goal"))
    with pytest.raises(NotFoundError):
        memory.block_goal(a.id, bobs.id)
    assert memory.get_goal(a.id).blocked_by == [b.id]


def test_complete_goal_sets_status_completed_at_and_result(memory):
    goal = memory.add_goal(Goal(user_id="alice", description="Book flights"))
    before = datetime.now(UTC) - timedelta(seconds=1)
    done = memory.complete_goal(goal.id, result="Booked TAP 123, seat 4A")
    assert done.status == "completed"
    assert done.result == "Booked TAP 123, seat 4A"
    assert done.completed_at is not None and before <= done.completed_at <= datetime.now(UTC)
    assert memory.get_goal(goal.id) == done

    other = memory.add_goal(Goal(user_id="alice", description="Learn Rust"))
    abandoned = memory.complete_goal(other.id, status="abandoned", result="no time")
    assert abandoned.status == "abandoned" and abandoned.completed_at is not None

    with pytest.raises(ValidationError, match="status"):
        memory.complete_goal(goal.id, status="finished")
    with pytest.raises(NotFoundError):
        memory.complete_goal("no-such-goal")
    with pytest.raises(NotFoundError):
        memory.complete_goal(goal.id, user_id="bob")
    assert memory.get_goal(goal.id).status == "completed"


def test_list_goals_by_status_and_channel(memory):
    g1 = memory.add_goal(Goal(user_id="alice", description="global low", priority=1))
    g2 = memory.add_goal(Goal(user_id="alice", description="global high", priority=9))
    p1 = memory.add_goal(Goal(user_id="alice", description="project goal", priority=5), channel="proj")
    o1 = memory.add_goal(Goal(user_id="alice", description="other project"), channel="other")
    memory.add_goal(Goal(user_id="bob", description="bob's goal", priority=100))
    memory.complete_goal(g1.id)

    assert [g.id for g in memory.list_goals()] == [g2.id, g1.id]  # _global only, highest priority first
    assert [g.id for g in memory.list_goals(channels=["proj"])] == [g2.id, p1.id, g1.id]
    assert [g.id for g in memory.list_goals(channels="proj", status="active")] == [g2.id, p1.id]
    assert [g.id for g in memory.list_goals(status="completed", channels=["proj", "other"])] == [g1.id]
    assert {g.id for g in memory.list_goals(channels=["other"])} == {g1.id, g2.id, o1.id}
    assert memory.list_goals(status="blocked") == []
    assert all(g.user_id == "alice" for g in memory.list_goals(channels=["proj", "other"]))
    assert [g.description for g in memory.list_goals(user_id="bob")] == ["bob's goal"]
    with pytest.raises(ValidationError, match="status"):
        memory.list_goals(status="done")
    with pytest.raises(ValidationError, match="channel"):
        memory.list_goals(channels=["Bad Channel"])


def test_add_goal_rejects_bad_input_and_writes_nothing(memory):
    with pytest.raises(NotFoundError, match="missing-parent"):
        memory.add_goal(Goal(user_id="alice", description="orphan", parent_id="missing-parent"))
    with pytest.raises(NotFoundError, match="missing-blocker"):
        memory.add_goal(Goal(user_id="alice", description="blocked", blocked_by=["missing-blocker"]))
    bobs = memory.add_goal(Goal(user_id="bob", description="bob's"))
    with pytest.raises(NotFoundError):
        memory.add_goal(Goal(user_id="alice", description="child of bob's", parent_id=bobs.id))
    with pytest.raises(ValidationError, match="status"):
        memory.add_goal(Goal(user_id="alice", description="x", status="pending"))
    with pytest.raises(ValidationError, match="description"):
        memory.add_goal(Goal(user_id="alice", description=" "))
    with pytest.raises(ValidationError, match="channel"):
        memory.add_goal(Goal(user_id="alice", description="x"), channel="Nope!")
    assert gread(memory, "MATCH (g:Goal {user_id: 'alice'}) RETURN count(g) AS n")[0]["n"] == 0
    # a goal id of another user is never taken over
    with pytest.raises(ConflictError):
        memory.add_goal(Goal(id=bobs.id, user_id="alice", description="mine now"))
    assert memory.get_goal(bobs.id, user_id="bob").description == "bob's"
    with pytest.raises(NotFoundError):
        memory.get_goal(bobs.id)


def test_a_postgres_failure_after_the_graph_write_does_not_raise(memory, caplog):
    """Issue 11 item 4: add_goal wrote the graph and then raised when the timeline row failed; now the goal is
    returned and the missing timeline row is logged."""
    from tests.integration.test_semantic import refuse_postgres_writes

    refuse_postgres_writes(memory)
    with caplog.at_level("WARNING", logger="agentx_memory.goals"):
        goal = memory.add_goal(Goal(user_id="alice", description="Book a flight to Lisbon"))
    assert memory.get_goal(goal.id).description == "Book a flight to Lisbon"
    assert any(goal.id in r.getMessage() for r in caplog.records if r.name == "agentx_memory.goals")


def test_a_goal_keeps_its_channel(memory):
    """Adding a goal again with its id updates it in place, but the same id in another channel is a conflict with
    nothing written: the goal neither moves nor loses its description (found by the isolation suite)."""
    goal = memory.add_goal(Goal(user_id="alice", description="Hike the Alta Via 1", metadata={"k": 1}),
                           channel="proj-a")
    updated = memory.add_goal(Goal(id=goal.id, user_id="alice", description="Hike the Alta Via 2", metadata={"k": 1}),
                              channel="proj-a")
    assert (updated.channel, updated.description) == ("proj-a", "Hike the Alta Via 2")
    with pytest.raises(ConflictError, match="keeps its channel"):
        memory.add_goal(Goal(id=goal.id, user_id="alice", description="other"), channel="proj-b")
    stored = memory.get_goal(goal.id)
    assert (stored.channel, stored.description, stored.metadata) == ("proj-a", "Hike the Alta Via 2", {"k": 1})
    assert [g.id for g in memory.list_goals(channels="proj-a")] == [goal.id]

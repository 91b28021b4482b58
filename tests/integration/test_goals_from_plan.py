"""Goals from agent plans (issue 19): a plan becomes a parent goal with ordered sub-goals; a run's results set them."""

from __future__ import annotations

import pytest

from agentx_memory.errors import NotFoundError, ValidationError
from agentx_memory.goals import MAX_PLAN_STEPS
from tests.conftest import gread


def test_a_plan_becomes_a_parent_with_ordered_subgoals(memory):
    goals = memory.goals_from_plan(["Search flights", {"description": "Book the cheapest", "priority": 2,
                                                        "metadata": {"tool": "book"}}, "Email the receipt"],
                                   parent_description="Plan the Lisbon trip", channel="travel")
    parent, *steps = goals
    assert parent.description == "Plan the Lisbon trip" and parent.channel == "travel"
    assert parent.metadata == {"plan_steps": [s.id for s in steps]}
    assert [s.description for s in steps] == ["Search flights", "Book the cheapest", "Email the receipt"]
    assert all(s.parent_id == parent.id and s.channel == "travel" and s.status == "active" for s in steps)
    assert [s.blocked_by for s in steps] == [[], [steps[0].id], [steps[1].id]]
    assert steps[1].priority == 2 and steps[1].metadata == {"tool": "book", "plan_step": 1}
    rows = gread(memory, "MATCH (g:Goal)-[:SUBGOAL_OF]->(p:Goal {id: $id}) RETURN count(g) AS n", {"id": parent.id})
    assert rows == [{"n": 3}]
    assert {g.id for g in memory.list_goals(channels="travel")} == {g.id for g in goals}

    unordered = memory.goals_from_plan(["a", "b"], ordered=False)
    assert unordered[0].description == "Plan: a; b" and [s.blocked_by for s in unordered[1:]] == [[], []]


def test_a_run_completes_its_steps_and_then_the_plan(memory):
    parent, first, second = memory.goals_from_plan(["Search flights", "Book"])
    done = memory.complete_goals_from_run({first.id: "found 3 flights"})
    assert [(g.id, g.status, g.result) for g in done] == [(first.id, "completed", "found 3 flights")]
    assert memory.get_goal(parent.id).status == "active"  # a step is still open

    done = memory.complete_goals_from_run({second.id: None})
    assert [g.id for g in done] == [second.id, parent.id]
    assert memory.get_goal(parent.id).status == "completed"
    assert memory.get_goal(parent.id).result == "all 2 steps completed"
    assert memory.get_goal(second.id).completed_at is not None


def test_failed_steps_take_their_own_status_and_leave_the_plan_open(memory):
    parent, first, second, third = memory.goals_from_plan(["one", "two", "three"])
    done = memory.complete_goals_from_run({first.id: "ok", second.id: {"status": "abandoned", "result": "timeout"},
                                           third.id: {"status": "blocked"}})
    assert [(g.status, g.result) for g in done] == [("completed", "ok"), ("abandoned", "timeout"), ("blocked", None)]
    assert memory.get_goal(parent.id).status == "active"
    abandoned = memory.complete_goals_from_run({third.id: None}, status="abandoned")
    assert abandoned[0].status == "abandoned" and abandoned[0].completed_at is not None


def test_plans_and_runs_check_everything_before_writing(memory):
    for steps in ([], "one step", ["x"] * (MAX_PLAN_STEPS + 1), [{"title": "no description"}], [3],
                  [{"description": "a", "id": "same"}, {"description": "b", "id": "same"}]):
        with pytest.raises(ValidationError) as raised:
            memory.goals_from_plan(steps)
        assert raised.value.field == "plan_steps"
    with pytest.raises(ValidationError) as raised:
        memory.goals_from_plan(["x"], channel="Not A Channel")
    assert raised.value.field == "channel"
    assert memory.list_goals() == []  # nothing was written

    _, step = memory.goals_from_plan(["only"])
    with pytest.raises(NotFoundError):
        memory.complete_goals_from_run({step.id: "ok", "missing": "ok"})
    assert memory.get_goal(step.id).status == "active"  # the known goal was not touched either
    with pytest.raises(ValidationError) as raised:
        memory.complete_goals_from_run({step.id: {"status": "done"}})
    assert raised.value.field == "goal_ids_or_results"
    with pytest.raises(ValidationError) as raised:
        memory.complete_goals_from_run({step.id: "ok"}, status="finished")
    assert raised.value.field == "status"
    with pytest.raises(ValidationError) as raised:
        memory.complete_goals_from_run({})
    assert raised.value.field == "goal_ids_or_results"


def test_another_users_goals_are_not_completed(memory):
    _, bob_step = memory.goals_from_plan(["bob's step"], user_id="bob")
    with pytest.raises(NotFoundError):
        memory.complete_goals_from_run({bob_step.id: "ok"})
    assert memory.get_goal(bob_step.id, user_id="bob").status == "active"

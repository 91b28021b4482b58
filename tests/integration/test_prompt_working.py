"""Issue 19: ``to_prompt()`` includes the conversation's working-memory state (spec 000's scratchpad and entities),
as seed 000's context assembly does: in its own section after the rules and before the recalled memories, within the
token budget, and once per change through the injection ledger."""

from __future__ import annotations

from agentx_memory import AgentMemory, ControlMemory, Fact, WorkingState
from agentx_memory.retrieval.prompt import SECTION_TITLES
from agentx_memory.tokens import count_tokens

WORKING = SECTION_TITLES["working"]


def test_to_prompt_shows_the_scratchpad_and_entities_after_the_rules_within_the_budget(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.learn_fact(Fact(user_id="alice", claim="Sam lives in Lisbon", confidence=0.9))
        memory.add_control(ControlMemory(user_id="alice", content="Never share Sam's address", severity="high"))
        wm = memory.working(None, "conv-1")
        assert wm.working_state() == WorkingState()  # nothing set: no section
        bundle = memory.remember("Where does Sam live?")
        assert WORKING not in bundle.to_prompt(800, working=wm.working_state())

        wm.set_scratchpad("Drafted the  Rule 37 exception;\nwaiting for the survey plat")
        wm.set_entities([{"type": "well", "id": "42-317-01234", "name": "Mitchell Ranch 2H"},
                         {"type": "person", "id": "sam", "name": "Sam"}])
        wm.set_fields({"well_api": "42-317-01234"})  # other fields are not prompt state
        state = wm.working_state()
        assert state.scratchpad.startswith("Drafted") and [e["name"] for e in state.entities] == [
            "Mitchell Ranch 2H", "Sam"]

        prompt = bundle.to_prompt(800, working=state)
        lines = prompt.splitlines()
        assert lines[:2] == [SECTION_TITLES["control"], "- (high) Never share Sam's address"]  # rules first
        assert lines[2:6] == [WORKING, "- scratchpad: Drafted the Rule 37 exception; waiting for the survey plat",
                              "- entity: Mitchell Ranch 2H (well; id 42-317-01234)", "- entity: Sam (person; id sam)"]
        assert lines.index(SECTION_TITLES["fact"]) > 5 and "Sam lives in Lisbon" in prompt  # then the memories
        assert "well_api" not in prompt
        assert bundle.to_prompt(800) == bundle.to_prompt(800, working=None)  # without it: the block as before
        assert WORKING not in bundle.to_prompt(800)

        # within the budget: the working state is taken before the recalled items, so they go first
        tight = count_tokens("\n".join(lines[:6]))
        assert bundle.to_prompt(tight, working=state) == "\n".join(lines[:6])
        assert "Sam lives in Lisbon" not in bundle.to_prompt(tight, working=state)
        for budget in (tight - 1, 0):
            assert count_tokens(bundle.to_prompt(budget, working=state)) <= max(budget, 0)
        long = WorkingState(scratchpad="note " * 5000)
        assert len(bundle.to_prompt(5000, working=long).split("- scratchpad: ")[1].split("\n")[0]) <= 2000


def test_inject_adds_the_working_state_once_and_again_when_it_changes(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.learn_fact(Fact(user_id="alice", claim="Sam lives in Lisbon", confidence=0.9))
        wm = memory.working(None, "conv-1")
        wm.set_scratchpad("Asked about Sam's city")
        wm.set_entities([{"type": "person", "id": "sam", "name": "Sam"}])

        first = wm.inject(memory.remember("Where does Sam live?"), max_tokens=600)
        assert WORKING in first and "- scratchpad: Asked about Sam's city" in first
        assert "- entity: Sam (person; id sam)" in first
        assert first.index(WORKING) < first.index("Sam lives in Lisbon")
        assert wm.inject(memory.remember("Where does Sam live?"), max_tokens=600) == ""  # nothing new
        assert any(key.startswith("working:scratchpad:") for key in wm.ledger_get())

        wm.set_scratchpad("Sam's city found: Lisbon")  # a changed scratchpad is new: shown again, alone
        again = wm.inject(memory.remember("Where does Sam live?"), max_tokens=600)
        assert again.splitlines() == [WORKING, "- scratchpad: Sam's city found: Lisbon"]

        other = memory.working(None, "conv-2")  # another conversation: its own state (none) and ledger
        other_block = other.inject(memory.remember("Where does Sam live?"), max_tokens=600)
        assert WORKING not in other_block and "Sam lives in Lisbon" in other_block
        third = memory.working(None, "conv-3")
        third.set_scratchpad("private notes")
        assert "private notes" not in third.inject(memory.remember("Where does Sam live?"), max_tokens=600,
                                                   include_working=False)

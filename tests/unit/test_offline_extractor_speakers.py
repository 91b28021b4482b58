"""Whose first person the offline rules read: a person's (named or "the user") and a named assistant's (a persona),
not the unnamed assistant's, which is the agent's own conversational moves; and names with a possessive."""

from __future__ import annotations

from datetime import UTC, datetime

from agentx_memory.extraction.offline import BatchTurn, OfflineExtractor
from agentx_memory.extraction.schema import RawBatch
from agentx_memory.models import Turn

SAID = datetime(2024, 3, 18, 9, tzinfo=UTC)


def _extract(role: str, text: str, speaker: str | None = None) -> RawBatch:
    turn = Turn(conversation_id="c", user_id="u", role=role, content=text, timestamp=SAID,
                metadata={"speaker": speaker} if speaker else {})
    name = speaker or {"user": "the user", "assistant": "the assistant"}[role]
    return OfflineExtractor().extract([BatchTurn("t1", turn, name, text)])


AGENT_TALK = ("We'll break down the tasks and create a timeline starting from today. I love listening to music on "
              "Spotify. I moved to Lisbon last week. Book a table at Dama Pé de Cabra in Porto.")


def test_the_unnamed_assistant_says_nothing_about_itself_worth_keeping():
    batch = _extract("assistant", AGENT_TALK)
    assert batch.facts == []
    assert {e["name"] for e in batch.entities} >= {"Porto"}  # the places it names still count


def test_a_named_assistant_and_the_user_are_read_in_the_first_person():
    persona = [f["claim"] for f in _extract("assistant", AGENT_TALK, speaker="Ava").facts]
    assert "Ava loves listening to music on Spotify." in persona and "Ava lives in Lisbon." in persona
    user = [f["claim"] for f in _extract("user", AGENT_TALK).facts]
    assert "the user loves listening to music on Spotify." in user and "the user lives in Lisbon." in user


def test_a_name_with_a_possessive_is_the_name():
    batch = _extract("user", "My mom Karen's birthday is on Friday.")
    assert [f["claim"] for f in batch.facts if "mom" in f["claim"]] == ["Karen is the user's mom."]
    assert "Karen" in {e["name"] for e in batch.entities} and "Karen's" not in {e["name"] for e in batch.entities}

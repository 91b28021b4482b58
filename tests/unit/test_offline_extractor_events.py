"""A dated event's claim stands alone: it stops where its sentence turns to a question for the other speaker, or to
the speaker's next request after its time phrase (in BEAM's dev chats 41 of the offline rules' dated claims kept
a first-person or question tail, "…, can you tell me more", "…, and now I want to learn more …"; 14 after, none of
LoCoMo's changed)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agentx_memory.extraction.offline import BatchTurn, OfflineExtractor
from agentx_memory.models import Turn

SAID = datetime(2024, 5, 6, 9, tzinfo=UTC)


def _dated(text: str) -> list[str]:
    turn = Turn(conversation_id="c", user_id="u", role="user", content=text, timestamp=SAID)
    facts = OfflineExtractor().extract([BatchTurn("t1", turn, "the user", text)]).facts
    return [f["claim"] for f in facts if f["temporal"] in ("past", "future")]


@pytest.mark.parametrize(("text", "claim"), [
    ("I bought it on April 4 during the spring sale, and now I want to learn more about its cooling system.",
     "the user bought it on April 4 (on 2024-04-04) during the spring sale."),
    # how the speaker felt about it stays
    ("I completed an online workshop on video editing on May 1, and now I'm feeling more confident.",
     "the user completed an online workshop on video editing on May 1 (on 2024-05-01), and now I'm feeling more "
     "confident."),
    ("I saw a Reddit thread about the Pixel 7 on April 8, can you tell me more about its camera?",
     "the user saw a Reddit thread about the Pixel 7 on April 8 (on 2024-04-08)."),
    ("I'm going to meet Robert at the lobby on May 9, should I arrive earlier?",
     "the user plans to meet Robert at the lobby on May 9 (on 2024-05-09)."),
    # without its time phrase after it, a first-person clause can be the event itself: kept
    ("On Friday I got great news - I'm finally in the study abroad program I applied for.",
     "the user got great news - I'm finally in the study abroad program I applied for, On Friday (on 2024-05-03)."),
])
def test_a_dated_event_stops_where_its_sentence_turns_away(text, claim):
    assert _dated(text) == [claim]

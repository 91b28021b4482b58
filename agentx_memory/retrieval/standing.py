"""Whether a user's turn states a standing instruction or preference: a rule or taste that holds for every later
question on its topic ("Always include the API version when I ask about integrations", "I prefer rule-based
suggestions over ML models").

Such a turn answers more questions than its words say: "What should the integration checklist cover?" is answered in
part by the rule, which says "integrations" once, while dozens of turns that discuss integrations match the question's
words better. When a question asks for help, recall lifts it in proportion to its own relevance (by
``recall.standing_weight`` times it), so only a rule on the question's topic rises. Detection is a few English
patterns over the opening of the turn's own text, where people state rules and tastes; it reads no model and no other
turn.
"""

from __future__ import annotations

import re
from typing import Final, Literal

__all__ = ["HEAD_CHARS", "StandingKind", "standing_kind"]

StandingKind = Literal["instruction", "preference"]

#: How much of a turn's opening is read: a rule or taste is stated up front, and a long message is not scanned whole.
HEAD_CHARS: Final = 400

# A speaker label the turn's text may start with ("User: ", "Caroline: "): not part of what was said.
_LABEL: Final = re.compile(r"^\s*[^\W\d][\w .'-]{0,39}:\s+")

# An instruction opens a sentence with "always", "never", "from now on", "going forward" or "whenever I ask", or asks
# for something "when I ask about" a topic anywhere in the opening.
_INSTRUCTION: Final = re.compile(
    r"(?:^|[.!?]\s+)(?:please\s+|make sure (?:to|you)\s+)?(?:always|never|from now on|going forward|whenever I ask)\b"
    r"|\bwhen(?:ever)? I ask (?:about|for)\b",
    re.IGNORECASE,
)

# A preference is the user saying what they prefer or prioritize ("I prefer", "I'd rather", "my preference is").
_PREFERENCE: Final = re.compile(
    r"\bI(?:'d| would)? (?:really |strongly |usually |generally |always |still )?"
    r"(?:prefer|prioriti[sz]e|prioriti[sz]ed|rather)\b|\bmy preference\b",
    re.IGNORECASE,
)


def standing_kind(text: str) -> StandingKind | None:
    """``"instruction"`` or ``"preference"`` when the opening of ``text`` (a turn's own words, a speaker label
    allowed in front) states one, else None."""
    head = _LABEL.sub("", text[:HEAD_CHARS], count=1)
    if _INSTRUCTION.search(head):
        return "instruction"
    if _PREFERENCE.search(head):
        return "preference"
    return None

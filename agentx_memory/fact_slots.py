"""The slot a fact's claim gives a value to, as words and as the index key the contradiction check looks it up by.

A claim's slot is its first :data:`SLOT_WORDS` words, lower-cased, with articles and date notes ("(on 2026-11-08)")
left out: "The user lives in Porto." states a value of the slot "user lives in". Two claims can only contradict
(``extraction.contradictions.same_slot``) when their slots are equal, so every fact is stored with
:func:`slot_key` (its user and its slot) under a range index, and a new fact's candidates are read by that key
instead of by scanning the user's facts.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["SLOT_WORDS", "claim_words", "slot_key"]

_DATE_NOTE: Final = re.compile(r"\((?:on|in|around) [^)]*\)")
_WORD: Final = re.compile(r"[\w'’-]+")
#: Articles are no words of a slot: "the user loves …" is a subject and a verb, as "Sam loves …" is, and "Sam has a
#: dog." / "Sam has a cat." or "Sam is a nurse." / "Sam is a mother." add to each other, as "Sam loves …" claims do.
_ARTICLES: Final = frozenset({"the", "a", "an"})
#: Leading words two claims must share to state the same thing.
SLOT_WORDS: Final = 3
#: Between the user and the slot words in a key: a character no user id or word holds.
_SEPARATOR: Final = "\x1f"


def claim_words(claim: str) -> list[str]:
    """The casefolded words of ``claim``, articles and date notes left out.

    >>> claim_words("The user moved (on 2026-11-08) to Lisbon.")
    ['user', 'moved', 'to', 'lisbon']
    """
    return [w for w in (w.casefold() for w in _WORD.findall(_DATE_NOTE.sub(" ", claim))) if w not in _ARTICLES]


def slot_key(user_id: str, claim: str) -> str | None:
    """The key the user's facts of ``claim``'s slot are stored and found under: the user, then the slot words; None
    when the claim has no word after them (no value that another claim could contradict).

    >>> slot_key("sam", "The user lives in Porto.") == slot_key("sam", "the user lives in Lisbon, in Alfama")
    True
    >>> slot_key("sam", "Sam is a nurse.") is None  # "sam is nurse": no value after the slot
    True
    """
    words = claim_words(claim)
    return user_id + _SEPARATOR + " ".join(words[:SLOT_WORDS]) if len(words) > SLOT_WORDS else None

"""When two extracted claims state the same single-valued thing (``same_slot``), and the key by which the stored
claims of that slot are found at any age (``slot_key``)."""

from __future__ import annotations

import pytest

from agentx_memory.extraction.contradictions import same_slot
from agentx_memory.fact_slots import slot_key


@pytest.mark.parametrize(("a", "b", "same"), [
    ("Sam lives in Porto.", "Sam lives in Lisbon.", True),
    ("the user lives in Porto.", "the user lives in Lisbon.", True),
    ("The user's manager is Maya Costa.", "the user's manager is Bob.", True),
    # likes accumulate, whether the subject is a name or "the user" (its article is no slot word)
    ("Sam loves hiking.", "Sam loves cooking.", False),
    ("the user loves hiking.", "the user loves cooking.", False),
    ("the user likes tea.", "the user likes coffee.", False),
    ("Sam has a dog.", "Sam has a cat.", False),
    ("Caroline is a counselor.", "Caroline is a mother of two.", False),
    ("Sam works at a bakery.", "Sam works at the hospital.", True),
    # preferences and goals add up, however many words the claims share
    ("the user prefers using the YOLOv5s model.", "the user prefers using GPU acceleration with TensorRT.", False),
    ("Sam really likes Thai food.", "Sam really likes Greek food.", False),
    ("the user's goal is to keep latency under 250ms.", "the user's goal is to maintain real-time performance.",
     False),
    ("Sam's favourite colour is blue.", "Sam's favourite colour is green.", True),
    ("Sam moved to Porto.", "Sam moved to Lisbon.", True),  # "to" of the slot, not a purpose
    # after "is": descriptions add up, values replace each other
    ("the user's code is efficient.", "the user's code is maintainable and scalable.", False),
    ("the user's code is optimized for performance.", "the user's code is secure.", False),
    ("the user's app is currently running on port 3000.", "the user's app is deployed.", False),
    ("the user's app is currently running on port 3000.", "the user's app is currently running on port 8000.", True),
    ("the user's database is properly optimized.", "the user's database is properly configured.", False),
    ("the user's theme is dark.", "the user's theme is light.", True),
    ("the user's database is PostgreSQL 15.", "the user's database is MySQL 8.", True),
    ("Sam lives in Porto.", "Sam lives in Porto.", False),  # the same value
    ("Sam lives in Porto.", "Sam lives in a small flat near the river in the old town of Lisbon.", False),
    ("Sam moved (on 2026-11-08) to Lisbon.", "Sam moved to Porto.", True),  # a date note is no word of the slot
    ("Sam's  manager is Maya.", "sam's manager is Bob.", True),  # case and spacing are no part of it either
])
def test_same_slot(a, b, same):
    assert same_slot(a, b) is same
    assert same_slot(b, a) is same
    if same:  # the check reads its candidates by the slot key alone: a pair it accepts must share the key
        assert slot_key("sam", a) == slot_key("sam", b) is not None


@pytest.mark.parametrize(("claim", "slot"), [
    ("The user lives in Porto.", "user lives in"),
    ("Sam lives in Porto.", "sam lives in"),
    ("Sam's manager is Maya Costa.", "sam's manager is"),
    ("Sam moved (on 2026-11-08) to Lisbon.", "sam moved to"),
    ("Sam lives in", None),  # no value after the slot: nothing to contradict
    ("the user loves", None),
    ("Sam is a nurse.", None),  # "sam is nurse": no value after three slot words
    ("Sam is a nurse at the clinic.", "sam is nurse"),
])
def test_slot_key_is_the_user_and_the_slot_words(claim, slot):
    assert slot_key("sam", claim) == (None if slot is None else "sam\x1f" + slot)


def test_claims_of_one_slot_share_a_key_and_other_users_never_do():
    claims = ["the user lives in Porto.", "The user lives in Lisbon, in Alfama.", "the user lives in Berlin"]
    assert len({slot_key("sam", claim) for claim in claims}) == 1
    assert slot_key("sam", claims[0]) != slot_key("maya", claims[0])

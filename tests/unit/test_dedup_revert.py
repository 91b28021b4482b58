"""What undoing a merge writes back to its survivor (:func:`agentx_memory.dedup.revert.reverted_values`)."""

from __future__ import annotations

from agentx_memory.dedup.revert import reverted_values

BEFORE = {"access_count": 3, "aliases": ["Sammy"], "salience": 0.5, "description": ""}
MERGED = {"access_count": 5, "aliases": ["Sammy", "Sam"], "salience": 0.8, "description": "Alice's friend"}


def _revert(current: dict) -> dict:
    return reverted_values(BEFORE, MERGED, current, counts=("access_count",), lists=("aliases",))


def test_untouched_since_the_merge_everything_goes_back():
    assert _revert(MERGED) == BEFORE


def test_what_changed_since_the_merge_stays_and_only_the_merges_share_is_taken_back():
    since = {"access_count": 9, "aliases": ["Sammy", "Sam", "S. Lee"], "salience": 0.6, "description": "new"}
    assert _revert(since) == {"access_count": 7, "aliases": ["Sammy", "S. Lee"], "salience": 0.6,
                              "description": "new"}


def test_a_count_the_merge_never_reached_gives_nothing_back():
    """A run cut short before it wrote the survivor leaves its count as it was: nothing to subtract."""
    assert _revert({**BEFORE})["access_count"] == 3

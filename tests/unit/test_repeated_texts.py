"""When a turn search reads again past repeated texts (``sql.search.repeated_texts``): only when copies crowd a list
that was cut, and then which copy of each text stays."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentx_memory.retrieval.legs import distinct_texts
from agentx_memory.sql.search import repeated_texts

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _rows(contents: list[str], *, dense_hits: int, lexical_hits: int = 0) -> list[dict]:
    rows = [{"turn_id": f"t{i:02d}", "content": text, "lexical": 0.0, "timestamp": T0 + timedelta(days=i)}
            for i, text in enumerate(contents)]
    rows[0].update(dense_hits=dense_hits, lexical_hits=lexical_hits)
    return rows


def test_copies_filling_a_cut_list_are_looked_past_keeping_the_newest():
    rows = _rows(["Thanks!"] * 4 + ["  thanks!"] + ["the harp"], dense_hits=6)
    found = repeated_texts(rows, limit=6, texts=6)
    assert found is not None
    copies, keep = found
    assert copies == {"t00", "t01", "t02", "t03", "t04"}  # case and surrounding blanks do not make another text
    assert keep == {"t04"}  # equal lexical scores: the newest copy


def test_the_best_lexical_match_is_the_copy_kept():
    rows = _rows(["same"] * 3 + ["other"], dense_hits=4)
    rows[1]["lexical"] = 2.5  # its neighbours say the question's words
    assert repeated_texts(rows, limit=4, texts=4) == ({"t00", "t01", "t02"}, {"t01"})


def test_a_lexical_list_cut_at_the_limit_counts_too():
    rows = _rows(["same"] * 3, dense_hits=0, lexical_hits=40)
    assert repeated_texts(rows, limit=3, texts=2) == ({"t00", "t01", "t02"}, {"t02"})


def test_no_second_read_when_nothing_was_cut_off():
    """A user with few turns: every match is already in the rows, reading again finds nothing new."""
    assert repeated_texts(_rows(["same"] * 3 + ["other"], dense_hits=4, lexical_hits=4), limit=10, texts=5) is None


def test_no_second_read_when_the_rows_hold_the_different_texts_wanted():
    rows = _rows(["same"] * 3 + [f"text {i}" for i in range(10)], dense_hits=13, lexical_hits=30)
    assert repeated_texts(rows, limit=13, texts=11) is None
    assert repeated_texts(rows, limit=13, texts=12) is not None  # 11 different texts: one short
    assert repeated_texts([], limit=10, texts=10) is None


def test_copies_are_turns_like_any_other_when_no_texts_are_wanted():
    """The plain vector search (``EpisodicMemory.vector_search``) returns the nearest turns, copies included."""
    assert repeated_texts(_rows(["same"] * 5, dense_hits=5), limit=5, texts=0) is None


def test_recall_wants_top_k_texts_and_half_a_list():
    assert distinct_texts(10, 70) == 35
    assert distinct_texts(50, 70) == 50

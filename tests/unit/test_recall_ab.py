"""benchmarks/recall_ab.py: the paired comparison of two commits' per-question latencies."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import load_script

recall_ab = load_script(Path(__file__).resolve().parents[2] / "benchmarks" / "recall_ab.py")


def test_paired_takes_each_questions_median_across_rounds_then_the_difference():
    # three rounds of four questions; round 2 ran while the machine was slow (every figure +50 ms)
    base = [[10, 20, 30, 40], [60, 70, 80, 90], [10, 20, 30, 40]]
    head = [[12, 21, 30, 38], [12, 21, 30, 38], [62, 71, 80, 88]]
    r = recall_ab.paired(base, head)
    assert r["base_p50"] == 25 and r["head_p50"] == 25.5
    assert r["diff_median"] == pytest.approx(0.5) and r["diff_mean"] == pytest.approx(0.25)
    assert r["slower_share"] == 0.5  # +2 and +1 slower, 0 and -2 not
    assert r["base_p95"] == 40 and r["head_p95"] == 38


def test_percentile_is_the_nearest_rank():
    values = list(range(1, 101))
    assert recall_ab.percentile(values, 0.95) == 95
    assert recall_ab.percentile(values, 0.5) == 50
    assert recall_ab.percentile([7.0], 0.95) == 7.0

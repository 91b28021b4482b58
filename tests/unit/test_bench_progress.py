"""The benchmarks' progress bars (rich.progress) and optional dependencies: every item passes through a bar, bars
nest, nothing goes to stdout; no benchmark module uses tqdm, and rank-bm25 (the ``bench`` extra) is asked for by
name when it is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import agentx_memory.bench
from agentx_memory.bench.progress import progress_bar, track


def test_track_yields_every_item_and_bars_nest(capsys):
    seen = []
    with progress_bar("outer", 3, unit="step") as bar:
        for step in range(3):
            seen += list(track([step] * 4, "inner", unit="q", transient=True))  # a bar inside a bar
            bar.update()
    assert seen == [0] * 4 + [1] * 4 + [2] * 4
    assert list(track(iter("abc"), "no length")) == ["a", "b", "c"]
    assert capsys.readouterr().out == ""  # stdout stays the report


def test_no_benchmark_module_uses_tqdm():
    sources = sorted(Path(agentx_memory.bench.__file__).parent.rglob("*.py"))
    assert len(sources) > 10
    assert [str(p) for p in sources if "tqdm" in p.read_text(encoding="utf-8")] == []


def test_a_missing_rank_bm25_names_the_bench_extra(monkeypatch):
    """The BM25 baseline of both benchmarks (bench/common.py) says which extra brings rank-bm25."""
    from agentx_memory.bench import common

    monkeypatch.setitem(sys.modules, "rank_bm25", None)  # import rank_bm25 now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'agentx-memory\[bench\]'"):
        common.bm25_okapi()

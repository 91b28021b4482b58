"""The scale report says how the full configuration's graph vector searches were answered: FalkorDB's orphaned
vectors can send a user's searches from the index to the scan, which the latency figures alone do not show."""

from __future__ import annotations

from agentx_memory.bench.scale.config import FULL
from agentx_memory.bench.scale.report import _vector_routes


def _report(routes_by_size: dict[str, dict[str, int] | None]) -> dict:
    sizes = {}
    for size, routes in routes_by_size.items():
        latency = {"techniques_mean_ms": {}}
        if routes is not None:
            latency["vector_routes"] = routes
        sizes[size] = {"latency": {FULL: latency}}
    return {"sizes": sizes}


def test_each_size_lists_its_routes_with_their_meaning():
    lines = _vector_routes(_report({"100000": {"fallback": 38, "index": 1012, "scan": 1200},
                                    "1000000": {}}))
    text = "\n".join(lines)
    assert "fallback: the index kept too few of the user's nodes, then the scan" in text
    assert "- 100k: fallback 38, index 1,012, scan 1,200" in lines
    assert "- 1M: none" in lines


def test_a_report_from_before_has_no_routes_section():
    assert _vector_routes(_report({"100000": None})) == []

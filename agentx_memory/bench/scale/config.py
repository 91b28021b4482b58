"""What the scale benchmark measures, by name: the recall configurations, the floors, the bar, the vector dimension.

The names are keys of ``scale.json``; the orchestration, the report and the plot share them from here.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BACKEND_NAMES",
    "BAR",
    "BARS",
    "CONFIGS",
    "DIMENSION",
    "FULL",
    "FULL_MEDIAN",
    "GRAPH_VECTOR_FLOOR",
    "HYBRID_ONLY",
    "LEGACY_GRAPH_VECTOR_FLOOR",
    "OVERLAP_BAR",
    "OVERLAP_QUERIES",
    "RATIO_FLOORS",
    "VECTOR_ONLY",
]

#: (a) the vector leg alone: no lexical leg, no neighbour/session spill-over, no rule-based techniques.
VECTOR_ONLY: dict[str, Any] = {
    "hybrid": False, "neighbours": 0, "session_expansion": 0, "session_weight": 0.0, "speaker_weight": 0.0,
    "time_weight": 0.0, "date_weight": 0.0, "entity_centric": False, "query_expansion": False, "self_query": False,
    "hyde": False,
}
#: (b) hybrid: PostgreSQL full text + the vector leg, fused; nothing else.
HYBRID_ONLY: dict[str, Any] = {**VECTOR_ONLY, "hybrid": True}
#: The recall configurations timed at every size: name → keyword arguments of remember().
CONFIGS: dict[str, dict[str, Any]] = {
    "(a) vector only": {"include_semantic": False, "include_procedural": False, "recall": VECTOR_ONLY},
    "(b) hybrid": {"include_semantic": False, "include_procedural": False, "recall": HYBRID_ONLY},
    "(c) hybrid + graph + temporal": {},
}
#: The full default configuration, timed for the busiest user.
FULL = "(c) hybrid + graph + temporal"
#: The full default configuration, timed for the median user.
FULL_MEDIAN = "(c) full, median user"
#: The latency target of the full configuration for the busiest user (excluding query embedding).
BAR = {"p50_ms": 25.0, "p95_ms": 60.0}
#: Issue 17's target per timed configuration: the busiest user's p50 and p95, the median user's p50 only.
BARS: dict[str, dict[str, float]] = {FULL: BAR, FULL_MEDIAN: {"p50_ms": 15.0}}
#: Queries whose top 10 (full configuration, busiest user) is compared with the exact ranking, and the bar.
OVERLAP_QUERIES = 100
OVERLAP_BAR = 0.95
#: The vector dimension of ``local:minilm``, the preset the corpus is embedded with.
DIMENSION = 384
#: The graph backend's vector index floor: one key on both backends (``read_floors["_graph_backend"]`` says which).
GRAPH_VECTOR_FLOOR = "graph vector index top-10 (all users)"
#: The same floor's key in reports written before Neo4j was benchmarked (FalkorDB only).
LEGACY_GRAPH_VECTOR_FLOOR = "FalkorDB vector index top-10 (all users)"
#: The floors every remember() configuration is divided by.
RATIO_FLOORS = ("pgvector HNSW top-10 (all users)", GRAPH_VECTOR_FLOOR, "numpy exact cosine top-10 (all users)",
                "numpy exact cosine top-10 (the user)")
#: How reports name each graph backend.
BACKEND_NAMES = {"falkordb": "FalkorDB", "neo4j": "Neo4j"}
#: How reports name the stores besides the graph, by their key in ``embedded_stores``.
EMBEDDED_STORE_NAMES = {"postgres": "PostgreSQL", "redis": "Redis"}


def embedded_stores(settings: Any) -> list[str]:
    """The stores a run's settings put on the embedded servers (``graph``, ``postgres``, ``redis``): those without a
    URI of their own."""
    return [name for name, uri in (("graph", settings.graph.uri), ("postgres", settings.postgres.dsn),
                                   ("redis", settings.redis.url)) if not uri]

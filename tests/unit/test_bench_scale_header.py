"""The scale report says which stores ran on the embedded servers: a run on an external Neo4j beside the embedded
PostgreSQL and Redis was labelled "neo4j (embedded)"."""

from __future__ import annotations

from agentx_memory.bench.scale.config import embedded_stores
from agentx_memory.bench.scale.report import _header
from agentx_memory.settings import Settings


def _report(settings: Settings) -> dict:
    return {"sizes": [100000], "date": "2026-11-29", "commit": "abc", "run_seconds": 60,
            "machine": {"cpus": 2, "platform": "linux", "python": "3.11", "load_average_before": [0.1],
                        "load_average_after": [0.2]},
            "settings": {"graph_backend": settings.graph.backend, "embedded": settings.uses_embedded,
                         "embedded_stores": embedded_stores(settings), "embedding_model": "local:minilm",
                         "audit_level": "standard"}}


def test_an_external_graph_beside_the_embedded_stores_is_not_called_embedded():
    settings = Settings(graph={"uri": "bolt://127.0.0.1:7687"})
    line = _header(_report(settings))[2]
    assert "graph `neo4j` (a server of its own); PostgreSQL and Redis embedded," in line


def test_the_embedded_default_says_so_once_for_the_graph():
    line = _header(_report(Settings()))[2]
    assert "graph `falkordb` (embedded); PostgreSQL and Redis embedded," in line


def test_every_store_external_says_no_embedded():
    settings = Settings(graph={"uri": "bolt://db:7687"}, postgres={"dsn": "postgresql://db/x"},
                        redis={"url": "redis://db:6379"})
    line = _header(_report(settings))[2]
    assert "graph `neo4j` (a server of its own), embedding" in line and "embedded" not in line.split("embedding")[0]


def test_a_report_from_before_keeps_its_label():
    report = _report(Settings())
    del report["settings"]["embedded_stores"]
    assert "graph `falkordb` (embedded), embedding" in _header(report)[2]

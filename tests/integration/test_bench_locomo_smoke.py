"""The LoCoMo benchmark runs end to end on a tiny sample (so it cannot rot); no quality or timing assertions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import cli_env

SAMPLE = {
    "sample_id": "tiny-1",
    "conversation": {
        "speaker_a": "Ann", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy called Rufus last weekend!"},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Congrats! What breed is he?"},
            {"speaker": "Ann", "dia_id": "D1:3", "text": "A beagle. He loves the park near my flat.",
             "img_url": "x", "blip_caption": "a beagle puppy on grass"},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "I started pottery classes on Tuesdays."},
            {"speaker": "Ann", "dia_id": "D2:2", "text": "Nice, Rufus would knock everything over."},
        ],
    },
    "observation": {
        "session_1_observation": {"Ann": [["Ann adopted a beagle puppy called Rufus.", "D1:1"],
                                          ["Ann lives near a park.", ["D1:3"]],
                                          ["A statement citing no turn", "D9:9"]]},
        "session_2_observation": {"Ben": [["Ben takes pottery classes on Tuesdays.", "D2:1"]]},
    },
    "qa": [
        {"question": "What breed is Ann's puppy?", "answer": "beagle", "evidence": ["D1:3"], "category": 4},
        {"question": "When did Ben start pottery?", "answer": "June 2023", "evidence": ["D2:1"], "category": 2},
        {"question": "Who knocks things over?", "answer": "Rufus", "evidence": ["D2:2", "D1:1"], "category": 1},
        {"question": "Something adversarial", "answer": "", "evidence": [], "category": 5},
    ],
}


def test_locomo_benchmark_smoke(settings, backend, tmp_path):
    s = settings()
    data = tmp_path / "tiny-locomo.json"
    data.write_text(json.dumps([SAMPLE]))
    out = tmp_path / "results"
    env = cli_env(s)
    result = subprocess.run(
        [sys.executable, "-m", "agentx_memory.cli", "bench", "locomo", "--data", str(data), "--out", str(out),
         "--cache", str(tmp_path / "cache"), "--dump", *(["--wipe-neo4j"] if backend == "neo4j" else [])],
        env=env, capture_output=True, text=True, timeout=600, cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((out / "locomo.json").read_text())
    assert report["turns"] == 5
    # --dump: each question with what every method returned at K = 50, from which R@50 follows
    rows = report["per_question"]
    assert len(rows) == 3 and all(set(r["returned"]) == set(report["methods"]) for r in rows)
    for name, m in report["methods"].items():
        mean = sum(len(set(r["evidence"]) & set(r["returned"][name])) / len(set(r["evidence"])) for r in rows) / 3
        assert round(mean, 4) == m["overall"]["R@50"], name
    full = report["methods"]["agentx (full)"]
    assert full["questions"] == 3  # category 5 is left out
    assert set(full["overall"]) == {"R@5", "R@10", "R@20", "R@50"}
    # per conversation, and the spread across them (one conversation here: std 0, min = max = mean = overall)
    assert set(full["per_sample"]) == {SAMPLE["sample_id"]}
    r10 = full["across_samples"]["R@10"]
    assert r10["std"] == 0 and r10["min"] == r10["max"] == r10["mean"] == full["overall"]["R@10"]
    baselines = {"baseline: PostgreSQL full text", "baseline: BM25 (rank-bm25)", "baseline: vector (exact cosine)"}
    assert baselines <= set(report["methods"])
    assert any(name.startswith("- ") for name in report["methods"])  # ablations ran
    assert (out / "locomo.md").read_text().startswith("LoCoMo evidence recall")
    assert (out / "locomo.png").stat().st_size > 0


def test_locomo_benchmark_with_observations_as_facts_runs_the_variants_with_facts(settings, backend, tmp_path):
    s = settings()
    data = tmp_path / "tiny-locomo.json"
    data.write_text(json.dumps([SAMPLE]))
    out = tmp_path / "results"
    result = subprocess.run(
        [sys.executable, "-m", "agentx_memory.cli", "bench", "locomo", "--data", str(data), "--out", str(out),
         "--cache", str(tmp_path / "cache"), "--no-ablations", "--observations",
         "--variant", "off:retrieval.fact_lending=0", *(["--wipe-neo4j"] if backend == "neo4j" else [])],
        env=cli_env(s), capture_output=True, text=True, timeout=600, cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((out / "locomo.json").read_text())
    assert report["extraction"]["observations"] | {"seconds": 0} == {
        "source": "observations", "facts": 3, "skipped": 1, "seconds": 0}
    methods = set(report["methods"])
    assert {"agentx (full)", "agentx + facts", "off + facts"} <= methods and "off" not in methods
    assert report["methods"]["agentx + facts"]["questions"] == 3


def test_a_benchmark_never_empties_a_neo4j_database_unasked(settings, backend, tmp_path):
    if backend != "neo4j":
        return  # the guard is about Neo4j's single database; FalkorDB benchmarks use a graph of their own
    s = settings()
    result = subprocess.run(
        [sys.executable, "-m", "agentx_memory.cli", "bench", "locomo", "--data", str(tmp_path / "none.json")],
        env=cli_env(s), capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode != 0
    assert "--wipe-neo4j" in result.stdout + result.stderr

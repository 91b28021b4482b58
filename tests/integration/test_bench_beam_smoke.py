"""The BEAM benchmark runs end to end on a tiny synthetic chat in BEAM's format (so it cannot rot): loading as the
protocol says, a long message (over the working-memory cache's value limit) stored whole, abstention left out,
dict-of-lists evidence flattened, and recall figures that can be checked by hand. No quality or timing assertions on
the engine."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentx_memory.bench.beam import cut_chat, flatten_evidence, load_beam, recall_at, run_beam, strip_marker
from agentx_memory.bench.choose import choose, questions_of
from agentx_memory.bench.common import engine_variant
from agentx_memory.errors import ValidationError
from agentx_memory.memory import AsyncAgentMemory
from tests.conftest import cli_env

# ≈ 87 KB: over the working-memory cache's value limit (64 KB), under the engine's turn limit (1 MiB).
LONG = "Packing list for the Lisbon trip: " + " ".join(f"item{n} woollen socks" for n in range(4000))


def _msg(mid: int, role: str, content: str, anchor: str | None = None) -> dict:
    m = {"role": role, "id": mid, "index": "1,1", "question_type": "main_question", "content": content}
    if anchor:
        m["time_anchor"] = anchor
    return m


CHAT = [
    {"batch_number": 1, "time_anchor": None, "turns": [
        [_msg(0, "user", "I keep my sourdough starter in a blue ceramic crock on the windowsill. ->-> 1,1",
              "January-05-2024"),
         _msg(1, "assistant", "A warm sill is fine; feed the starter daily with equal flour and water.")],
        [_msg(2, "user", "My bicycle is a green Brompton folding model bought in Leeds. ->-> 1,2"),
         _msg(3, "assistant", "Brompton frames fold quickly; check the hinge clamps monthly.")],
    ]},
    {"batch_number": 2, "time_anchor": None, "turns": [
        [_msg(4, "user", "I moved the sourdough crock into the pantry since the sill got cold. ->-> 2,1",
              "February-10-2024"),
         _msg(5, "assistant", "A pantry gives a steadier temperature for fermentation.")],
        [_msg(6, "user", LONG), _msg(7, "assistant", "Remember adapters for Portuguese sockets.")],
        [_msg(8, "user", "Actually I sold the Brompton and ride a red cargo trike now. ->-> 2,3"),
         _msg(9, "assistant", "Cargo trikes carry groceries well; mind the turning circle.")],
    ]},
]
QUESTIONS = {
    "information_extraction": [{"question": "Where is my sourdough crock kept?", "source_chat_ids": [0, 4]}],
    "contradiction_resolution": [{"question": "Do I ride a Brompton?",  # a dict of lists: flattened to [2, 8]
                                  "source_chat_ids": {"first_statement": [2], "second_statement": [8]}}],
    "summarization": [{"question": "Summarize the advice you gave me.",  # six ids: R@5 is at most 5/6
                       "source_chat_ids": [[1, 3], [5, 7], [9, 3]]}],
    "knowledge_update": [{"question": "What bike do I own?"}],  # no evidence: left out
    "abstention": [{"question": "What is my sister's name?", "source_chat_ids": None}],
}


def _write(root: Path) -> Path:
    for n in ("1", "2"):  # two users with the same chat: per-chat figures equal, spread 0
        d = root / "chats" / n
        d.mkdir(parents=True)
        (d / "chat.json").write_text(json.dumps(CHAT))
        (d / "probing_questions.json").write_text(json.dumps(QUESTIONS))
        (d / "topic.json").write_text(json.dumps({"id": int(n), "title": "synthetic"}))
    return root


def test_loading_follows_the_protocol(tmp_path):
    [chat] = load_beam(_write(tmp_path), [2])
    assert chat.user_id == "beam-2" and len(chat.turns) == 10
    first, long, last = chat.turns[0], chat.turns[6], chat.turns[-1]
    assert first.content == "User: I keep my sourdough starter in a blue ceramic crock on the windowsill."
    assert chat.turns[1].content.startswith("Assistant: A warm sill") and chat.turns[1].role == "assistant"
    assert first.timestamp == datetime(2024, 1, 5, tzinfo=UTC) and first.metadata == {"msg_id": 0}
    assert long.timestamp == datetime(2024, 2, 10, tzinfo=UTC) + timedelta(seconds=2)  # 3rd message of session 2
    assert long.conversation_id == "beam-2:session-2" and len(long.content.encode()) > 64 * 1024
    assert chat.reference_time == last.timestamp == datetime(2024, 2, 10, tzinfo=UTC) + timedelta(seconds=5)
    assert [q.evidence for q in chat.questions] == [[0, 4], [2, 8], [1, 3, 5, 7, 9]]
    assert chat.left_out == {"knowledge_update": 1, "abstention": 1}
    assert strip_marker("why? ->-> 12,3") == "why?" and strip_marker("a ->-> b") == "a ->-> b"
    assert flatten_evidence({"a": [1, [2]], "b": [2, 3]}) == [1, 2, 3]
    assert recall_at([1, 2], [5, 1, 1, 1, 2], 3) == 1.0  # a message returned twice counts once
    assert recall_at([1, 2, 3, 4], [1, 9, 2], 2) == 0.25
    with pytest.raises(ValidationError, match="no chat 3"):
        load_beam(tmp_path, [3])


def test_a_cut_chat_keeps_its_first_messages_and_the_questions_they_answer(tmp_path):
    [chat] = load_beam(_write(tmp_path), [1])
    half = cut_chat(chat, 0.5)
    assert [t.metadata["msg_id"] for t in half.turns] == [0, 1, 2, 3, 4]
    assert [q.evidence for q in half.questions] == [[0, 4]]  # [2, 8] and [1, 3, 5, 7, 9] reach beyond message 4
    assert half.cut_off == 2 and half.left_out == chat.left_out
    assert half.reference_time == half.turns[-1].timestamp == datetime(2024, 2, 10, tzinfo=UTC)  # asked from there
    assert [t.metadata["msg_id"] for t in cut_chat(chat, 0.01).turns] == [0]  # at least one message
    whole = cut_chat(chat, 1)
    assert whole.turns == chat.turns and whole.questions == chat.questions and whole.cut_off == 0
    for bad in (0, -0.5, 1.5, True, "0.5", float("nan")):
        with pytest.raises(ValidationError, match="prefix"):
            cut_chat(chat, bad)


def test_beam_benchmark_smoke(settings, tmp_path, caplog):
    s = settings()
    out = tmp_path / "results"
    with caplog.at_level(logging.WARNING):
        report = asyncio.run(run_beam(s, _write(tmp_path / "data"), out_dir=out, progress=lambda _: None))
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]  # e.g. a refused cache update

    assert report["chats"] == ["1", "2"] and report["messages"] == 20 and report["questions"] == 6
    assert report["left_out"] == {"knowledge_update": 2, "abstention": 2}
    assert report["longest_message_bytes"] > 64 * 1024 and report["max_turn_bytes"] == 1024 * 1024
    assert report["working_max_value_bytes"] == 64 * 1024  # the cache keeps a cut copy of the long message
    assert report["ingest"]["messages_per_second"] > 0 and set(report["ingest"]["per_chat_seconds"]) == {"1", "2"}
    assert list(report["methods"]) == ["agentx (full)", "baseline: BM25 (rank-bm25)",
                                       "baseline: vector (exact cosine)"]
    for name, m in report["methods"].items():
        assert m["questions"] == 6 and set(m["per_chat"]) == {"1", "2"}
        assert set(m["per_ability"]) == {"information_extraction", "contradiction_resolution", "summarization"}
        assert all(0 <= m["overall"][f"R@{k}"] <= 1 for k in (5, 10, 20, 50)), name
        assert m["overall"]["R@5"] <= m["overall"]["R@10"] <= m["overall"]["R@20"] <= m["overall"]["R@50"], name
        assert m["per_chat"]["1"] == m["per_chat"]["2"], name  # the same chat twice, as two users
        assert m["across_chats"]["R@10"]["std"] == 0.0
        assert m["across_chats"]["R@10"]["mean"] == m["per_chat"]["1"]["R@10"] == m["overall"]["R@10"]
        assert m["per_ability"]["summarization"]["R@5"] <= 5 / 6 + 1e-4, name  # 6 evidence ids, 5 slots
    assert set(report["methods"]["agentx (full)"]["latency_ms"]) == {"p50", "p95"}
    assert "per_question" not in report  # only with dump

    bm25 = report["methods"]["baseline: BM25 (rank-bm25)"]
    # Each of the first two questions shares words only with its evidence (sourdough/crock; Brompton):
    assert bm25["per_ability"]["information_extraction"]["R@5"] == 1.0
    assert bm25["per_ability"]["contradiction_resolution"]["R@5"] == 1.0
    # Ten messages per chat: baselines rank them all, so at K = 20 and 50 every evidence id is in.
    for name in ("baseline: BM25 (rank-bm25)", "baseline: vector (exact cosine)"):
        assert report["methods"][name]["overall"]["R@20"] == 1.0
    assert json.loads((out / "beam.json").read_text())["methods"] == report["methods"]
    assert (out / "beam.md").read_text().startswith("BEAM evidence recall")
    assert (out / "beam.png").stat().st_size > 0


    async def stored_long() -> str:
        memory = await AsyncAgentMemory.open(s)
        try:
            rows = await memory.ctx.postgres.fetch(
                "SELECT content FROM conversation_logs WHERE user_id = 'beam-1' AND metadata->>'msg_id' = '6'")
        finally:
            await memory.close()
        return rows[0]["content"]

    assert asyncio.run(stored_long()) == f"User: {LONG}"  # stored whole, over the engine's default limit


def test_bench_beam_cli(settings, backend, tmp_path):
    s = settings()
    data, out = _write(tmp_path / "data"), tmp_path / "results"

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "agentx_memory.cli", "bench", "beam", "--data", str(data), "--out", str(out),
             "--cache", str(tmp_path / "cache"), *args, *(["--wipe-neo4j"] if backend == "neo4j" else [])],
            env=cli_env(s), capture_output=True, text=True, timeout=600, cwd=Path(__file__).resolve().parents[2],
        )

    rejected = cli("--chats", "1,7")  # fails before any store is touched
    assert rejected.returncode == 2, rejected.stdout + rejected.stderr
    assert "--data" in rejected.stdout + rejected.stderr and "no chat 7" in rejected.stdout + rejected.stderr
    rejected = cli("--prefix", "1.5")
    assert rejected.returncode == 2 and "--prefix" in rejected.stderr and "at most 1" in rejected.stderr
    assert not out.exists()

    result = cli("--chats", "2", "--limit", "1", "--embedding", s.embedding.model)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((out / "beam.json").read_text())
    assert report["chats"] == ["2"] and report["questions"] == 1 and report["embedding_model"] == "hash:test"
    assert report["methods"]["agentx (full)"]["per_ability"]["information_extraction"]["n"] == 1
    assert "cache update failed" not in result.stderr
    assert "BEAM evidence recall" in result.stdout and (tmp_path / "cache" / "embeddings.sqlite").exists()


def test_prefix_asks_shorter_chats(settings, tmp_path):
    """``prefix`` (``--prefix``): every chat cut to that share of its messages, only the questions they answer."""
    report = asyncio.run(run_beam(settings(), _write(tmp_path / "data"), out_dir=tmp_path / "out", prefix=0.5,
                                  progress=lambda _: None))
    assert report["prefix"] == 0.5 and report["messages"] == 10 and report["questions"] == 2
    assert report["cut_off"] == 4 and report["left_out"] == {"knowledge_update": 2, "abstention": 2}
    bm25 = report["methods"]["baseline: BM25 (rank-bm25)"]
    assert bm25["per_ability"] == {"information_extraction": {"R@5": 1.0, "R@10": 1.0, "R@20": 1.0, "R@50": 1.0,
                                                              "n": 2}}
    assert "cut to its first 0.5 of messages, 4 questions beyond" in (tmp_path / "out" / "beam.md").read_text()
    with pytest.raises(ValidationError, match="prefix"):
        asyncio.run(run_beam(settings(), tmp_path / "data", out_dir=tmp_path / "out2", prefix=0,
                             progress=lambda _: None))
    assert not (tmp_path / "out2").exists()


def test_beam_variants_run_on_the_same_ingest(settings, tmp_path):
    """``variants`` (``--variant``) add engine runs with recall (and ``retrieval.``) overrides, reported under their
    names."""
    report = asyncio.run(run_beam(settings(), _write(tmp_path / "data"), out_dir=tmp_path / "out", variants={
        "no vector": {"vector_weight": 0.0}, "one per session": {"retrieval.max_per_conversation": 1},
    }, progress=lambda _: None))
    assert list(report["methods"])[-2:] == ["no vector", "one per session"]
    assert report["methods"]["no vector"]["questions"] == report["methods"]["agentx (full)"]["questions"] == 6


def test_a_variant_sets_retrieval_settings_for_its_run_only(memory):
    retrieval = memory.core.ctx.settings.retrieval
    cap = retrieval.max_per_conversation
    with engine_variant(memory.core, {"retrieval.max_per_conversation": cap + 1, "vector_weight": 0.0}) as override:
        assert override == {"vector_weight": 0.0} and retrieval.max_per_conversation == cap + 1
    assert retrieval.max_per_conversation == cap
    with engine_variant(memory.core, None) as override:
        assert override is None


def test_dump_writes_what_each_method_returned_for_each_question(settings, tmp_path):
    """``dump`` (``--dump``): every question with the ids each method returned, from which its figures follow."""
    out = tmp_path / "out"
    report = asyncio.run(run_beam(settings(), _write(tmp_path / "data"), out_dir=out, dump=True,
                                  variants={"no vector": {"vector_weight": 0.0}}, progress=lambda _: None))
    rows = report["per_question"]
    assert [(r["chat"], r["question"]) for r in rows[:3]] == [
        ("1", "Where is my sourdough crock kept?"), ("1", "Do I ride a Brompton?"),
        ("1", "Summarize the advice you gave me.")]
    assert rows[1]["evidence"] == [2, 8] and [r["chat"] for r in rows[3:]] == ["2"] * 3
    for name, m in report["methods"].items():
        for k in (5, 10, 20, 50):
            mean = sum(recall_at(r["evidence"], r["returned"][name], k) for r in rows) / len(rows)
            assert round(mean, 4) == m["overall"][f"R@{k}"], (name, k)
    assert json.loads((out / "beam.json").read_text())["per_question"] == rows
    # the dump is what ``bench choose`` reads: its in-sample figures are the report's, per chat and pooled
    chosen = choose(questions_of(report), k=10)
    assert chosen["configurations"] == ["agentx (full)", "no vector"] and chosen["conversations"] == 2
    for name in chosen["configurations"]:
        figures = chosen["in_sample"][name]["beam"]
        assert figures["pooled"] == pytest.approx(report["methods"][name]["overall"]["R@10"], abs=1e-4), name
        assert figures["mean_per_conversation"] == pytest.approx(
            report["methods"][name]["across_chats"]["R@10"]["mean"], abs=1e-4), name

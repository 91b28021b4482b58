"""The command line on the real embedded servers, in subprocesses: ``agentx-memory remember`` (JSON, table with
``--explain``) and ``agentx-memory ingest FILE`` (good lines stored, bad lines reported by number and skipped).
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentx_memory import AgentMemory, Entity, Fact, Turn
from tests.conftest import cli_env

REF = datetime(2024, 5, 10, 12, 0, tzinfo=UTC)


def agentx(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("agentx-memory")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "agentx_memory.cli"]
    return subprocess.run([*command, *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def namespace(settings, embedded_home):
    s = settings()
    return s, cli_env(s, COLUMNS="200")  # rich wraps at the terminal width; keep lines whole


def _seed(s) -> dict:
    with AgentMemory(s, user_id="alice") as memory:
        turns = memory.store_turns([
            Turn(conversation_id="c1", user_id="alice", timestamp=REF - timedelta(days=2, minutes=-i), content=text,
                 metadata={"dia_id": f"D1:{i}"})
            for i, text in enumerate(["I moved to Lisbon in May", "The trams in Lisbon are yellow",
                                      "My sister Clara visits in June"])])
        lisbon = memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="place"))
        fact = memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon", entity_ids=[lisbon.id],
                                      source_turn_id=turns[0].id))
        memory.store_turn(Turn(conversation_id="c-bob", user_id="bob", content="I moved to Lisbon too"))
        expected = memory.remember("Where did I move?", top_k=5)
        memory.drain()
    return {"turns": turns, "fact": fact, "entity": lisbon, "expected": expected}


def test_remember_json(namespace):
    s, env = namespace
    seeded = _seed(s)
    result = agentx("remember", "Where did I move?", "--user", "alice", "--top-k", "5", "--json", env=env)
    assert result.returncode == 0, result.stderr + result.stdout
    payload = json.loads(result.stdout)
    assert payload["query"] == "Where did I move?" and payload["user_id"] == "alice"
    assert payload["channels"] == ["_global"]
    turn_ids = [t["item"]["id"] for t in payload["turns"]]
    assert turn_ids == [t.id for t in seeded["expected"].turns]  # the same ranking as the library call
    assert set(turn_ids) <= {t.id for t in seeded["turns"]}  # never bob's
    assert all(t["item"]["user_id"] == "alice" for t in payload["turns"])
    assert {t["item"]["metadata"]["dia_id"] for t in payload["turns"]} <= {"D1:0", "D1:1", "D1:2"}
    assert seeded["fact"].id in {f["item"]["id"] for f in payload["facts"]}
    assert seeded["entity"].id in {e["item"]["id"] for e in payload["entities"]}
    # explain: every item, and each adds up
    items = payload["turns"] + payload["facts"] + payload["entities"] + payload["strategies"]
    assert set(payload["explain"]) == {i["item"]["id"] for i in items}
    for entry in payload["explain"].values():
        assert abs(sum(sig["contribution"] for sig in entry["signals"].values()) - entry["score"]) <= 1e-9
    assert "techniques" in payload["metrics"]
    # no vectors in the output
    assert all(i["item"].get("embedding") is None for i in items)


def test_remember_table_with_explain_and_prompt(namespace):
    s, env = namespace
    _seed(s)
    result = agentx("remember", "Where did I move?", "--user", "alice", "--explain", "--prompt-tokens", "120", env=env)
    assert result.returncode == 0, result.stderr + result.stdout
    out = result.stdout
    assert "remember: 'Where did I move?'" in out
    assert "I moved to Lisbon in May" in out and "I moved to Lisbon too" not in out
    assert "signals" in out and "bm25:" in out and " = " in out  # value × weight = contribution
    assert "to_prompt(max_tokens=120)" in out
    assert "[Episodic Memory -- Relevant Past Conversations]" in out


# --- ingest -----------------------------------------------------------------------------------------------------


def line(i: int, **overrides) -> str:
    record = {"user_id": "alice", "conversation_id": "imp-1", "role": "user" if i % 2 == 0 else "assistant",
              "content": f"imported message {i} about the harbour", "timestamp": f"2024-05-0{1 + i % 9}T10:00:00Z",
              "metadata": {"n": i}}
    record.update(overrides)
    return json.dumps({k: v for k, v in record.items() if v is not ...})


def stored_contents(s) -> list[str]:
    with AgentMemory(s) as memory:
        rows = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT content, metadata FROM conversation_logs ORDER BY conversation_id, turn_index"))
        graph = memory._portal.run(memory.core.ctx.graph.read("MATCH (t:Turn) RETURN t.content AS content"))
        timeline = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT count(*) AS n FROM memory_timeline WHERE memory_type = 'episodic'"))[0]["n"]
    assert sorted(r["content"] for r in graph) == sorted(r["content"] for r in rows)  # log and graph agree
    assert timeline == len(rows)
    return [r["content"] for r in rows]


def test_ingest_stores_good_lines_and_reports_bad_ones(namespace, tmp_path):
    s, env = namespace
    lines = [
        line(0),                                                        # 1 good
        "{not json",                                                    # 2 malformed JSON
        line(1),                                                        # 3 good
        line(2, content=...),                                           # 4 missing content
        line(3, timestamp="yesterday-ish"),                             # 5 bad timestamp
        "",                                                             # 6 blank: ignored
        line(4, channel="Bad Channel!"),                                # 7 bad channel
        line(5, metadata="not an object"),                              # 8 metadata must be an object
        line(6, content="   "),                                         # 9 empty content
        "[1, 2, 3]",                                                    # 10 not an object
        line(7, content="x" * (1024 * 1024 + 1)),                       # 11 too large (limits.max_turn_bytes)
        line(8, unknown_field=True),                                    # 12 unknown field
        line(9, conversation_id="imp-2", metadata={"nested": {"ü": [1, None]}}),  # 13 good
    ]
    path = tmp_path / "turns.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    result = agentx("ingest", str(path), env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    bad = [2, 4, 5, 7, 8, 9, 10, 11, 12]
    for number in bad:
        assert f"line {number} skipped" in out, number
    for number in (1, 3, 6, 13):
        assert f"line {number} skipped" not in out
    assert "stored 3 turn(s); skipped 9 line(s)" in out
    assert "content" in out.split("line 4 skipped", 1)[1].splitlines()[0]
    assert "channel" in out.split("line 7 skipped", 1)[1].splitlines()[0]

    contents = stored_contents(s)
    assert sorted(contents) == sorted(["imported message 0 about the harbour", "imported message 1 about the harbour",
                                       "imported message 9 about the harbour"])
    # the good lines are searchable with their metadata
    with AgentMemory(s) as memory:
        bundle = memory.remember("harbour", user_id="alice")
        assert {t.item.metadata.get("n") for t in bundle.turns if "n" in t.item.metadata} == {0, 1}
        assert any(t.item.metadata == {"nested": {"ü": [1, None]}} for t in bundle.turns)

    # a clean file exits 0; lines with their conversation index (like the demo's) can be ingested again harmlessly
    clean = tmp_path / "clean.jsonl"
    clean.write_text("\n".join(line(i, conversation_id="imp-3", index=i) for i in range(2)) + "\n", encoding="utf-8")
    for _ in range(2):
        again = agentx("ingest", str(clean), env=env)
        assert again.returncode == 0, again.stdout + again.stderr
        assert "stored 2 turn(s); skipped 0 line(s)" in again.stdout
    assert len(stored_contents(s)) == len(contents) + 2


def test_ingest_skips_lines_that_conflict_with_stored_state(namespace, tmp_path):
    """Lines that are valid on their own but collide at store time (another user's conversation, two users in one
    conversation, a turn index already taken) are reported and skipped; the rest of the file is stored."""
    s, env = namespace
    with AgentMemory(s) as memory:
        memory.store_turn(Turn(conversation_id="bobs-chat", user_id="bob", content="bob's own words"))
    lines = [
        line(0, conversation_id="fresh"),                                 # 1 good
        line(1, conversation_id="bobs-chat"),                             # 2 bob's conversation, alice's line
        line(2, conversation_id="fresh"),                                 # 3 good
        line(3, conversation_id="fresh", user_id="carol"),                # 4 carol in alice's conversation
        line(4, conversation_id="other"),                                 # 5 good
        line(5, conversation_id="fresh", index=0, content="a different first turn"),  # 6 index 0 is taken
    ]
    path = tmp_path / "conflicts.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = agentx("ingest", str(path), env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    for number in (2, 4, 6):
        assert f"line {number} skipped" in result.stdout, (number, result.stdout)
    assert "stored 3 turn(s); skipped 3 line(s)" in result.stdout, result.stdout
    contents = stored_contents(s)
    assert sorted(contents) == sorted(["bob's own words", "imported message 0 about the harbour",
                                       "imported message 2 about the harbour", "imported message 4 about the harbour"])


def test_ingest_missing_file_fails_cleanly(namespace, tmp_path):
    _, env = namespace
    result = agentx("ingest", str(tmp_path / "nope.jsonl"), env=env)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "nope.jsonl" in result.stdout + result.stderr and "file" in result.stdout


def _strict_json(text: str):
    """json.loads that refuses NaN and ±Infinity, which are not JSON (Python's json accepts them by default)."""
    def refuse(constant: str):
        raise ValueError(f"{constant} is not valid JSON")
    return json.loads(text, parse_constant=refuse)


def test_remember_json_is_valid_json_for_zero_vectors(namespace):
    """A stored zero vector has no cosine similarity (NaN): the JSON output says null, never NaN."""
    s, env = namespace
    with AgentMemory(s, user_id="alice") as memory:
        turn = memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="I moved to Lisbon in May"))
        # a zero vector stored before vectors were checked (or by another writer): pgvector's cosine of it is NaN
        memory._portal.run(memory.core.ctx.postgres.execute(
            "UPDATE conversation_logs SET embedding = array_fill(0, ARRAY[%s])::vector WHERE turn_id = %s",
            (s.embedding.dimension, turn.id)))
    result = agentx("remember", "Where did I move?", "--user", "alice", "--json", env=env)
    assert result.returncode == 0, result.stderr + result.stdout
    payload = _strict_json(result.stdout)
    assert payload["query"] == "Where did I move?" and "NaN" not in result.stdout


def test_stored_text_and_queries_are_shown_as_text_never_as_markup(namespace, tmp_path):
    """Square brackets are data: a stored "[/x]" or a query with one crashed `remember` (rich markup), "[bold]" was
    swallowed, and an ingest line with one crashed the skipped-line report (found by the injection corpus)."""
    s, env = namespace
    with AgentMemory(s, user_id="alice") as memory:
        memory.store_turn(Turn(conversation_id="c1", user_id="alice",
                               content="closing tag [/x] and [bold red]styled[/bold red] in a turn"))
    result = agentx("remember", "closing tag [/x]", "--user", "alice", env=env)
    assert result.returncode == 0, result.stderr + result.stdout
    assert "[/x]" in result.stdout and "[bold red]styled[/bold red]" in result.stdout

    path = tmp_path / "turns.jsonl"
    path.write_text(line(0) + "\n" + line(1, role="[/yellow]") + "\n", encoding="utf-8")
    ingested = agentx("ingest", str(path), env=env)
    assert ingested.returncode == 1 and "Traceback" not in ingested.stderr, ingested.stderr  # 1: a line was skipped
    assert "line 2 skipped" in ingested.stdout and "[/yellow]" in ingested.stdout
    assert "stored 1 turn(s); skipped 1 line(s)" in ingested.stdout

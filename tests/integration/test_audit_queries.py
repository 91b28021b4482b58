"""Every ```sql block of docs/audit-queries.md runs against real data written through the API, and returns what it
promises. The data: two users' turns, an entity, a fact, a promotion, a strategy search, a few retrieval reads (logged
with ``ctx.audit.log_read`` since retrieval is not built yet), one failed write, and one turn stored with audit off."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentx_memory import AgentMemory, Entity, Fact, Turn

DOC = Path(__file__).resolve().parents[2] / "docs" / "audit-queries.md"
_SECTION = re.compile(r"^## (\d+)\. (.+?)\n(.*?)(?=^## |\Z)", re.S | re.M)
_SQL = re.compile(r"```sql\n(.*?)```", re.S)


def doc_queries() -> list[tuple[int, str, str]]:
    """(number, title, sql) of every query section of the doc."""
    text = DOC.read_text(encoding="utf-8")
    out = []
    for number, title, body in _SECTION.findall(text):
        blocks = _SQL.findall(body)
        assert len(blocks) == 1, f"section {number} should hold exactly one ```sql block"
        out.append((int(number), title.strip(), blocks[0]))
    assert len(_SQL.findall(text)) == len(out), "every ```sql block must sit under a numbered heading"
    return out


QUERIES = doc_queries()


def test_the_doc_has_at_least_ten_queries():
    assert len(QUERIES) >= 10
    assert [n for n, _, _ in QUERIES] == list(range(1, len(QUERIES) + 1))


@pytest.fixture(scope="module")
def audited(namespaces):
    """One namespace with audit level ``reads`` and the data every query is checked against."""
    settings = namespaces.new(audit={"level": "reads"})
    memory = AgentMemory(settings, user_id="alice")
    try:
        data = _populate(memory, settings)
        yield memory, data
    finally:
        memory.close()
        asyncio.run(namespaces.drop(settings))


def _populate(memory: AgentMemory, settings) -> dict:
    audit = memory.core.ctx.audit
    run = memory._portal.run
    turns = memory.store_turns([Turn(conversation_id="c1", user_id="alice", content="I moved to Lisbon in May."),
                                Turn(conversation_id="c1", user_id="alice", content="Lisbon is lovely in spring.")],
                               channel="proj")
    bob_turn = memory.store_turn(Turn(conversation_id="bob-c", user_id="bob", content="Bob here."))
    lisbon = memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="place"), channel="proj")
    fact = memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon", source_turn_id=turns[0].id,
                                  entity_ids=[lisbon.id], confidence=0.9), channel="proj")
    promoted = memory.promote_to_global(fact.id, "stated twice")
    memory.learn_strategy("ask where the user lives")
    memory.find_strategies("where does the user live", channels=["proj"])
    run(audit.log_read("where does alice live", ["proj", "_global"], 2, 250, user_id="alice", source_channel="proj",
                       metadata={"result_ids": [fact.id, promoted.id], "result_channels": ["proj", "_global"]}))
    run(audit.log_read("what is the weather", ["_global"], 0, 5, user_id="alice", source_channel="_global",
                       metadata={"result_ids": [], "result_channels": []}))
    run(audit.log_read("bob query", ["_global"], 1, 40, user_id="bob", source_channel="_global",
                       metadata={"result_ids": [bob_turn.id], "result_channels": ["_global"]}))
    run(audit.log_write("store", "episodic", "proj", [], user_id="alice", conversation_id="c1", success=False,
                        error_message="graph unreachable"))
    silent_settings = settings.model_copy(deep=True)
    silent_settings.audit.level = "off"
    with AgentMemory(silent_settings) as silent:
        unaudited = silent.store_turn(Turn(conversation_id="c-silent", user_id="alice", content="not audited"))
    return {"turns": turns, "bob_turn": bob_turn, "lisbon": lisbon, "fact": fact, "promoted": promoted,
            "unaudited": unaudited}


def _check_1(rows, data):
    assert rows and all(r["operation"] not in ("retrieve", "find_strategies") for r in rows)
    seen = {(r["user_id"], r["operation"], r["memory_type"]) for r in rows}
    assert {("alice", "store", "episodic"), ("bob", "store", "episodic"), ("alice", "upsert", "semantic"),
            ("alice", "store", "semantic"), ("alice", "promote", "semantic"), ("alice", "store", "procedural")} <= seen
    fact_row = next(r for r in rows if r["operation"] == "store" and r["memory_type"] == "semantic")
    assert fact_row["affected_ids"] == [data["fact"].id] and fact_row["source_channel"] == "proj"
    assert not any(data["unaudited"].id in (r["affected_ids"] or []) for r in rows)


def _check_2(rows, data):
    counts = {(r["user_id"], r["memory_type"]): r["writes"] for r in rows}
    assert counts == {("alice", "episodic"): 2, ("bob", "episodic"): 1, ("alice", "semantic"): 3,
                      ("alice", "procedural"): 1}
    assert {r["day"] for r in rows} == {datetime.now(UTC).date()}


def _check_3(rows, data):
    by_channel = {r["channel"]: r for r in rows}
    assert set(by_channel) == {"_global", "proj"}
    assert (by_channel["_global"]["reads"], by_channel["_global"]["users"]) == (4, 2)
    assert (by_channel["proj"]["reads"], by_channel["proj"]["users"]) == (2, 1)
    assert [r["channel"] for r in rows] == ["_global", "proj"]


def _check_4(rows, data):
    assert sorted(r["operation"] for r in rows) == ["find_strategies", "retrieve"]
    retrieve = next(r for r in rows if r["operation"] == "retrieve")
    assert retrieve["query_text"] == "where does alice live"
    assert retrieve["target_channels"] == ["proj", "_global"]
    assert retrieve["results_from_several_channels"] is True


def _check_5(rows, data):
    assert len(rows) == 1
    row = rows[0]
    assert (row["fact_id"], row["global_fact_id"]) == (data["fact"].id, data["promoted"].id)
    assert row["reason"] == "stated twice" and row["promoted_from_channel"] == "proj"
    assert (row["min_confidence"], row["min_access_count"], row["min_conversations"]) == (0.85, 5, 2)
    assert row["promotion_confidence"] == 0.9 and row["promotion_conversation_count"] == 1
    assert row["met_thresholds"] is False  # a manual promotion below the automatic thresholds


def _check_6(rows, data):
    assert rows[0]["latency_ms"] == 250 and rows[0]["query_text"] == "where does alice live"
    latencies = [r["latency_ms"] for r in rows]
    assert latencies == sorted(latencies, reverse=True) and len(rows) == 4


def _check_7(rows, data):
    retrieve = [r for r in rows if r["operation"] == "retrieve"]
    assert len(retrieve) == 1 and retrieve[0]["calls"] == 3
    assert retrieve[0]["p50_ms"] == 40 and retrieve[0]["max_ms"] == 250


def _check_8(rows, data):
    top = rows[0]
    assert (top["operation"], top["memory_type"]) == ("store", "episodic")
    assert (top["total"], top["failures"]) == (3, 1)
    assert float(top["error_pct"]) == pytest.approx(33.33)
    assert top["last_error"] == "graph unreachable"
    assert all(r["failures"] == 0 for r in rows[1:])


def _check_9(rows, data):
    top = rows[0]
    assert top["memory_id"] == data["fact"].id
    assert top["touches"] == 3 and top["reads"] == 1  # stored, promoted, read back
    assert top["summary"] == "Alice lives in Lisbon" and top["channel"] == "proj"
    ids = [r["memory_id"] for r in rows]
    assert data["promoted"].id in ids and data["lisbon"].id in ids


def _check_10(rows, data):
    assert [(r["turn_index"], r["operation"], r["projected"], r["success"]) for r in rows] == \
        [(0, "store", True, True), (1, "store", True, True)]
    assert rows[0]["content"] == "I moved to Lisbon in May." and rows[0]["source_channel"] == "proj"


def _check_11(rows, data):
    assert [r["turn_id"] for r in rows] == [data["unaudited"].id]


def _check_12(rows, data):
    assert [(r["operation"], r["memory_type"], r["summary"]) for r in rows] == \
        [("upsert", "entity", "Lisbon"), ("store", "fact", "Alice lives in Lisbon")]


def _check_13(rows, data):
    today = datetime.now(UTC).date()
    assert [r["partition"] for r in rows] == [f"memory_audit_log_{today:%Y%m%d}"]
    assert rows[0]["entries"] == 11  # 6 writes + 1 failed write + 1 strategy search + 3 reads


CHECKS = {n: globals()[f"_check_{n}"] for n in range(1, 14)}


@pytest.mark.parametrize("number,title,query", QUERIES, ids=[f"{n}-{t}" for n, t, _ in QUERIES])
def test_audit_query(audited, number, title, query):
    memory, data = audited
    rows = memory._portal.run(memory.core.ctx.postgres.fetch(query))
    rows = [{k: (str(v) if k == "partition" else v) for k, v in r.items()} for r in rows]
    check = CHECKS.get(number)
    assert check is not None, f"query {number} ({title}) has no expectation in this test: add one"
    check(rows, data)

"""Snapshots, export and import (issue 16) on both graph backends: a snapshot restores every store exactly as it was,
an exported file loads into another installation equal, and a file that cannot be loaded whole is refused before
anything is written."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentx_memory import AgentMemory, ConflictError, ControlMemory, Fact, NotFoundError, Turn, ValidationError
from agentx_memory.fact_slots import slot_key
from agentx_memory.sql.snapshots import SNAPSHOT_TABLES
from tests.conftest import cli_env, gread, gwrite
from tests.integration.test_forget import _fill
from tests.integration.test_recall_cli import agentx

GENERATED = ("id", "content_tsv", "summary_tsv")


def _state(memory: AgentMemory, user: str) -> dict:
    """Everything of the user in every store, in a comparable form (serial ids and TTLs left out)."""
    nodes = gread(memory, "MATCH (n) WHERE n.user_id = $u OR (n:User AND n.id = $u) "
                          "RETURN labels(n)[0] AS label, properties(n) AS props", {"u": user})
    edges = gread(memory, "MATCH (a)-[r]->(b) WHERE a.user_id = $u OR (a:User AND a.id = $u) "
                          "RETURN labels(a)[0] AS a, a.id AS source, type(r) AS type, labels(b)[0] AS b, "
                          "coalesce(b.id, b.name) AS target, properties(r) AS props", {"u": user})
    rows = {}
    for table in SNAPSHOT_TABLES:
        found = memory._portal.run(memory.core.ctx.postgres.fetch(
            f"SELECT to_jsonb(t) AS row FROM {table} t WHERE user_id = %s", (user,)))
        rows[table] = sorted(json.dumps({k: v for k, v in r["row"].items() if k not in GENERATED}, sort_keys=True)
                             for r in found)
    # the turns waiting for reconcile: a restore leaves queued what was queued, and only that
    rows["turn_projection_queue"] = [r["turn_id"] for r in memory._portal.run(memory.core.ctx.postgres.fetch(
        "SELECT c.turn_id FROM turn_projection_queue q JOIN conversation_logs c ON c.id = q.log_id"
        " WHERE c.user_id = %s ORDER BY 1", (user,)))]
    redis = memory._portal.run(memory.core.ctx.working.export_user(user))

    def canon(items: list) -> list:
        return sorted(json.dumps(i, sort_keys=True, default=lambda v: [float(x) for x in v]) for i in items)

    return {"nodes": canon(nodes), "edges": canon(edges), "postgres": rows,
            # times left to live move on: compare which keys and fields expire, not when
            "redis": canon([{**{k: v for k, v in e.items() if k not in ("ttl_ms", "field_ttl_ms")},
                             "expiring_fields": sorted(e.get("field_ttl_ms") or {})} for e in redis])}


def test_a_snapshot_restores_every_store_as_it_was(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        _fill(memory, "alice")
        _fill(memory, "bob")
        # a turn in the log only, as while the graph was unreachable: it is restored waiting for reconcile
        memory._portal.run(memory.core.episodic.store_turn_log(
            Turn(conversation_id="alice-c2", user_id="alice", content="Logged while the graph was away.")))
        memory.drain()
        before, bob = _state(memory, "alice"), _state(memory, "bob")
        assert len(before["postgres"]["turn_projection_queue"]) == 1
        assert all(before["postgres"].values()) and before["nodes"] and before["edges"] and before["redis"]

        snapshot = memory.create_snapshot()
        assert [s.snapshot_id for s in memory.list_snapshots()] == [snapshot.snapshot_id]
        assert snapshot.counts["graph nodes"] == len(before["nodes"])
        # the user's memory moves on: a new turn, a forgotten conversation, a new working-memory value
        memory.store_turn(Turn(conversation_id="later", user_id="alice", content="We moved to Lisbon."))
        memory.forget(["alice-c1"])
        memory.working("alice", "alice-c1").set("k", 2)
        assert _state(memory, "alice") != before

        counts = memory.restore_from_snapshot(snapshot.snapshot_id)
        assert counts["graph nodes"] == snapshot.counts["graph nodes"]
        assert _state(memory, "alice") == before
        assert _state(memory, "bob") == bob  # another user is untouched
        # recall works on the restored vectors and text indexes
        assert any("Porto" in t.item.content for t in memory.remember("Where does alice live? Porto").turns)
        assert memory.get_conversation("alice-c1")[0].content == "alice lives in Porto."

        with pytest.raises(NotFoundError):
            memory.restore_from_snapshot("no-such-snapshot")
        receipt = memory.forget_user("alice")
        assert receipt.snapshots == 1 and memory.list_snapshots() == []


def test_a_fact_restored_from_a_snapshot_of_an_earlier_version_gets_its_slot_key(settings):
    """A snapshot taken before facts carried a slot key restores them with one: the contradiction check finds a
    fact by that key only, so a restored fact without it would never be replaced by a newer value."""
    with AgentMemory(settings(), user_id="alice") as memory:
        fact = memory.learn_fact(Fact(user_id="alice", claim="alice lives in Porto"))
        gwrite(memory, "MATCH (f:Fact) REMOVE f.slot_key")  # as a graph of an earlier version held it
        snapshot = memory.create_snapshot()
        memory.restore_from_snapshot(snapshot.snapshot_id)
        assert gread(memory, "MATCH (f:Fact {id: $id}) RETURN f.slot_key AS key", {"id": fact.id}) == [
            {"key": slot_key("alice", "alice lives in Porto")}]


def test_an_exported_file_loads_into_another_installation_equal(settings, tmp_path):
    path = tmp_path / "alice.jsonl.gz"
    with AgentMemory(settings(), user_id="alice") as source:
        _fill(source, "alice")
        source.drain()
        before = _state(source, "alice")
        stages: list[str] = []
        info = source.export_memory(path, progress=lambda stage, done: stages.append(stage))
        assert info.counts["postgres rows"] == sum(len(r) for r in before["postgres"].values())
        assert {"graph", "postgres"} <= set(stages)
        source.forget_user("alice")  # Neo4j Community has one database: both "installations" share its graph

    with AgentMemory(settings(), user_id="alice") as target:  # another namespace: another installation
        counts = target.import_memory(path, progress=lambda stage, done: None)
        assert counts["redis keys"] == len(before["redis"])
        assert _state(target, "alice") == before
        # a working-memory value set with its own TTL still expires after the move
        store = target.core.ctx.working
        key = store.session_key("alice", "_global", "alice-c1", "context")
        left = target._portal.run(store.client.execute_command("HPTTL", key, "FIELDS", 1, "k"))
        assert 0 < int(left[0]) <= target.settings.working.ttl_seconds * 1000
        with pytest.raises(ConflictError, match="already has memory"):
            target.import_memory(path)  # alice has memory now: nothing is merged over it
        assert _state(target, "alice") == before
        assert target.remember("Porto").turns


def test_a_snapshot_that_cannot_load_whole_is_refused_before_any_write(settings, tmp_path):
    with AgentMemory(settings(), user_id="alice") as memory:
        _fill(memory, "alice")
        memory.drain()
        path = memory.export_memory(tmp_path / "alice.jsonl").path
        lines = path.read_text().splitlines()

        cut = tmp_path / "cut.jsonl"
        cut.write_text("\n".join(lines[:-3]) + "\n")  # no end line: cut short
        with pytest.raises(ValidationError, match="cut short"):
            memory.import_memory(cut, user_id="dave")
        other_model = tmp_path / "model.jsonl"
        header = json.loads(lines[0]) | {"embedding": {"model": "local:other", "dimension": 384}}
        other_model.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
        with pytest.raises(ValidationError) as err:
            memory.import_memory(other_model, user_id="dave")
        assert err.value.field == "snapshot.embedding"
        newer = tmp_path / "newer.jsonl.gz"
        with gzip.open(newer, "wt") as out:
            out.write(json.dumps(json.loads(lines[0]) | {"version": 99}) + "\n")
        with pytest.raises(ValidationError) as err:
            memory.import_memory(newer, user_id="dave")
        assert err.value.field == "snapshot.version"
        with pytest.raises(ValidationError):
            memory.import_memory(Path(tmp_path / "missing.jsonl"), user_id="dave")
        # the same installation under another user: the turn ids are alice's, so nothing may be written
        with pytest.raises(ConflictError, match="another user"):
            memory.import_memory(path, user_id="dave")
        nothing = {"nodes": [], "edges": [], "redis": [],
                   "postgres": {table: [] for table in [*SNAPSHOT_TABLES, "turn_projection_queue"]}}
        assert _state(memory, "dave") == nothing


def test_a_turn_logged_as_projected_without_its_node_is_loaded_for_reconcile(settings, tmp_path):
    """A snapshot reads the graph before the log, so a turn stored in between is in its rows as projected but has no
    node in it: the load leaves that turn queued (reconcile projects it) instead of marking it done without one."""
    with AgentMemory(settings(), user_id="alice") as memory:
        _fill(memory, "alice")
        memory.drain()
        path = memory.export_memory(tmp_path / "alice.jsonl").path
        turns = [t.id for t in memory.get_conversation("alice-c1")]
        memory.forget_user("alice")
        # the file as the race writes it: the second turn's log row (projected) without its node and edges
        records = [json.loads(line) for line in path.read_text().splitlines()]
        kept = [r for r in records if r.get("id") != turns[1] and turns[1] not in (r.get("source"), r.get("target"))]
        assert len(records) - len(kept) >= 2  # its node and at least its conversation's edge
        end = kept[-1]
        end["counts"] = {**end["counts"], "graph nodes": end["counts"]["graph nodes"] - 1}
        raced = tmp_path / "raced.jsonl"
        raced.write_text("".join(json.dumps(r) + "\n" for r in kept))

        memory.import_memory(raced)
        assert [t.pending_projection for t in memory.get_conversation("alice-c1")] == [False, True]
        assert memory.reconcile().projected == 1
        assert gread(memory, "MATCH (t:Turn {id: $id}) RETURN t.content AS c", {"id": turns[1]}) == [
            {"c": "We decided to visit."}]
        assert [t.pending_projection for t in memory.get_conversation("alice-c1")] == [False, False]


def test_export_and_import_from_the_command_line(settings, embedded_home, tmp_path):
    source, target = settings(), settings()
    with AgentMemory(source, user_id="alice") as memory:
        _fill(memory, "alice")
        memory.drain()
        before = _state(memory, "alice")
    out = tmp_path / "alice.jsonl.gz"
    done = agentx("export", "alice", "--out", str(out), env=cli_env(source, COLUMNS="200"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "exported alice" in done.stdout and out.is_file()
    with AgentMemory(source, user_id="alice") as memory:
        memory.forget_user("alice")  # Neo4j Community: both namespaces share one graph

    done = agentx("import", str(out), env=cli_env(target, COLUMNS="200"))
    assert done.returncode == 0, done.stdout + done.stderr
    with AgentMemory(target, user_id="alice") as memory:
        assert _state(memory, "alice") == before
    again = agentx("import", str(out), env=cli_env(target, COLUMNS="200"))
    assert again.returncode == 2 and "already has memory" in again.stdout
    missing = agentx("import", str(tmp_path / "nope.jsonl"), env=cli_env(target, COLUMNS="200"))
    assert missing.returncode == 2 and "file:" in missing.stdout


def _agent_state(view: AgentMemory) -> dict:
    """What an agent reads of its own: the conversations, facts and controls it wrote."""
    turns = sorted((t.id, t.content, t.scope) for c in ("plan", "plan-2") for t in _turns_or_none(view, c)
                   if t.agent_id == view.agent_id)
    facts = sorted((f.id, f.claim, f.scope) for f in view.facts_as_of(datetime.now(UTC) + timedelta(minutes=1))
                   if f.agent_id == view.agent_id)
    controls = sorted((c.id, c.content) for c in view.list_controls() if c.agent_id == view.agent_id)
    return {"turns": turns, "facts": facts, "controls": controls}


def _turns_or_none(view: AgentMemory, conversation: str) -> list:
    try:
        return view.get_conversation(conversation)
    except NotFoundError:
        return []


def test_an_agents_snapshot_restores_what_it_wrote_and_leaves_the_rest_of_the_user(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        planner, coder = memory.for_agent("planner"), memory.for_agent("coder")
        planner.store_turns([Turn(conversation_id="plan", user_id="alice", content="Private: the code is 7-3-9."),
                             Turn(conversation_id="plan", user_id="alice", content="Shared: launch Monday.",
                                  scope="global")])
        coder.store_turn(Turn(conversation_id="plan", user_id="alice", content="Coder: tests are green."))
        planner.learn_fact(Fact(user_id="alice", claim="the code is 7-3-9", scope="agent"))
        planner.add_control(ControlMemory(user_id="alice", content="Never say the code aloud", scope="agent"))
        user_fact = memory.learn_fact(Fact(user_id="alice", claim="alice likes tea"))
        memory.drain()
        before, coder_before = _agent_state(planner), _agent_state(coder)
        assert len(before["turns"]) == 2 and len(before["facts"]) == 1 and len(before["controls"]) == 1

        snapshot = planner.create_snapshot()
        assert snapshot.agent_id == "planner" and snapshot.counts.get("redis keys", 0) == 0
        assert [s.snapshot_id for s in planner.list_snapshots()] == [snapshot.snapshot_id]
        assert coder.list_snapshots() == []  # an agent lists its own snapshots
        planner.store_turn(Turn(conversation_id="plan-2", user_id="alice", content="Later private note."))
        planner.forget([f for f, _, _ in before["facts"]])
        assert _agent_state(planner) != before

        with pytest.raises(NotFoundError):
            coder.restore_from_snapshot(snapshot.snapshot_id)  # not the coder's snapshot
        counts = planner.restore_from_snapshot(snapshot.snapshot_id)
        assert counts["graph nodes"] == 2  # its fact and control (its turns come back through the log)
        assert _agent_state(planner) == before
        assert _agent_state(coder) == coder_before and memory.get_fact(user_fact.id).claim == "alice likes tea"
        assert any("7-3-9" in str(s.item) for s in planner.remember("what is the code?").all_scored())
        assert not any("7-3-9" in str(s.item) for s in coder.remember("what is the code?").all_scored())

"""reconcile() on the real servers: a row that cannot be projected is quarantined, reported and skipped, and never
blocks the other rows; turns missing their timeline row get it back (issue 11, items 2 and 18)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentx_memory import StorageError, Turn
from agentx_memory.graph import cypher
from agentx_memory.sql.conversation_log import projected
from agentx_memory.sql.postgres import schema_dir
from tests.conftest import cli_env, gread, sql

# A log row written around the API (an older release, a restore, a manual fix): the log takes it, reconcile meets it.
_INSERT = (
    "INSERT INTO conversation_logs (turn_id, user_id, conversation_id, turn_index, timestamp, role, content, channel)"
    " VALUES (%(turn_id)s, 'alice', %(conversation_id)s, %(index)s, {timestamp}, 'user', %(content)s, '_global')"
)


def _insert(memory, turn_id: str, index: int, *, conversation_id: str = "c1", timestamp: str = "now()") -> None:
    sql(memory, _INSERT.format(timestamp=timestamp), {
        "turn_id": turn_id, "conversation_id": conversation_id, "index": index, "content": f"turn {turn_id}"})


def _graph_turns(memory) -> list[str]:
    return [r["id"] for r in gread(memory, "MATCH (t:Turn) RETURN t.id AS id ORDER BY t.id")]


def _timeline_ids(memory) -> list[str]:
    rows = sql(memory, "SELECT neo4j_node_id AS id FROM memory_timeline WHERE memory_type = 'episodic' ORDER BY 1")
    return [r["id"] for r in rows]


def test_a_row_that_cannot_be_read_back_is_quarantined_and_the_others_still_project(memory):
    """PostgreSQL stores the timestamp 'infinity'; no Python datetime (so no Turn, no graph integer) can hold it.
    Before quarantine the whole batch failed, every run, and no other unprojected row was ever projected."""
    _insert(memory, "good-1", 0)
    _insert(memory, "bad", 1, timestamp="'infinity'")
    _insert(memory, "good-2", 2)

    result = memory.reconcile()

    assert result.projected == 2
    assert [q.turn_id for q in result.quarantined] == ["bad"]
    assert "timestamp" in result.quarantined[0].error
    assert result.quarantined_total == 1
    assert _graph_turns(memory) == ["good-1", "good-2"]
    assert _timeline_ids(memory) == ["good-1", "good-2"]
    row = sql(memory, f"SELECT {projected()}, projection_error, projection_failed_at FROM conversation_logs"
                      " WHERE turn_id = 'bad'")[0]
    assert row["projected"] is False
    assert row["projection_error"] == result.quarantined[0].error
    assert row["projection_failed_at"] is not None

    again = memory.reconcile()  # the quarantined row is not retried, but still reported in the total
    assert (again.projected, again.quarantined, again.quarantined_total) == (0, (), 1)

    # clearing the error puts the row back in the queue (it fails again here: the data is still unreadable)
    sql(memory, "UPDATE conversation_logs SET projection_error = NULL WHERE turn_id = 'bad'")
    retried = memory.reconcile()
    assert [q.turn_id for q in retried.quarantined] == ["bad"]


def test_a_row_with_an_id_known_to_crash_the_graph_is_quarantined_without_being_sent(memory):
    """An id ending in a newline crashed FalkorDB (issue 11, item 1), so reconcile crashed it again every five
    minutes. Stored rows are held to the id rules before anything reaches the graph."""
    _insert(memory, "turn-1\n", 0)
    _insert(memory, "turn-2", 1)
    _insert(memory, "turn-3", 0, conversation_id=" c2")

    result = memory.reconcile()

    assert result.projected == 1
    assert sorted(q.turn_id for q in result.quarantined) == ["turn-1\n", "turn-3"]
    assert all("ValidationError" in q.error for q in result.quarantined)
    assert _graph_turns(memory) == ["turn-2"]
    assert memory.reconcile().quarantined == ()


def test_a_failing_row_in_a_later_batch_blocks_nothing_before_or_after_it(memory):
    for i in range(7):
        _insert(memory, f"t{i}", i, timestamp="'-infinity'" if i == 4 else "now()")
    result = memory._portal.run(memory.core.episodic.reconcile(batch_size=3))  # batches [0-2], [3-5], [6]
    assert result.projected == 6
    assert [q.turn_id for q in result.quarantined] == ["t4"]
    assert _graph_turns(memory) == ["t0", "t1", "t2", "t3", "t5", "t6"]
    chain = gread(memory, cypher.COUNT_FOLLOWED_BY, {"conversation_id": "c1", "user_id": "alice"})[0]
    assert chain == {"links": 4, "consecutive": 4}  # t0-t1-t2-t3 and t5-t6: the quarantined t4 is the gap


def test_a_turn_whose_timeline_write_failed_is_repaired_by_reconcile(memory):
    """The log and the graph took the turn, then the timeline write failed (a PostgreSQL restart, a crash): the
    turn used to be marked projected already, so reconcile never wrote its timeline row (issue 11, item 18)."""
    sql(memory, "CREATE FUNCTION refuse_timeline() RETURNS trigger LANGUAGE plpgsql AS"
                " $$ BEGIN RAISE EXCEPTION 'timeline refused'; END $$")
    sql(memory, "CREATE TRIGGER refuse_timeline BEFORE INSERT ON memory_timeline"
                " FOR EACH ROW EXECUTE FUNCTION refuse_timeline()")
    with pytest.raises(StorageError, match="timeline refused"):
        memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="I moved to Lisbon"))
    sql(memory, "DROP TRIGGER refuse_timeline ON memory_timeline")
    assert _timeline_ids(memory) == []

    result = memory.reconcile()

    assert result.projected == 1
    [turn] = memory.get_conversation("c1", user_id="alice")
    assert _timeline_ids(memory) == [turn.id]
    assert memory.reconcile().projected == 0


def test_the_migrations_send_projected_turns_without_a_timeline_row_back_to_reconcile(memory):
    """Turns damaged before the fix (projected, no timeline row) are repaired: migration 0005 puts them back in the
    queue once (re-running its statements is harmless), 0023 carries the queue over to its own table, and the next
    reconcile writes their timeline rows. The schema is taken back to before 0023 (every turn flagged projected)."""
    stored = memory.store_turns([Turn(conversation_id="c1", user_id="alice", content=f"turn {i}") for i in range(3)])
    sql(memory, "DELETE FROM memory_timeline WHERE neo4j_node_id = %s", (stored[1].id,))
    sql(memory, "ALTER TABLE conversation_logs ADD COLUMN projected BOOLEAN NOT NULL DEFAULT TRUE")
    for version in ("0005", "0023"):
        sql(memory, next((schema_dir() / "postgres").glob(f"{version}_*.sql")).read_text(encoding="utf-8"))
    assert [r["turn_id"] for r in sql(memory, "SELECT turn_id FROM conversation_logs c JOIN turn_projection_queue q"
                                              " ON q.log_id = c.id")] == [stored[1].id]

    assert memory.reconcile().projected == 1
    assert _timeline_ids(memory) == sorted(t.id for t in stored)
    assert sorted(_graph_turns(memory)) == sorted(t.id for t in stored)


def test_the_reconcile_command_reports_quarantined_turns(settings):
    """The command prints what it projected and quarantined, and exits 1 only for a run that quarantined."""
    from agentx_memory import AgentMemory

    s = settings()
    with AgentMemory(s) as memory:
        _insert(memory, "fine", 0)
        _insert(memory, "unreadable", 1, timestamp="'infinity'")

    def reconcile_command(exit_code: int) -> str:
        done = subprocess.run([sys.executable, "-m", "agentx_memory.cli", "reconcile"], env=cli_env(s),
                              capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
        assert done.returncode == exit_code, done.stdout + done.stderr
        return done.stdout

    first = reconcile_command(1)  # this run quarantined a turn: a scheduler running the command must see it
    assert "reconciled 1 turn(s) and 0 tool invocation(s)" in first
    assert "quarantined turn unreadable: StorageError" in first
    assert "1 turn(s) in quarantine" in first
    second = reconcile_command(0)  # nothing new: the quarantine is known and reported
    assert "reconciled 0 turn(s)" in second and "quarantined turn" not in second and "1 turn(s) in quarantine" in second


def test_a_full_reconcile_puts_back_what_a_graph_restored_from_an_older_backup_lacks(memory):
    """The graph restored from a backup older than the log lacks turns and tool calls the log holds as projected: a
    plain reconcile cannot know (nothing is queued), a full one compares the log with the graph, queues what is
    missing and projects it, for every user, from the API and from the command line."""
    turns = memory.store_turns([Turn(conversation_id="c1", user_id="alice", content=f"turn {i}") for i in range(3)])
    bobs = memory.store_turn(Turn(conversation_id="b1", user_id="bob", content="bob's turn"))
    call = memory.record_invocation("c1", turns[0].id, "maps", {"q": "Porto"}, {"ok": True}, True, 5)
    memory.drain()
    chain = ("MATCH (c:Conversation {id: $c})-[:HAS_TURN]->(t:Turn) OPTIONAL MATCH (t)-[:FOLLOWED_BY]->(n:Turn) "
             "RETURN t.id AS id, n.id AS next ORDER BY t.index")
    whole = gread(memory, chain, {"c": "c1"})
    assert len(whole) == 3

    # what the older backup did not have yet: alice's second turn, bob's turn, the tool call
    for label, node in (("Turn", turns[1].id), ("Turn", bobs.id), ("ToolInvocation", call.id)):
        memory._portal.run(memory.core.ctx.graph.write(f"MATCH (n:{label} {{id: $id}}) DETACH DELETE n", {"id": node}))
    plain = memory.reconcile()
    assert (plain.projected, plain.invocations_projected, plain.requeued) == (0, 0, 0)

    full = memory.reconcile(full=True)
    assert (full.requeued, full.invocations_requeued, full.projected, full.invocations_projected) == (2, 1, 2, 1)
    assert gread(memory, chain, {"c": "c1"}) == whole
    assert gread(memory, "MATCH (t:Turn {id: $id}) RETURN t.user_id AS u", {"id": bobs.id}) == [{"u": "bob"}]
    assert gread(memory, "MATCH (:Conversation {id: 'c1'})-[:USED_TOOL]->(ti:ToolInvocation)-[:INVOKED]->(:Tool) "
                         "RETURN ti.id AS id", {}) == [{"id": call.id}]
    again = memory.reconcile(full=True)
    assert (again.requeued, again.invocations_requeued, again.projected) == (0, 0, 0)

    memory._portal.run(memory.core.ctx.graph.write("MATCH (n:Turn {id: $id}) DETACH DELETE n", {"id": turns[2].id}))
    done = subprocess.run([sys.executable, "-m", "agentx_memory.cli", "reconcile", "--full"],
                          env=cli_env(memory.settings), capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the graph was missing 1 logged turn(s) and 0 tool invocation(s): queued again" in done.stdout
    assert "reconciled 1 turn(s) and 0 tool invocation(s)" in done.stdout
    assert gread(memory, chain, {"c": "c1"}) == whole

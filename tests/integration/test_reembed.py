"""Re-embedding after a model change (issue 16) on both graph backends: recall keeps working with the old vectors while
the new ones are staged, an interrupted re-embed resumes where it stopped, a turn stored mid-way is re-embedded before
the switch, and after the switch the stores serve the new model's vectors and refuse the old model.

Each test changes the embedding model of its namespace, so each takes a namespace of its own (on Neo4j the fixture
drops the schema afterwards, as it does whenever another model was used)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from agentx_memory import (
    AgentMemory,
    ConflictError,
    ControlMemory,
    EmbeddingDimensionMismatchError,
    Entity,
    Fact,
    Goal,
    Turn,
    ValidationError,
    reembed_status,
)
from agentx_memory.episodic import turn_text
from agentx_memory.providers.embeddings import HashEmbedder
from tests.conftest import cli_env, gread, sql
from tests.integration.test_recall_cli import agentx

NEW_MODEL, NEW_DIMENSION = "hash:reembedded", 32
TOPICS = ["Alice adopted a grey cat named Miso.", "The quarterly budget review is on Friday.",
          "Bob repaired the red bicycle chain.", "We booked flights to Reykjavik for March.",
          "The sourdough starter needs feeding twice a day.", "Carol plays the cello in an orchestra."]


class Interrupted(Exception):
    """Raised by a progress callback to stop a re-embed after its first batch."""


def _stop_after_first_batch(stage: str, done: int) -> None:
    raise Interrupted(stage)


def _fill(memory: AgentMemory) -> None:
    memory.store_turns([Turn(conversation_id="c1", user_id="alice", content=text) for text in TOPICS])
    place = memory.upsert_entity(Entity(user_id="alice", name="Reykjavik", type="place", description="a city"))
    memory.learn_fact(Fact(user_id="alice", claim="Alice has a cat named Miso", entity_ids=[place.id]))
    memory.add_goal(Goal(user_id="alice", description="Visit Reykjavik in March"))
    memory.learn_strategy("Book flights early", context_pattern="travel", user_id="alice")
    memory.add_control(ControlMemory(user_id="alice", content="Never share the flight booking code"))
    memory.summarize_conversation("c1", user_id="alice")


def _new_settings(s):
    return s.model_copy(update={"embedding": s.embedding.model_copy(
        update={"model": NEW_MODEL, "dimension": NEW_DIMENSION})})


QUERIES = ["grey cat Miso", "cello orchestra", "sourdough starter feeding"]


def _turns(memory: AgentMemory, query: str) -> list[str]:
    """The contents of the turns recall ranks for ``query``, best first."""
    return [t.item.content for t in memory.remember(query).turns]


def _top_turns(memory: AgentMemory, query: str) -> list[str]:
    return _turns(memory, query)[:3]


def _status(memory: AgentMemory) -> dict:
    return memory._portal.run(reembed_status(memory.core.ctx))


def test_recall_works_during_a_reembed_and_with_the_new_model_after_the_switch(settings):
    s = settings()
    with AgentMemory(s, user_id="alice") as memory:
        _fill(memory)
        before = {q: _turns(memory, q) for q in QUERIES}
        copies = "SELECT count(*) AS n FROM memory_timeline WHERE embedding IS NOT NULL"
        assert sql(memory, copies)[0]["n"] > 0  # the timeline copies the facts', entities' and goals' vectors
        with pytest.raises(Interrupted):
            memory.reembed(NEW_MODEL, NEW_DIMENSION, batch_size=2, progress=_stop_after_first_batch)

        # Interrupted after one batch: the progress record says where, and recall still answers with the old
        # vectors (the live slot is untouched: 64 dimensions everywhere).
        status = _status(memory)
        for store in ("graph", "postgres"):
            assert status[store]["active"] == {"model": "hash:test", "dimension": 64}
            assert status[store]["reembed"]["model"] == NEW_MODEL
            assert status[store]["reembed"]["phase"] == "staging"
        assert status["postgres"]["reembed"]["cursors"]["conversation_logs"] > 0
        assert {q: _turns(memory, q) for q in QUERIES} == before
        assert TOPICS[0] in _top_turns(memory, "grey cat Miso")
        assert {len(r["embedding"]) for r in sql(memory, "SELECT embedding FROM conversation_logs")} == {64}

        # A turn stored mid-way is written with the old model and has nothing staged ...
        late = memory.store_turn(Turn(conversation_id="c2", user_id="alice", content="The lighthouse keeper waved."))
        assert late.content in _top_turns(memory, "lighthouse keeper")

        # ... the rerun resumes (the first batch is skipped, not embedded again) and stages it before the switch.
        report = memory.reembed(NEW_MODEL, NEW_DIMENSION, batch_size=2)
        assert report.switched
        assert report.previous == {"postgres": {"model": "hash:test", "dimension": 64},
                                   "graph": {"model": "hash:test", "dimension": 64}}
        assert report.skipped["conversation_logs"] >= 2
        assert sum(report.embedded.get(k, 0) for k in ("conversation_logs",)) >= len(TOPICS) + 1 - 2
        for label in ("Turn", "Entity", "Fact", "Strategy", "Goal", "Control", "episodic_summaries"):
            assert report.embedded.get(label, 0) + report.skipped.get(label, 0) >= 1, label

        # Every live vector is now the new model's, made from the text the write path embeds.
        new = HashEmbedder(NEW_MODEL, NEW_DIMENSION)
        rows = sql(memory, "SELECT turn_id, content, turn_index, embedding FROM conversation_logs "
                           "WHERE conversation_id = 'c1' ORDER BY turn_index")
        for i, row in enumerate(rows):
            previous = rows[i - 1]["content"] if i else None
            text = turn_text(previous, row["content"], s.embedding.turn_context)
            expected = asyncio.run(new.embed_documents([text]))[0]
            assert np.allclose(row["embedding"], expected, atol=1e-6)
            node = gread(memory, "MATCH (t:Turn {id: $id}) RETURN t.embedding AS e", {"id": row["turn_id"]})
            assert np.allclose([float(x) for x in node[0]["e"]], expected, atol=1e-6)
        for label in ("Turn", "Entity", "Fact", "Strategy", "Goal", "Control"):
            left = gread(memory, f"MATCH (n:{label}) WHERE n.embedding_next IS NOT NULL RETURN count(n) AS n")
            assert left[0]["n"] == 0, label
        status = _status(memory)
        assert status["graph"] == {"active": {"model": NEW_MODEL, "dimension": NEW_DIMENSION}, "reembed": None}
        assert status["postgres"] == {"active": {"model": NEW_MODEL, "dimension": NEW_DIMENSION}, "reembed": None}
        assert sql(memory, copies)[0]["n"] == 0  # the old model's copies went with the switch

    # The new model opens the stores and recalls every kind of memory, the mid-way turn included.
    with AgentMemory(_new_settings(s), user_id="alice") as memory:
        assert TOPICS[0] in _top_turns(memory, "grey cat Miso")
        assert "The lighthouse keeper waved." in _top_turns(memory, "lighthouse keeper")
        bundle = memory.remember("cat named Miso flights Reykjavik")
        assert any(f.item.claim == "Alice has a cat named Miso" for f in bundle.facts)
        assert memory.find_strategies("Book flights early travel")[0].description == "Book flights early"
        assert memory.similar_conversations("grey cat Miso", exclude=[])
        memory.store_turn(Turn(conversation_id="c3", user_id="alice", content="A new turn after the switch."))
        fact = memory.learn_fact(Fact(user_id="alice", claim="Alice adopted a second cat"))
        rows = sql(memory, "SELECT embedding FROM memory_timeline WHERE neo4j_node_id = %s", (fact.id,))
        assert len(rows[0]["embedding"]) == NEW_DIMENSION  # ... and a new write copies the new model's vector
        assert "A new turn after the switch." in _top_turns(memory, "new turn after the switch")

    # The old model is refused, as for any store made with another model.
    with pytest.raises(EmbeddingDimensionMismatchError):
        AgentMemory(s, user_id="alice")


def test_a_finished_reembed_reruns_as_a_no_op_and_another_target_waits_for_the_one_in_progress(settings):
    s = settings()
    with AgentMemory(s, user_id="alice") as memory:
        memory.store_turns([Turn(conversation_id="c1", user_id="alice", content=t) for t in TOPICS[:3]])
        with pytest.raises(Interrupted):
            memory.reembed(NEW_MODEL, NEW_DIMENSION, batch_size=1, progress=_stop_after_first_batch)
        with pytest.raises(ConflictError, match=NEW_MODEL):
            memory.reembed("hash:third", 48)
        with pytest.raises(ValidationError, match="batch_size"):
            memory.reembed(NEW_MODEL, NEW_DIMENSION, batch_size=0)
        report = memory.reembed(NEW_MODEL, NEW_DIMENSION)
        assert report.switched and report.embedded["Turn"] + report.skipped["Turn"] >= 3
        again = memory.reembed(NEW_MODEL, NEW_DIMENSION)
        assert again.switched and again.embedded == {} and again.previous == {}


def test_cli_reembeds_with_progress_resumes_and_reports_status(settings):
    s = settings()
    with AgentMemory(s, user_id="alice") as memory:
        memory.store_turns([Turn(conversation_id="c1", user_id="alice", content=t) for t in TOPICS])
    env = cli_env(s, COLUMNS="200")
    status = agentx("reembed", "--status", env=env)
    assert status.returncode == 0, status.stderr
    assert "hash:test" in status.stdout and "no re-embed in progress" in status.stdout

    done = agentx("reembed", "--model", NEW_MODEL, "--dimension", str(NEW_DIMENSION), "--batch", "2", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "switched" in done.stdout and "conversation_logs" in done.stdout

    with AgentMemory(_new_settings(s), user_id="alice") as memory:
        assert TOPICS[4] in _top_turns(memory, "sourdough starter")


def test_a_memory_changed_after_it_was_staged_is_staged_again_from_its_new_text(settings):
    s = settings()
    with AgentMemory(s, user_id="alice") as memory:
        fact = memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Porto"))
        memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="Hello there."))
        with pytest.raises(Interrupted):  # the log's first batch is staged, then the graph's
            memory.reembed(NEW_MODEL, NEW_DIMENSION, batch_size=1, progress=lambda stage, done: (
                None if stage != "staging Fact" else _stop_after_first_batch(stage, done)))
        staged = gread(memory, "MATCH (f:Fact {id: $id}) RETURN f.embedding_next_src AS src", {"id": fact.id})
        assert staged[0]["src"]
        memory.learn_fact(Fact(id=fact.id, user_id="alice", claim="Alice moved to Lisbon"))
        report = memory.reembed(NEW_MODEL, NEW_DIMENSION, batch_size=1)
        assert report.embedded["Fact"] == 1  # the stale staged vector was made again, from the new claim
        expected = asyncio.run(HashEmbedder(NEW_MODEL, NEW_DIMENSION).embed_documents(["Alice moved to Lisbon"]))[0]
        stored = gread(memory, "MATCH (f:Fact {id: $id}) RETURN f.embedding AS e", {"id": fact.id})
        assert np.allclose([float(x) for x in stored[0]["e"]], expected, atol=1e-6)

"""A memory written again with new text gets the new text's vector on both graph backends.

FalkorDB 4.16 sometimes keeps a vector property's old value when ``SET`` gives it another vector of the same
dimension (the SET reports the node changed). Re-learning a fact with a new claim then kept the old claim's vector,
so recall ranked it by text it no longer holds. Every statement that overwrites a vector removes it first."""

from __future__ import annotations

import numpy as np

from agentx_memory import ControlMemory, Entity, Fact, Goal
from tests.conftest import gread


def _stored(memory, label: str, ident: str) -> np.ndarray:
    rows = gread(memory, f"MATCH (n:{label} {{id: $id}}) RETURN n.embedding AS v", {"id": ident})
    return np.asarray(rows[0]["v"], dtype=float)


def _embedded(memory, text: str) -> np.ndarray:
    return np.asarray(memory._portal.run(memory.core.ctx.embedder.embed_documents([text]))[0], dtype=float)


def test_writing_a_memory_again_with_new_text_stores_the_new_texts_vector(memory):
    for i in range(5):  # the failure was intermittent: several rounds
        first, second = f"alice likes green tea, round {i}", f"bob drives a red truck to Porto, round {i}"
        memory.learn_fact(Fact(id=f"f{i}", user_id="alice", claim=first))
        memory.learn_fact(Fact(id=f"f{i}", user_id="alice", claim=second))
        assert np.allclose(_stored(memory, "Fact", f"f{i}"), _embedded(memory, second), atol=1e-5), i

        memory.add_control(ControlMemory(id=f"c{i}", user_id="alice", content=first))
        memory.add_control(ControlMemory(id=f"c{i}", user_id="alice", content=second))
        assert np.allclose(_stored(memory, "Control", f"c{i}"), _embedded(memory, second), atol=1e-5), i

        memory.add_goal(Goal(id=f"g{i}", user_id="alice", description=first))
        memory.add_goal(Goal(id=f"g{i}", user_id="alice", description=second))
        assert np.allclose(_stored(memory, "Goal", f"g{i}"), _embedded(memory, second), atol=1e-5), i

        entity = memory.upsert_entity(Entity(user_id="alice", name=f"Porto {i}", type="place", description=first))
        again = memory.upsert_entity(Entity(user_id="alice", name=f"Porto {i}", type="place", description=second))
        assert again.id == entity.id
        before = _stored(memory, "Entity", entity.id)
        memory.upsert_entity(Entity(user_id="alice", name=f"Porto {i}", type="place",
                                    description=f"a city of bridges {i}"))
        assert not np.allclose(_stored(memory, "Entity", entity.id), before), i  # a new description, a new vector

"""A turn's full-text context (its own words, weight A; its neighbours' words, weight B) is right after every shape of
batch, and storing a batch rewrites no row it inserts: a second version of a turn goes into every index of
``conversation_logs`` again, the HNSW graph of its vector among them (~0.7 ms a row at 100k turns)."""

from __future__ import annotations

from agentx_memory import AgentMemory, Turn
from agentx_memory.sql.conversation_log import ConversationLog

#: Each stored turn's context against the one computed from the log as it is now.
STALE_CONTEXTS = """
SELECT c.turn_index FROM conversation_logs c
LEFT JOIN conversation_logs p ON p.conversation_id = c.conversation_id AND p.turn_index = c.turn_index - 1
LEFT JOIN conversation_logs n ON n.conversation_id = c.conversation_id AND n.turn_index = c.turn_index + 1
WHERE c.conversation_id = %s AND c.context_tsv IS DISTINCT FROM
      setweight(to_tsvector('english', search_words(c.content)), 'A')
      || setweight(to_tsvector('english', search_words(coalesce(p.content, '') || ' ' || coalesce(n.content, ''))), 'B')
ORDER BY c.turn_index
"""


def _turn(index: int | None, text: str) -> Turn:
    return Turn(conversation_id="trip", user_id="alice", content=text, index=index)


def test_every_turns_context_holds_its_neighbours_words_after_any_batch(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        def stale() -> list[int]:
            rows = memory._portal.run(memory.core.ctx.postgres.fetch(STALE_CONTEXTS, ("trip",)))
            return [r["turn_index"] for r in rows]

        memory.store_turns([_turn(None, "We land in Lisbon at noon"), _turn(None, "Then a tram to Alfama")])
        assert stale() == []
        memory.store_turns([_turn(None, "Dinner at a fado house"), _turn(None, "Back by midnight")])  # appended
        memory.store_turns([_turn(7, "A day trip to Sintra"), _turn(9, "Flight home on Sunday")])  # with gaps
        memory.store_turns([_turn(8, "Pack the night before")])  # fills a gap between two stored turns
        memory.store_turns([_turn(None, "Taxi to the airport")])  # after the highest index
        memory.store_turns([_turn(1, "Then a tram to Alfama")])  # a re-store changes nothing
        assert stale() == []
        contexts = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT turn_index, context_tsv::text AS ctx FROM conversation_logs WHERE conversation_id = 'trip'"
            " ORDER BY turn_index"))
        by_index = {r["turn_index"]: r["ctx"] for r in contexts}
        assert "'pack':" in by_index[7] and "'pack':" in by_index[9] and "'sintra':" in by_index[8]


def test_a_batch_rewrites_only_the_stored_turns_next_to_it(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.store_turns([_turn(None, f"Stored line {n}") for n in range(3)])
        log = ConversationLog(memory.core.ctx.postgres)

        async def append() -> dict:
            # the xact counters also hold this backend's counts not yet flushed: the difference is the batch's
            counts = ("SELECT pg_stat_get_xact_tuples_inserted('conversation_logs'::regclass) AS inserted,"
                      " pg_stat_get_xact_tuples_updated('conversation_logs'::regclass) AS updated")
            async with memory.core.ctx.postgres.connection() as conn, conn.transaction(force_rollback=True):
                before = (await (await conn.execute(counts)).fetchall())[0]
                await log._append_conversation(conn, "trip", [_turn(None, f"New line {n}") for n in range(5)], None)
                after = (await (await conn.execute(counts)).fetchall())[0]
                return {key: after[key] - before[key] for key in after}

        # five new turns; the one stored turn before them gets their first line as its next neighbour
        assert memory._portal.run(append()) == {"inserted": 5, "updated": 1}

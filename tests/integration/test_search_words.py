"""The words a turn is searched by: PostgreSQL's parser keeps "maxima/minima" whole as a file path and "socket.io" as
a host name, so neither word matched a question that says them apart; ``search_words()`` (migration 0021) splits
them on both sides, for new turns and, through the migration, for stored ones."""

from __future__ import annotations

import psycopg

from agentx_memory import AgentMemory, Fact, Turn
from agentx_memory.sql.postgres import migrate
from tests.conftest import TEST_DIMENSION, run

#: The lexical leg alone: the words decide, not the embedder.
LEXICAL = {"vector_weight": 0.0}


def _turns(*texts: str) -> list[Turn]:
    return [Turn(conversation_id="calc", user_id="alice", role="user", content=t) for t in texts]


def test_words_joined_by_a_slash_or_a_dot_are_found_by_each_word(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.store_turns(_turns(
            "I finished 7 maxima/minima exercises this week.",
            "Limits and continuity are next on my list.",
            "The chat server now joins rooms with socket.on and io.to(room).emit.",
            "Deployment goes through the CI pipeline on Fridays.",
            "I switched the frontend to Node.js last month.",
        ))

        def top(question: str) -> str:
            return memory.remember(question, top_k=3, recall=LEXICAL).turns[0].item.content

        assert top("Have I done any maxima or minima exercises?").startswith("I finished 7 maxima/minima")
        assert top("How does my server join a socket room?").startswith("The chat server now joins rooms")
        assert top("What runs on Node?").startswith("I switched the frontend to Node.js")
        # the question's words go through the same split: the joined form still finds the turn
        assert top("maxima/minima").startswith("I finished 7 maxima/minima")
        assert top("Why Node.js?").startswith("I switched the frontend to Node.js")


def test_the_migration_reindexes_stored_turns(settings, namespaces):
    s = settings()
    with AgentMemory(s, user_id="alice") as memory:
        memory.store_turns(_turns("Reviewed maxima/minima with Dana.", "Then socket.io rooms."))
    dsn = namespaces.endpoints.postgres_dsn
    schema = s.postgres.db_schema
    old_words = ("UPDATE conversation_logs SET context_tsv = setweight(to_tsvector('english', content), 'A');"
                 " DELETE FROM schema_version WHERE version = 21")
    with psycopg.connect(dsn, autocommit=True, options=f"-c search_path={schema},public") as conn:
        conn.execute(old_words)  # the turns as a store before 0021 indexed them
        assert conn.execute("SELECT count(*) FROM conversation_logs WHERE context_tsv @@ 'maxima'::tsquery"
                            ).fetchone() == (0,)
    assert run(migrate(dsn, schema, dimension=TEST_DIMENSION, model=s.embedding.model)) == [21]
    with psycopg.connect(dsn, autocommit=True, options=f"-c search_path={schema},public") as conn:
        # its own words (weight A of the context, and content_tsv) and, in the context, its neighbours' (weight B)
        for column, own in (("context_tsv", ":A"), ("content_tsv", "")):
            found = conn.execute(f"SELECT content FROM conversation_logs"
                                 f" WHERE {column} @@ 'maxima{own} & minima{own}'::tsquery").fetchall()
            assert found == [("Reviewed maxima/minima with Dana.",)], column
            found = conn.execute(f"SELECT content FROM conversation_logs"
                                 f" WHERE {column} @@ 'socket{own} & io{own}'::tsquery").fetchall()
            assert found == [("Then socket.io rooms.",)], column
        assert conn.execute("SELECT count(*) FROM conversation_logs WHERE context_tsv @@ 'maxima:B & socket:A'::tsquery"
                            ).fetchone() == (1,)


def test_a_fact_is_found_by_each_word_of_a_dotted_name(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        fact = memory.learn_fact(Fact(user_id="alice", claim="Alice deploys the billing API with Node.js"))
        for claim in ("Alice walks the dog at noon", "Alice keeps receipts in a folder"):
            memory.learn_fact(Fact(user_id="alice", claim=claim))
        bundle = memory.remember("Which service runs on Node?", top_k=1, include_episodic=False, recall=LEXICAL)
        assert [f.id for f in bundle.facts] == [fact.id]
        assert "lexical" in bundle.facts[0].signals

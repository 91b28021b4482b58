"""Newest wins for things that change (issue 12): when contradiction resolution replaced a fact ("Sam lives in
Porto." superseded by "Sam lives in Lisbon."), the turn that said the kept fact ranks above the turns that said the
replaced one, however much better the older turn matches the question's words, when the question asks how things are
now. A question about an event or the past, or one that names a time, keeps the plain ranking. On the real servers,
both graph backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentx_memory import AgentMemory, Turn

SEPT, NOV = datetime(2026, 9, 7, 18, tzinfo=UTC), datetime(2026, 11, 15, 8, tzinfo=UTC)
NOW = datetime(2026, 11, 22, 12, tzinfo=UTC)
PORTO = "Hi! I'm Sam. I just moved to Porto for a new job at Lumen Labs."
WELCOME = "Welcome to Porto, Sam! What will you be working on at Lumen Labs?"
LISBON = "Big news: I moved from Porto to Lisbon last week, Lumen Labs opened an office there."


def _say(memory: AgentMemory, conversation: str, when: datetime, *lines: tuple[str, str], named: bool = True
         ) -> list[Turn]:
    """Turns by role; ``named``: Sam and "assistant" as speakers, else none (a user–assistant chat's turns)."""
    return memory.store_turns([Turn(conversation_id=conversation, user_id="alice", role=role, content=text,
                                    timestamp=when + timedelta(seconds=i),
                                    metadata={"speaker": "Sam" if role == "user" else "assistant"} if named else {})
                               for i, (role, text) in enumerate(lines)])


def _sam_moves(memory: AgentMemory, *, extract_later: bool = True) -> tuple[Turn, Turn]:
    """Sam says he lives in Porto in September and in Lisbon in November; extraction supersedes the Porto fact."""
    porto = _say(memory, "s1", SEPT, ("user", PORTO), ("assistant", WELCOME))[0]
    lisbon = _say(memory, "s5", NOV, ("user", LISBON), ("assistant", "A second move in a few months!"))[0]
    memory.extract_conversation("s1")
    if extract_later:
        memory.extract_conversation("s5")
    return porto, lisbon


def _first(memory: AgentMemory, question: str, **kwargs) -> object:
    return memory.remember(question, top_k=5, reference_time=NOW, **kwargs).turns[0]


def test_the_turn_that_replaced_a_fact_ranks_above_the_turns_of_the_fact_it_replaced(settings):
    with AgentMemory(settings(extraction={"extractor": "offline"}), user_id="alice") as memory:
        porto, lisbon = _sam_moves(memory)
        assert memory.get_fact(lisbon_fact_id(memory)).status == "active"

        bundle = memory.remember("Where does Sam live now?", top_k=5, reference_time=NOW)
        top = bundle.turns[0]
        assert top.item.id == lisbon.id, top.item.content
        assert "replaces" in top.signals and porto.id in top.signals["replaces"].detail
        assert bundle.metrics.techniques["newest_wins"].results == 1  # one replaced turn read, in its own metric

        # as of October, before the move was said, Porto still held: the plain ranking
        october = memory.remember("Where does Sam live now?", top_k=5, reference_time=datetime(2026, 10, 1, tzinfo=UTC))
        assert october.turns[0].item.id == porto.id and "replaces" not in october.turns[0].signals
        # without the rule, the Porto turns match the question's words better and come first
        plain = _first(memory, "Where does Sam live now?", recall={"newest_wins": False})
        assert plain.item.id == porto.id and "replaces" not in plain.signals


def test_newest_wins_in_a_user_assistant_chat_with_no_names(settings):
    """No speaker names (the usual agent chat): the offline rules say "the user lives in …", about no entity the two
    claims share, said two months apart; the move still replaces the old city, and its turn comes first."""
    with AgentMemory(settings(extraction={"extractor": "offline"}), user_id="alice") as memory:
        porto = _say(memory, "s1", SEPT, ("user", PORTO.replace("I'm Sam. ", "")), ("assistant", "Nice!"),
                     named=False)[0]
        lisbon = _say(memory, "s5", NOV, ("user", LISBON), ("assistant", "Nice!"), named=False)[0]
        memory.extract_conversation("s1")
        memory.extract_conversation("s5")
        assert [f.item.claim for f in memory.remember("Where do I live now?", top_k=10).facts if "lives" in
                f.item.claim] == ["the user lives in Lisbon."]
        question = "Which city do I live in for my new job?"
        assert _first(memory, question, recall={"newest_wins": False}).item.id == porto.id  # its words match better
        top = _first(memory, question)
        assert top.item.id == lisbon.id, (top.item.content, top.signals)
        assert porto.id in top.signals["replaces"].detail


def test_newest_wins_does_not_need_facts_to_lend(settings):
    s = settings(extraction={"extractor": "offline"}, retrieval={"fact_lending": 0.0})
    with AgentMemory(s, user_id="alice") as memory:
        porto, lisbon = _sam_moves(memory)
        top = _first(memory, "Where does Sam live now?")
        assert top.item.id == lisbon.id and "fact" not in top.signals
        assert porto.id in top.signals["replaces"].detail


def test_a_question_about_an_event_the_past_or_a_named_time_keeps_the_plain_ranking(settings):
    with AgentMemory(settings(extraction={"extractor": "offline"}), user_id="alice") as memory:
        porto, _ = _sam_moves(memory)
        for question in ("Where did Sam live before?", "Where did Sam use to live?",
                         "Where did Sam live in September?", "Where did Sam move for Lumen Labs?"):
            top = _first(memory, question)
            assert top.item.id == porto.id, (question, top.item.content)
            assert "replaces" not in top.signals


def test_nothing_is_lifted_while_no_fact_was_replaced(settings):
    with AgentMemory(settings(extraction={"extractor": "offline"}), user_id="alice") as memory:
        porto, _ = _sam_moves(memory, extract_later=False)  # only the Porto fact is known: nothing replaced it
        ranked = memory.remember("Where does Sam live now?", top_k=5, reference_time=NOW).turns
        assert ranked[0].item.id == porto.id
        assert all("replaces" not in t.signals for t in ranked)


def lisbon_fact_id(memory: AgentMemory) -> str:
    """The id of the fact "Sam lives in Lisbon." (the offline extractor's claim for the November turn)."""
    page = memory.list_facts(limit=50)
    return next(r.fact.id for r in page if r.fact.claim == "Sam lives in Lisbon.")

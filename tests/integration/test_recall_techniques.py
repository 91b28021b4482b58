"""Every RecallLayer technique on the real embedded servers: hybrid, entity-centric (with the speaker boost), query
expansion, HyDE (skipped without an LLM; with a local OpenAI-compatible stand-in server) and self-query time phrases.

Diversity (MMR, ``retrieval.mmr_lambda``) is tested here too: it reranks what the techniques found.

The embedder is the deterministic ``hash:test`` one (words and bigrams hashed into 64 dimensions): it knows no
meaning, so each test builds its data so that only the technique under test can connect query and memory.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, Entity, Fact, Turn
from agentx_memory.bench.wire import Reply, WireServer, openai_completion
from agentx_memory.retrieval.query import rewrite_as_statement

REF = datetime(2023, 6, 15, 12, 0, tzinfo=UTC)


def store(memory, content: str, conversation: str, *, when: datetime = REF - timedelta(days=3), **extra) -> Turn:
    """One turn in its own conversation (so neighbour/session signals cannot blur the comparison)."""
    return memory.store_turn(Turn(conversation_id=conversation, user_id="alice", content=content, timestamp=when,
                                  **extra))


def position(items, item_id: str) -> int | None:
    """Rank (0 = first) of an id in a scored list, or None when absent."""
    return next((i for i, s in enumerate(items) if s.id == item_id), None)


# --- hybrid -----------------------------------------------------------------------------------------------------


def test_hybrid_finds_a_keyword_only_match_that_vector_search_misses(memory):
    # The target shares no token with the question (only PostgreSQL's stemmer connects "marathons" and "marathon"),
    # while the distractors share six words and five bigrams of it (all stopwords, which full text ignores).
    target = store(memory, "I finished a marathon in Boston last spring", "c-target")
    distractors = [store(memory, f"what did we do about the {thing}", f"c-d{i}")
                   for i, thing in enumerate(["garden", "car", "roof", "taxes", "dog", "piano"])]
    question = "what did we do about the marathons"

    hybrid = memory.remember(question, top_k=3, reference_time=REF)
    assert hybrid.turns[0].id == target.id
    assert hybrid.turns[0].signals["bm25"].value == pytest.approx(1.0)
    assert "turns_hybrid" in hybrid.metrics.techniques

    vector_only = memory.remember(question, top_k=3, reference_time=REF, recall={"hybrid": False})
    assert "turns_vector" in vector_only.metrics.techniques and "turns_hybrid" not in vector_only.metrics.techniques
    assert position(vector_only.turns, target.id) is None  # absent from the top 3
    assert {t.id for t in vector_only.turns} <= {d.id for d in distractors}
    assert all("bm25" not in t.signals for t in vector_only.turns)
    # and over the whole store it ranks below every distractor
    everything = memory.remember(question, top_k=20, reference_time=REF, recall={"hybrid": False})
    assert position(everything.turns, target.id) in (None, len(distractors))


def test_hybrid_lexical_leg_also_finds_facts(memory):
    fact = memory.learn_fact(Fact(user_id="alice", claim="Alice keeps her bicycles in the basement"))
    noise = [memory.learn_fact(Fact(user_id="alice", claim=f"what did we do about the {w}"))
             for w in ("roof", "car", "dog")]
    bundle = memory.remember("what did we do about the bicycle", top_k=2, reference_time=REF, include_episodic=False)
    assert bundle.facts[0].id == fact.id
    assert "lexical" in bundle.facts[0].signals
    off = memory.remember("what did we do about the bicycle", top_k=2, reference_time=REF, include_episodic=False,
                          recall={"hybrid": False})
    assert all("lexical" not in f.signals for f in off.facts)
    assert position(off.facts, fact.id) is None and {f.id for f in off.facts} <= {n.id for n in noise}


# --- entity-centric ---------------------------------------------------------------------------------------------


@pytest.fixture
def places(memory):
    """Lisbon (alias Lisboa) LOCATED_IN Portugal PART_OF Europe, two facts ABOUT Lisbon, and unrelated entities."""
    lisbon = memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="place", aliases=["Lisboa"],
                                         description="city on the Tagus"))
    portugal = memory.upsert_entity(Entity(user_id="alice", name="Portugal", type="place", description="country"))
    europe = memory.upsert_entity(Entity(user_id="alice", name="Europe", type="place", description="continent"))
    memory.create_relationship(lisbon.id, portugal.id, "LOCATED_IN")
    memory.create_relationship(portugal.id, europe.id, "PART_OF")
    others = [memory.upsert_entity(Entity(user_id="alice", name=f"Gadget {i}", type="thing",
                                          description=f"a {w} gadget")) for i, w in
              enumerate(["blue", "green", "red", "round", "square", "tiny", "huge", "old"])]
    # claims that share no word with the questions: only the ABOUT edge can bring them back
    flat = memory.learn_fact(Fact(user_id="alice", claim="Alice rents a flat near the river since May",
                                  entity_ids=[lisbon.id], temporal="current"))
    tram = memory.learn_fact(Fact(user_id="alice", claim="The yellow tram 28 is her favourite ride",
                                  entity_ids=[lisbon.id]))
    # facts about nothing in particular that look like the questions to the vector leg (no full-text match)
    noise = [memory.learn_fact(Fact(user_id="alice", claim=f"ask me about {w}"))
             for w in ("cooking", "tax forms", "the weather", "old cars", "chess", "jazz")]
    return {"lisbon": lisbon, "portugal": portugal, "europe": europe, "others": others, "facts": [flat, tram],
            "noise": noise}


@pytest.mark.parametrize("question", ["Tell me about Lisbon", "tell me about lisboa", "What do you know about Lisboa?"])
def test_entity_centric_resolves_by_name_and_alias_and_brings_the_neighbourhood(memory, places, question):
    bundle = memory.remember(question, top_k=10, reference_time=REF)
    lisbon, portugal, europe = places["lisbon"], places["portugal"], places["europe"]

    assert bundle.entities[0].id == lisbon.id
    assert "resolved" in bundle.entities[0].signals
    assert bundle.metrics.techniques["entity_centric"].results >= 1
    # the graph neighbourhood: Portugal one hop away (with a graph signal), Europe two hops away
    ids = [e.id for e in bundle.entities]
    assert portugal.id in ids and europe.id in ids
    assert portugal.id in bundle.entities[0].related
    assert "graph" in bundle.entities[ids.index(portugal.id)].signals
    assert ids.index(portugal.id) < min(ids.index(o.id) for o in places["others"] if o.id in ids)


@pytest.mark.parametrize("question", ["Tell me about Lisbon", "What do you know about Lisboa?"])
def test_entity_centric_brings_the_facts_about_the_entity(memory, places, question):
    # Facts ABOUT Lisbon come back although they share no word with the question, ahead of facts that only look
    # like the question to the vector leg.
    top = memory.remember(question, top_k=3, reference_time=REF)
    facts = {f.id: f for f in top.facts}
    for fact in places["facts"]:
        assert fact.id in facts, [f.item.claim for f in top.facts]
        assert "graph" in facts[fact.id].signals


def test_entity_centric_off_resolves_nothing(memory, places):
    bundle = memory.remember("Tell me about Lisboa", top_k=10, reference_time=REF, recall={"entity_centric": False})
    assert "entity_centric" not in bundle.metrics.techniques
    assert all("resolved" not in e.signals for e in bundle.entities)


def test_entity_centric_does_not_resolve_other_channels(memory, places):
    hidden = memory.upsert_entity(Entity(user_id="alice", name="Atlantis", type="place"), channel="proj-b")
    bundle = memory.remember("Tell me about Atlantis", top_k=10, channel="proj-a", reference_time=REF)
    assert hidden.id not in {e.id for e in bundle.entities}


def _speaker_turns(memory):
    # Equal full-text matches ("trip"), but Bob's turns also share words and bigrams with the question, so without
    # the speaker boost they rank first.
    ann = [store(memory, "It was lovely, that trip", "c-ann1", metadata={"speaker": "Ann"}),
           store(memory, "It was long, that trip", "c-ann2", metadata={"speaker": "Ann"})]
    bob = [store(memory, "The trip? It was lovely", "c-bob1", metadata={"speaker": "Bob"}),
           store(memory, "The trip? It was long", "c-bob2", metadata={"speaker": "Bob"})]
    chores = ["groceries: milk, eggs, bread", "call the plumber on Monday", "pay the electricity bill"]
    for i, text in enumerate(chores):
        store(memory, text, f"c-noise{i}", metadata={"speaker": "Cy"})
    return ann, bob


def test_speaker_boost_ranks_the_named_speakers_turns_first(memory):
    ann, bob = _speaker_turns(memory)
    question = "What did Ann think about the trip?"
    off = memory.remember(question, top_k=4, reference_time=REF, recall={"entity_centric": False})
    assert off.turns[0].id in {t.id for t in bob}  # the boost is what changes the order
    bundle = memory.remember(question, top_k=4, reference_time=REF)
    assert {t.id for t in bundle.turns[:2]} == {t.id for t in ann}
    assert all("speaker" in t.signals for t in bundle.turns[:2])
    assert all("speaker" not in t.signals for t in bundle.turns[2:])


def test_speaker_boost_sees_speakers_stored_after_an_earlier_recall(memory):
    # An agent recalls, then stores new turns, then recalls again: the new speakers must count at once.
    memory.remember("anything at all", top_k=3, reference_time=REF)
    ann, _ = _speaker_turns(memory)
    bundle = memory.remember("What did Ann think about the trip?", top_k=4, reference_time=REF)
    assert {t.id for t in bundle.turns[:2]} == {t.id for t in ann}


def test_a_question_in_the_first_person_ranks_the_users_own_turns_first(memory):
    # BEAM-style chat: the user states a fact, the assistant answers at length with the same words (and more of the
    # question's). "What did I …" asks what the user said; "What did you …" what the assistant said.
    # (Both say the question's word pairs "error message" and "parse the PDF file", so the phrase signal favours
    # neither: when only the assistant echoes the question's wording, that echo can outweigh the speaker signal.)
    said = store(memory, "User: when I parse the PDF file the error message is UnicodeDecodeError", "c-pdf",
                 role="user")
    answer = store(memory, "Assistant: that error message, UnicodeDecodeError, when you parse a PDF file, is an "
                           "error message about the file encoding", "c-pdf-answer", role="assistant")
    for i, text in enumerate(["groceries: milk, eggs, bread", "call the plumber on Monday"]):
        store(memory, text, f"c-noise{i}")
    mine = "What error message did I mention when I tried to parse the PDF file?"
    # the words alone (no vector leg, whose share moves with the default weights): the case the signal is for
    words = {"vector_weight": 0.0}
    off = memory.remember(mine, top_k=2, reference_time=REF, recall={**words, "speaker_weight": 0.0})
    assert off.turns[0].id == answer.id  # without the signal, the assistant's fuller match wins
    bundle = memory.remember(mine, top_k=2, reference_time=REF, recall=words)
    assert [t.id for t in bundle.turns] == [said.id, answer.id]
    assert "speaker" in bundle.turns[0].signals and "speaker" not in bundle.turns[1].signals
    yours = memory.remember("What error message did you explain for the parse of the PDF file?", top_k=2,
                            reference_time=REF, recall=words)
    assert yours.turns[0].id == answer.id and "speaker" in yours.turns[0].signals


# --- query expansion --------------------------------------------------------------------------------------------


def test_query_expansion_records_the_statement(memory):
    store(memory, "Caroline went to the support group on Tuesday", "c1")
    question = "When did Caroline go to the support group?"
    bundle = memory.remember(question, reference_time=REF)
    metric = bundle.metrics.techniques["query_expansion"]
    assert metric.detail["statement"] == "Caroline go to the support group"
    assert metric.detail["statement"] == rewrite_as_statement(question)

    off = memory.remember(question, reference_time=REF, recall={"query_expansion": False})
    assert "query_expansion" not in off.metrics.techniques
    statement = memory.remember("Caroline went to the support group", reference_time=REF)
    assert "query_expansion" not in statement.metrics.techniques  # nothing to rewrite


# --- HyDE -------------------------------------------------------------------------------------------------------


def test_hyde_without_an_llm_is_skipped_with_a_reason(memory):
    store(memory, "some turn", "c1")
    bundle = memory.remember("Where are the reports kept?", reference_time=REF, recall={"hyde": True})
    metric = bundle.metrics.techniques["hyde"]
    assert metric.skipped and "LLM" in metric.skipped
    assert metric.results == 0 and "hypothesis" not in metric.detail
    assert "hyde" not in memory.remember("Where are the reports kept?", reference_time=REF).metrics.techniques


HYPOTHESIS = "The quarterly figures sit inside the blue binder on the top shelf of the archive room."


def _hyde_or_filters(body: dict) -> Reply:
    """OpenAI's wire format: JSON filters for self-query, the fixed hypothesis otherwise."""
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    text = '{"entities": [], "memory_types": [], "channel": null}' if "filters" in system else HYPOTHESIS
    return Reply(openai_completion(text, input_tokens=10, output_tokens=10, model=body["model"]))


@pytest.fixture
def fake_openai():
    """A local server answering Chat Completions (the real openai SDK talks to it): its URL and its requests."""
    with WireServer().running() as server:
        server.answer = _hyde_or_filters
        yield server.url, server.requests


def test_hyde_with_an_llm_records_the_hypothesis_and_searches_with_it(settings, fake_openai):
    base_url, requests = fake_openai
    # paid calls stay off (as in every test): the server is on this machine, so the call still runs
    s = settings(llm={"query_model": "openai:gpt-4o-mini", "openai_base_url": base_url, "openai_api_key": "test-key"})
    assert not s.llm.allow_paid_calls
    question = "Where are the reports kept?"
    with AgentMemory(s, user_id="alice") as memory:
        # The target shares words only with the hypothesis; the distractors share words with the question.
        target = store(memory, "quarterly figures sit inside the blue binder on the top shelf", "c-target")
        for i, text in enumerate(["the reports about the weather were kept short", "reports of rain in the valley",
                                  "where are the keys", "where are the gloves", "where are the tickets"]):
            store(memory, text, f"c-q{i}")
        for i, word in enumerate(["lunch", "bicycle", "window", "garden", "violin", "paint", "coffee", "tennis"]):
            store(memory, f"we talked about {word} for a while", f"c-n{i}")

        bundle = memory.remember(question, top_k=5, reference_time=REF, recall={"hyde": True})
        metric = bundle.metrics.techniques["hyde"]
        assert metric.skipped is None
        assert metric.detail["hypothesis"] == HYPOTHESIS
        assert metric.results == 1
        hyde_requests = [r for r in requests if "filters" not in r.body["messages"][0]["content"]]
        assert hyde_requests and hyde_requests[0].path.endswith("/chat/completions")
        assert hyde_requests[0].body["model"] == "gpt-4o-mini"
        assert any(m["content"] == question for m in hyde_requests[0].body["messages"])
        assert metric.detail["usage"]["total_tokens"] == 20

        # With the hypothesis the target comes right after the two full-text matches of the question, ahead of
        # the turns that only resemble the question; without it, it falls out of the top 5.
        with_hyde = position(bundle.turns, target.id)
        assert with_hyde == 2, [t.item.content for t in bundle.turns]
        without = memory.remember(question, top_k=5, reference_time=REF, recall={"hyde": False})
        assert "hyde" not in without.metrics.techniques
        assert position(without.turns, target.id) is None, [t.item.content for t in without.turns]
        cosine = bundle.turns[with_hyde].cosine
        assert cosine is not None and cosine > 0.3


# --- self-query -------------------------------------------------------------------------------------------------


@pytest.fixture
def hikes(memory):
    """The same kind of memory at three moments before the reference time 2023-06-15 (and unrelated turns)."""
    def at(year: int, month: int, day: int, hour: int) -> datetime:
        return datetime(year, month, day, hour, tzinfo=UTC)

    found = {
        "january": store(memory, "We went hiking in the hills, trail one", "c-jan", when=at(2023, 1, 20, 10)),
        "may": store(memory, "We went hiking in the hills, trail two", "c-may", when=at(2023, 5, 12, 10)),
        "last_week": store(memory, "We went hiking in the hills, trail three", "c-week", when=at(2023, 6, 9, 10)),
    }
    for i, text in enumerate(["groceries: milk, eggs, bread", "call the plumber about the sink", "pay the bill",
                              "the printer is out of toner", "book a table for friday", "renew the passport"]):
        store(memory, text, f"c-noise{i}", when=at(2023, 3, 1 + i, 10))
    return found


@pytest.mark.parametrize(("question", "phrase", "expected", "start"), [
    ("Where did we go hiking in May 2023?", "in May 2023", "may", datetime(2023, 5, 1, tzinfo=UTC)),
    ("Where did we go hiking in January?", "in January", "january", datetime(2023, 1, 1, tzinfo=UTC)),
    ("Where did we go hiking last week?", "last week", "last_week", None),
])
def test_self_query_time_phrases_boost_turns_in_range(memory, hikes, question, phrase, expected, start):
    bundle = memory.remember(question, top_k=4, reference_time=REF)
    ranges = bundle.filters["time_ranges"]
    assert [r["phrase"] for r in ranges] == [phrase]
    if start is not None:
        assert datetime.fromisoformat(ranges[0]["start"]) == start
    lo, hi = datetime.fromisoformat(ranges[0]["start"]), datetime.fromisoformat(ranges[0]["end"])
    assert lo <= hikes[expected].timestamp < hi
    assert bundle.metrics.techniques["self_query"].results == 1
    assert bundle.turns[0].id == hikes[expected].id
    for scored in bundle.turns:
        inside = lo <= scored.item.timestamp < hi
        assert ("time" in scored.signals) == inside, scored.item.content

    off = memory.remember(question, top_k=4, reference_time=REF, recall={"self_query": False})
    assert all("time" not in t.signals for t in off.turns)
    assert "time_ranges" not in off.filters


def test_self_query_is_relative_to_the_reference_time(memory, hikes):
    # "last week" seen from 2023-01-25 is the week of the January hike
    bundle = memory.remember("Where did we go hiking last week?", top_k=4,
                             reference_time=datetime(2023, 1, 25, 12, tzinfo=UTC))
    assert bundle.turns[0].id == hikes["january"].id
    assert "time" in bundle.turns[0].signals


# --- diversity (MMR) --------------------------------------------------------------------------------------------


def test_mmr_moves_a_near_repeat_below_a_different_turn(memory):
    first = store(memory, "the harp concert tickets are for Friday night", "c-1")
    repeat = store(memory, "the harp concert tickets are for Friday night!", "c-2")  # not an exact duplicate
    other = store(memory, "I restrung the harp before the concert", "c-3")
    for i, text in enumerate(["the plumber fixes the sink on Monday", "we booked a train to Porto",
                              "my sister adopted a grey cat", "the garden needs watering twice a week"]):
        store(memory, text, f"c-filler-{i}")  # so the question's words are rare, as in a real history
    question = "harp concert tickets"

    off = memory.remember(question, top_k=3, reference_time=REF)  # the default: mmr_lambda = 1, relevance only
    best, second, third = (t.id for t in off.turns)
    assert {best, second} == {first.id, repeat.id} and third == other.id
    assert "mmr" not in off.metrics.techniques and all("diversity" not in t.signals for t in off.turns)

    memory.core.ctx.settings.retrieval.mmr_lambda = 0.5
    diverse = memory.remember(question, top_k=3, reference_time=REF)
    assert [t.id for t in diverse.turns] == [best, other.id, second]
    penalty = diverse.turns[2].signals["diversity"]
    assert penalty.weight < 0 and penalty.value > 0.5  # the repeat's stored vector is close to the first's
    assert [t.score for t in diverse.turns] == sorted((t.score for t in diverse.turns), reverse=True)
    assert diverse.metrics.techniques["mmr"].results == memory.core.ctx.settings.retrieval.candidate_pool(3)


LEXICAL_ONLY = {"vector_weight": 0, "neighbours": 0, "session_weight": 0, "query_expansion": False}


def test_lexical_leg_normalizes_length_as_bm25(memory):
    """``recall.lexical_b`` is BM25's length normalization: by default a short turn that says the question's words
    once outranks a long one that repeats them among hundreds of others; with ``lexical_b=0`` the long one wins."""
    filler = " ".join(f"word{i}" for i in range(400))
    short = memory.store_turn(Turn(conversation_id="c-short", user_id="alice",
                                   content="I synchronized the server clock with NTP."))
    long = memory.store_turn(Turn(conversation_id="c-long", user_id="alice",
                                  content=f"NTP clock server notes. {filler} NTP clock server again. {filler} NTP."))

    def top(**recall: float) -> str:
        return memory.remember("NTP server clock", top_k=2, recall={**LEXICAL_ONLY, **recall}).turns[0].id

    assert top() == short.id
    assert top(lexical_b=0.0) == long.id


def test_lexical_leg_weighs_rare_words_over_common_ones(memory):
    """A word few turns say (inverse document frequency) counts for more than one most turns say: the turn with the
    rare word of the question outranks turns that repeat its common word."""
    for i in range(6):
        store(memory, f"coffee break number {i}, the coffee was fine and the coffee machine works", f"c-common-{i}")
    rare = store(memory, "the Zanzibar trip is booked for March", "c-rare")
    bundle = memory.remember("coffee in Zanzibar", top_k=3, recall=LEXICAL_ONLY)
    assert bundle.turns[0].id == rare.id


@pytest.mark.parametrize(("question", "has_words"), [
    ("O'Brien's \\\\ backslash", True), ("a|b & !c <-> d:* 'quoted'", True), ("'':*A notes", True),
    ("(((", False), ("the", False),
])
def test_lexical_leg_takes_any_words_of_a_question(memory, question, has_words):
    """Question words are quoted into the full-text query: operators, quotes and backslashes are words, never
    syntax, and a question without content words (punctuation, stop words) finds nothing lexically instead of
    failing."""
    turn = store(memory, "O'Brien wrote a|b & !c <-> d:* and a backslash \\\\ in the notes", "c-odd")
    bundle = memory.remember(question, top_k=3, recall={**LEXICAL_ONLY, "vector_weight": 0.5})
    assert bundle.turns and bundle.turns[0].id == turn.id  # the vector leg finds it either way
    assert ("bm25" in bundle.turns[0].signals) == has_words

"""Fusion and rerank stages on plain rows and scores (no servers): the pure parts of the retriever."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from agentx_memory.models import Entity, Fact, Relationship
from agentx_memory.procedural import StrategyMatch
from agentx_memory.retrieval import fusion, rerank
from agentx_memory.retrieval.bundle import ScoredFact
from agentx_memory.retrieval.legs import LEGS, collect_timeline_lexical, collect_turns
from agentx_memory.retrieval.plan import Candidates, SearchPlan
from agentx_memory.retrieval.query import asks_about_now, question_speaker
from agentx_memory.retrieval.timeparse import TimeRange
from agentx_memory.settings import RecallSettings, RetrievalSettings

REF = datetime(2024, 3, 20, 12, 0, tzinfo=UTC)
# the weights these tests compute with (not the defaults, which are chosen by measurement and may move)
RECALL = RecallSettings(neighbour_weight=0.3, session_weight=0.3, lexical_weight=1.0, vector_weight=0.5)
RETRIEVAL = RetrievalSettings(recency_weight=0.1)


def row(turn_id: str, conversation: str = "c1", index: int = 0, *, lexical: float = 0.0, cosine: float = 0.0,
        content: str | None = None, speaker: str | None = None, when: datetime = REF, role: str = "user") -> dict:
    """A candidate row as the turn search returns it."""
    return {"turn_id": turn_id, "conversation_id": conversation, "turn_index": index, "lexical": lexical,
            "cosine": cosine, "content": content if content is not None else f"text of {turn_id}",
            "speaker": speaker, "metadata_json": json.dumps({"speaker": speaker} if speaker else {}),
            "timestamp": when, "role": role}


def draft(turn_id: str, score: float, conversation: str = "c1", content: str | None = None) -> rerank.TurnDraft:
    """A draft with one signal worth ``score``."""
    d = rerank.TurnDraft(row(turn_id, conversation, content=content))
    d.add("base", score, 1.0)
    return d


# --- fusion --------------------------------------------------------------------------------------------------------

def test_rrf_ranks_gives_each_leg_weight_over_k_plus_rank_and_skips_zero_weight_legs():
    parts = fusion.rrf_ranks({"a": ["x", "y", "x"], "b": ["y"], "off": ["z"]}, {"a": 2.0, "b": 1.0, "off": 0}, k=10)
    assert parts == {"x": {"a": 2 / 11}, "y": {"a": 2 / 12, "b": 1 / 11}}  # a repeated item keeps its first rank


def test_fuse_normalizes_by_the_best_possible_score():
    totals, parts = fusion.fuse({"vector": ["x", "y"], "lexical": ["x"]}, {"vector": 0.5, "lexical": 1.0}, k=60)
    assert totals["x"] == pytest.approx(1.0)  # first in every leg
    assert parts["y"] == {"vector": pytest.approx((0.5 / 62) / (1.5 / 61))}
    assert fusion.fuse({}, {}, k=60) == ({}, {})


def test_leg_weights_share_the_vector_weight_and_give_names_the_lexical_weight():
    legs: dict[str, list[str]] = {"vector": [], "vector:statement": [], "lexical": [], "resolved": []}
    assert fusion.leg_weights(legs, RECALL) == {"vector": 0.25, "vector:statement": 0.25, "lexical": 1.0,
                                                "resolved": 1.0}


def test_turn_relevance_scales_rank_by_the_best_and_cosine_above_the_floor():
    rows = {"a": row("a", lexical=0.4, cosine=0.9), "b": row("b", lexical=0.1, cosine=0.7),
            "c": row("c", lexical=0.0, cosine=0.5)}
    rel = fusion.turn_relevance(rows, 0.6, RECALL)
    assert rel["a"] == {"lexical": pytest.approx(1.0), "vector": pytest.approx(0.5)}
    assert rel["b"] == {"lexical": pytest.approx(0.25), "vector": pytest.approx(0.5 * 0.1 / 0.3)}
    assert rel["c"] == {"lexical": 0.0, "vector": 0.0}  # below the floor counts nothing, never less
    assert fusion.turn_relevance({}, 0.0, RECALL) == {}


def test_turn_relevance_without_hybrid_or_without_a_cosine_span():
    rows = {"a": row("a", lexical=0.4, cosine=0.8), "b": row("b", lexical=0.2, cosine=0.8)}
    assert fusion.turn_relevance(rows, 0.8, RECALL.model_copy(update={"hybrid": False})) == {
        "a": {"vector": 0.0}, "b": {"vector": 0.0}}


def test_turn_relevance_rrf_ranks_each_leg_and_weights_it():
    recall = RECALL.model_copy(update={"fusion": "rrf", "rrf_k": 1})
    rows = {"a": row("a", lexical=0.4, cosine=0.1), "b": row("b", lexical=0.0, cosine=0.9)}
    rel = fusion.turn_relevance(rows, 0.0, recall)
    best = (1.0 + 0.5) / 2
    assert rel["a"] == {"lexical": pytest.approx(1.0 * (1.0 / 2) / best),
                        "vector": pytest.approx(0.5 * (0.5 / 3) / best)}
    assert rel["b"] == {"vector": pytest.approx(0.5 * (0.5 / 2) / best)}  # no lexical match, no lexical part


def test_top_by_relevance_breaks_ties_by_id():
    rel = {"b": {"lexical": 0.5}, "a": {"vector": 0.5}, "c": {"lexical": 0.9}}
    assert fusion.top_by_relevance(rel, 2) == ["c", "a"]


# --- signals -------------------------------------------------------------------------------------------------------

def test_a_draft_score_is_the_sum_of_its_signals_and_a_signal_can_be_replaced():
    d = rerank.TurnDraft(row("t"))
    d.add("a", 2.0, 0.5)
    d.add("b", 1.0, 0.25)
    d.add("a", 1.0, 0.5)
    assert d.score == pytest.approx(0.75) and d.signals["a"] == (1.0, 0.5, "") and d.id == "t"


def test_turn_signals_legs_neighbour_session_speaker_and_time():
    rows = {"t1": row("t1", "c1", 0, speaker="Caroline"), "t2": row("t2", "c1", 1, speaker="Mel"),
            "t3": row("t3", "c1", 5, when=REF - timedelta(days=30)), "t4": row("t4", "c2", 0)}
    relevance = {"t1": {"lexical": 1.0, "vector": 0.25}, "t2": {"lexical": 0.2}, "t3": {"vector": 0.1}, "t4": {}}
    when = TimeRange(REF - timedelta(days=1), REF + timedelta(days=1), "yesterday")
    drafts = rerank.TurnSignals(rows, relevance, RECALL, 0.3, named=["caroline"], time_ranges=[when]).drafts()
    w = 0.3
    t1, t2, t3, t4 = (drafts[i].signals for i in ("t1", "t2", "t3", "t4"))
    assert t1["bm25"][:2] == (1.0, w * 1.0) and t1["vector"][:2] == (0.5, w * 0.5)  # value = leg / leg weight
    assert t1["neighbour"][:2] == (pytest.approx(0.2), w * 0.3)  # t2 is next to it
    assert t2["neighbour"][0] == pytest.approx(1.25)
    assert "neighbour" not in t3  # index 5 has no neighbour among the rows
    assert t3["session"][0] == pytest.approx(1.25) and "session" not in t4  # c2's best relevance is 0
    assert t1["speaker"][:2] == (1.0, w * 0.5) and "speaker" not in t2
    assert "time" in t1 and "time" in t2 and "time" not in t3
    assert list(t1) == ["bm25", "vector", "neighbour", "session", "speaker", "time"]
    assert drafts["t1"].score == pytest.approx(sum(v * wt for v, wt, _ in t1.values()))


def test_a_named_date_weighs_date_weight_and_a_relative_phrase_time_weight():
    """A turn inside a date the question names gets ``date_weight``; inside a phrase read from the reference time
    ("recently"), ``time_weight``; inside both, the heavier once."""
    recall = RecallSettings(time_weight=0.2, date_weight=0.8)
    rows = {name: row(name, when=REF - timedelta(days=days))
            for name, days in (("dated", 40), ("recent", 5), ("both", 25), ("outside", 90))}
    recently = TimeRange(REF - timedelta(days=30), REF, "recently")
    dated = TimeRange(REF - timedelta(days=60), REF - timedelta(days=20), "in February 2024", calendar=True)
    drafts = rerank.TurnSignals(rows, {name: {} for name in rows}, recall, 0.3, time_ranges=[recently, dated]).drafts()
    assert drafts["dated"].signals["time"][:2] == (1.0, pytest.approx(0.3 * 0.8))
    assert drafts["recent"].signals["time"][:2] == (1.0, pytest.approx(0.3 * 0.2))
    assert drafts["both"].signals["time"][1] == pytest.approx(0.3 * 0.8)
    assert "in February 2024" in drafts["both"].signals["time"][2]
    assert "time" not in drafts["outside"].signals


def test_the_speaker_signal_needs_exactly_one_named_participant():
    rows = {"t1": row("t1", speaker="Caroline")}
    drafts = rerank.TurnSignals(rows, {"t1": {}}, RECALL, 0.3, named=["caroline", "mel"]).drafts()
    assert "speaker" not in drafts["t1"].signals


def test_a_question_naming_no_participant_boosts_the_role_its_pronouns_name():
    rows = {"u": row("u", index=0, role="user", speaker="Sam"), "a": row("a", index=1, role="assistant")}
    legs = {"u": {"lexical": 0.5}, "a": {"lexical": 0.5}}
    mine = rerank.TurnSignals(rows, legs, RECALL, 0.3, speaker_role="user").drafts()
    assert mine["u"].signals["speaker"][:2] == (1.0, 0.3 * RECALL.speaker_weight) and "speaker" not in mine["a"].signals
    yours = rerank.TurnSignals(rows, legs, RECALL, 0.3, speaker_role="assistant").drafts()
    assert "speaker" in yours["a"].signals and "speaker" not in yours["u"].signals
    # a named participant wins over the pronoun ("What did Mel tell me?" is about Mel's turns)
    named = rerank.TurnSignals(rows, legs, RECALL, 0.3, named=["mel"], speaker_role="user").drafts()
    assert all("speaker" not in d.signals for d in named.values())


def test_question_speaker_reads_one_sided_pronouns_only():
    assert question_speaker("What exact error message did I mention?") == "user"
    assert question_speaker("Have I completed any geometry problems before, or is this my first time?") == "user"
    assert question_speaker("How did you recommend structuring the backend?") == "assistant"
    assert question_speaker("What did you tell me about Lisbon?") is None  # both sides
    assert question_speaker("When did Melanie go camping in June?") is None  # neither
    assert question_speaker("Which issue did the team fix in iOS?") is None  # "i" inside a word is not "I"


def test_switched_off_signals_add_nothing():
    recall = RECALL.model_copy(update={"neighbours": 0, "session_weight": 0.0})
    rows = {"t1": row("t1", index=0), "t2": row("t2", index=1)}
    drafts = rerank.TurnSignals(rows, {"t1": {"lexical": 1.0}, "t2": {"lexical": 0.5}}, recall, 0.3).drafts()
    assert list(drafts["t2"].signals) == ["bm25"]


def test_query_match_scores_facts_by_their_own_words_and_vector_relative_to_the_best():
    recall = RecallSettings(lexical_weight=1.0, vector_weight=0.5)
    match = fusion.query_match({"a": 0.4, "b": 0.1}, {"a": 0.6, "b": 0.8, "c": 0.4}, recall)
    assert match == pytest.approx({"a": (1.0 + 0.5 * 0.5) / 1.5, "b": (0.25 + 0.5) / 1.5, "c": 0.0})
    # flat fact scores were the defect: a fact matching one word of three must not match like the best one
    assert match["b"] < match["a"]
    assert fusion.query_match({"a": 0.4}, {"a": 0.6, "b": 0.8}, recall.model_copy(update={"hybrid": False})) == {
        "a": 0.0, "b": 1.0}
    assert fusion.query_match({}, {}, recall) == {}


def test_facts_lift_their_source_turn_by_their_own_match_of_the_question():
    facts = [ScoredFact(item=Fact(id=f"f{i}", user_id="u", claim=f"claim {i}", source_turn_id=src))
             for i, src in enumerate(["t1", "t1", "t9", None, "t5", "t7"])]
    match = {"f0": 0.9, "f1": 0.5, "f2": 0.2, "f3": 1.0, "f5": 0.1}  # f4 matched nothing: it lends nothing
    sources = rerank.fact_sources(facts, match, top_k=3)
    assert sources == {"t1": ("f0", 0.9), "t9": ("f2", 0.2)}  # a turn keeps its best fact; f5 is past top_k
    drafts = {"t1": rerank.TurnDraft(row("t1")), "t9": rerank.TurnDraft(row("t9"))}
    drafts["t1"].add("bm25", 0.2, 0.3)
    rerank.lend_fact_scores(drafts, sources, share=0.25, full_match=1.5, episodic_weight=0.3)
    # a quarter of a perfect turn match (1.5: the legs' weights) times the fact's match, on top of the turn's own
    assert drafts["t1"].signals["fact"] == (pytest.approx(0.25 * 1.5 * 0.9), 0.3, "source of fact f0 (its match 0.90)")
    assert drafts["t1"].score == pytest.approx(0.3 * (0.2 + 0.3375))
    assert drafts["t9"].signals["fact"][0] == pytest.approx(0.25 * 1.5 * 0.2)  # a weak match lends little


def test_newest_wins_lifts_the_newer_turn_just_above_the_best_turn_of_the_facts_it_replaced():
    drafts = {d.id: d for d in (draft("porto", 0.7), draft("welcome", 0.55), draft("lisbon", 0.3),
                                draft("older", 0.2), draft("other", 0.9))}
    rerank.outrank_replaced(drafts, {"f-lisbon": "lisbon", "f-unrelated": "other"},
                            {"f-lisbon": ["porto", "older", "not-a-candidate"]}, REF)
    assert [d.id for d in rerank.best_first(drafts.values())] == ["other", "lisbon", "porto", "welcome", "older"]
    assert drafts["lisbon"].score == pytest.approx(0.7 + 1e-3)
    assert "porto" in drafts["lisbon"].signals["replaces"][2]
    assert "replaces" not in drafts["other"].signals  # it replaced nothing


def test_newest_wins_leaves_a_newer_turn_that_already_ranks_first_alone():
    drafts = {d.id: d for d in (draft("new", 0.8), draft("old", 0.5))}
    rerank.outrank_replaced(drafts, {"f": "new"}, {"f": ["old", "new"]}, REF)
    assert drafts["new"].score == 0.8 and "replaces" not in drafts["new"].signals


def test_two_facts_of_one_turn_lift_it_once_above_the_best_turn_either_replaced():
    drafts = {d.id: d for d in (draft("new", 0.2), draft("old-a", 0.5), draft("old-b", 0.6))}
    rerank.outrank_replaced(drafts, {"f1": "new", "f2": "new"}, {"f1": ["old-a"], "f2": ["old-b"]}, REF)
    assert drafts["new"].score == pytest.approx(0.6 + 1e-3)
    assert drafts["new"].score == pytest.approx(sum(v * w for v, w, _ in drafts["new"].signals.values()))


def test_newest_wins_as_of_a_time_before_the_newer_turn_was_said_keeps_the_older_first():
    drafts = {d.id: d for d in (draft("new", 0.3), draft("old", 0.5))}
    rerank.outrank_replaced(drafts, {"f": "new"}, {"f": ["old"]}, REF - timedelta(days=1))  # drafts are said at REF
    assert drafts["new"].score == 0.3 and "replaces" not in drafts["new"].signals


@pytest.mark.parametrize(("question", "now"), [
    ("Where does Sam live now?", True),
    ("Where does Sam live?", True),
    ("Is Maya still in Porto?", True),
    ("Does Sam no longer live in Porto?", True),
    ("What's my current plan?", True),
    ("What is the latest version of the planner?", True),
    ("Where did Sam live before?", False),
    ("Where does Sam live, and where did he live before?", False),
    ("Where did Sam use to live?", False),
    ("Which job did I have previously?", False),
    ("What did we do when my sister visited?", False),
    ("When did Caroline go to the support group?", False),
    ("How many times did Melanie paint a sunrise?", False),
])
def test_a_question_asks_about_now_by_its_tense_or_its_words(question, now):
    assert asks_about_now(question) is now


def test_recency_halves_every_half_life_and_nudges_by_a_share_of_relevance():
    assert rerank.recency(REF, REF, 14) == 1.0
    assert rerank.recency(REF - timedelta(days=14), REF, 14) == pytest.approx(0.5)
    assert rerank.recency(REF + timedelta(days=3), REF, 14) == 1.0  # the future is not fresher than now
    d = rerank.TurnDraft(row("t"))
    rerank.add_recency(d, 2.0, 0.3, REF - timedelta(days=28), REF, RETRIEVAL)
    assert d.signals["recency"][:2] == (pytest.approx(0.5), pytest.approx(0.1 * 0.3))


# --- order, cap ----------------------------------------------------------------------------------------------------

def test_best_first_breaks_ties_by_id_and_duplicates_of_content_go():
    drafts = [draft("b", 1.0), draft("a", 1.0), draft("c", 2.0, content="Same words"),
              draft("d", 0.5, content="  same WORDS ")]
    ranked = rerank.best_first(drafts)
    assert [d.id for d in ranked] == ["c", "a", "b", "d"]
    assert [d.id for d in rerank.unique_by_content(ranked)] == ["c", "a", "b"]


def test_the_cap_diversifies_conversations_but_never_leaves_the_list_short():
    drafts = [draft(f"a{i}", 10 - i, "A") for i in range(4)] + [draft("b0", 1.0, "B")]
    assert [d.id for d in rerank.cap_per_conversation(drafts, cap=2, top_k=3)] == ["a0", "a1", "b0"]
    assert [d.id for d in rerank.cap_per_conversation(drafts, cap=2, top_k=4)] == ["a0", "a1", "b0", "a2"]
    assert [d.id for d in rerank.cap_per_conversation(drafts, cap=5, top_k=2)] == ["a0", "a1"]
    assert rerank.cap_per_conversation([], cap=1, top_k=3) == []
    assert [d.id for d in rerank.cap_per_conversation(drafts, cap=0, top_k=4)] == ["a0", "a1", "a2", "a3"]  # no cap


# --- diversity (MMR) -----------------------------------------------------------------------------------------------

def vectors(**angles: float) -> dict[str, list[float]]:
    """Unit vectors in the plane at the given angles (degrees): cosine = cos(angle difference)."""
    return {k: [round(float(np.cos(np.radians(a))), 12), round(float(np.sin(np.radians(a))), 12)]
            for k, a in angles.items()}


def test_mmr_off_changes_nothing_and_reads_nothing():
    drafts = [draft("a", 3.0), draft("b", 2.0)]
    assert rerank.mmr(drafts, {}, 1.0, pool=10) == drafts
    assert all("diversity" not in d.signals for d in drafts)


def test_mmr_moves_a_near_duplicate_below_a_different_turn():
    drafts = [draft("a", 1.0), draft("a2", 0.95), draft("b", 0.8)]
    vecs = vectors(a=0, a2=5, b=90)  # a2 almost repeats a; b is about something else
    assert [d.id for d in rerank.mmr(drafts, vecs, 1.0, pool=3)] == ["a", "a2", "b"]
    order = rerank.mmr(drafts, vecs, 0.7, pool=3)
    assert [d.id for d in order] == ["a", "b", "a2"]
    # the penalty is explained, and the pool stays sorted by score: score = best / lambda * MMR value
    a2 = next(d for d in order if d.id == "a2")
    value, weight, _ = a2.signals["diversity"]
    assert value == pytest.approx(np.cos(np.radians(5))) and weight == pytest.approx(-(0.3 / 0.7) * 1.0)
    assert a2.score == pytest.approx((1.0 / 0.7) * (0.7 * 0.95 - 0.3 * value))
    assert [d.score for d in order] == sorted((d.score for d in order), reverse=True)
    assert "diversity" not in order[0].signals and "diversity" not in order[1].signals  # b is orthogonal to a


def test_a_high_lambda_only_breaks_near_ties():
    drafts = [draft("a", 1.0), draft("a2", 0.95), draft("b", 0.5)]
    vecs = vectors(a=0, a2=5, b=90)
    assert [d.id for d in rerank.mmr(drafts, vecs, 0.9, pool=3)] == ["a", "a2", "b"]


def test_mmr_reorders_only_the_pool_and_treats_missing_vectors_as_unlike_anything():
    drafts = [draft("a", 1.0), draft("a2", 0.9), draft("x", 0.85), draft("tail", 0.8)]
    vecs = vectors(a=0, a2=0)  # x has no stored vector; tail is past the pool
    order = rerank.mmr(drafts, vecs, 0.5, pool=3)
    assert [d.id for d in order] == ["a", "x", "a2", "tail"]
    assert "diversity" not in order[1].signals and "diversity" not in order[3].signals


def test_mmr_with_lambda_zero_still_starts_with_the_best():
    drafts = [draft("a", 1.0), draft("a2", 0.9), draft("b", 0.1)]
    order = rerank.mmr(drafts, vectors(a=0, a2=1, b=120), 0.0, pool=3)
    assert [d.id for d in order] == ["a", "b", "a2"]
    assert rerank.mmr([draft("solo", 1.0)], {}, 0.5, pool=3)[0].id == "solo"


def test_the_mmr_pool_is_top_k_times_the_overfetch_factor():
    def pool(top_k: int, factor: float) -> int:
        return RetrievalSettings(overfetch_factor=factor).candidate_pool(top_k)

    assert pool(10, 2.0) == 20
    assert pool(5, 1.0) == 5 and pool(3, 1.5) == 4


# --- facts, entities, strategies -----------------------------------------------------------------------------------

def test_in_window_is_half_open():
    assert rerank.in_window(REF, (None, None))
    assert rerank.in_window(REF, (REF, None)) and not rerank.in_window(REF, (None, REF))
    assert not rerank.in_window(REF - timedelta(seconds=1), (REF, REF + timedelta(days=1)))


def test_finish_facts_tags_weighs_recency_and_keeps_one_fact_per_claim():
    def scored(fact_id: str, claim: str, score: float, temporal: str | None = None) -> ScoredFact:
        item = ScoredFact(item=Fact(id=fact_id, user_id="u", claim=claim, temporal=temporal, created_at=REF))
        item.add("vector", score, RETRIEVAL.facts_weight)
        return item

    facts = rerank.finish_facts([scored("f1", "Alice lives in Lisbon", 0.5, "past"),
                                 scored("f2", "alice  lives in lisbon", 0.4, "current"),
                                 scored("f3", "Bob likes tea", 0.3)], RETRIEVAL, REF)
    assert [f.id for f in facts] == ["f2", "f3"]  # current x1.2 beats past x0.7; the copy of the claim goes
    f2 = facts[0].signals
    assert f2["temporal_tag"].contribution == pytest.approx(0.4 * 0.25 * 0.2)
    assert f2["recency"].value == pytest.approx(0.4) and "temporal_tag" not in facts[1].signals


def test_graph_expansion_scores_neighbours_of_better_seeds_and_facts_about_seeds():
    seeds = {"alice": 0.8, "bob": 0.5, "lonely": 0.0}
    rels = [Relationship(source_id="alice", target_id="bob", rel_type="KNOWS"),
            Relationship(source_id="bob", target_id="lisbon", rel_type="LIVES_IN")]
    expansion = rerank.GraphExpansion(seeds, rels)
    bob = expansion.entity(Entity(id="bob", user_id="u", name="Bob"), None, depth=2)
    assert bob.signals["graph"].value == 0.8 and bob.related == ["alice", "lisbon"]
    alice = expansion.entity(Entity(id="alice", user_id="u", name="Alice"), None, depth=2)
    assert "graph" not in alice.signals  # no better seed next to it
    facts = [Fact(id="f1", user_id="u", claim="Alice is a chemist", entity_ids=["alice"]),
             Fact(id="f2", user_id="u", claim="Lisbon is sunny", entity_ids=["lisbon"]),
             Fact(id="f3", user_id="u", claim="Nobody knows", entity_ids=["zed"])]
    found = expansion.facts(facts, entities_weight=0.2)
    assert {k: round(v, 6) for k, (_, v) in found.items()} == {"f1": 4.0, "f2": 1.25}  # per unit of entities_weight


def test_rank_strategies_mixes_similarity_and_success_rate():
    good = StrategyMatch(id="s1", user_id="u", description="ask first", similarity=0.6, success_count=8)
    close = StrategyMatch(id="s2", user_id="u", description="search", similarity=0.9, failure_count=8)
    ranked = rerank.rank_strategies([close, good], procedural_weight=0.15)
    assert [s.id for s in ranked] == ["s1", "s2"]
    assert ranked[0].score == pytest.approx(0.15 * (0.7 * 0.6 + 0.3 * 0.9))


# --- the legs table ------------------------------------------------------------------------------------------------

def plan(**changes) -> SearchPlan:
    base = SearchPlan(query="q", user_id="u", channels=["_global"], top_k=5, lexical_texts=["q"],
                      vectors=[("question", np.ones(2) / np.sqrt(2))], reference_time=REF, entity_names=["Alice"])
    for key, value in changes.items():
        setattr(base, key, value)
    return base


@pytest.mark.parametrize(("changes", "recall", "legs"), [
    ({}, {}, ["turns_hybrid", "facts:vector", "entities:vector", "semantic:lexical", "entities:resolved",
              "strategies"]),
    ({}, {"hybrid": False, "entity_centric": False}, ["turns_vector", "facts:vector", "entities:vector",
                                                      "strategies"]),
    ({"include_semantic": False, "include_procedural": False}, {}, ["turns_hybrid"]),
    ({"vectors": [], "entity_names": []}, {}, ["semantic:lexical"]),
])
def test_which_legs_run(changes, recall, legs):
    wanted = [leg for leg in LEGS if leg.wanted(plan(**changes), RECALL.model_copy(update=recall))]
    assert [leg.technique if leg.name == "turns" else leg.name for leg in wanted] == legs


def test_collectors_file_rows_into_candidates():
    found = Candidates()
    collect_turns(found, [{"turn_id": "t1", "cosine_floor": 0.42}, {"turn_id": "t2", "cosine_floor": 0.42}])
    assert list(found.turn_rows) == ["t1", "t2"] and found.cosine_floor == 0.42
    collect_turns(found, [])
    assert found.turn_rows == {} and found.cosine_floor == 0.0
    collect_timeline_lexical(found, [{"memory_type": "fact", "node_id": "f1", "rank": 0.25},
                                     {"memory_type": "entity", "node_id": "e1", "rank": 0.5}])
    assert found.fact_legs == {"lexical": ["f1"]} and found.entity_legs == {"lexical": ["e1"]}
    assert found.fact_lexical == {"f1": 0.25}


def test_candidates_know_which_lexical_ids_have_no_row_yet():
    found = Candidates(fact_rows={"f1": {}}, entity_rows={"e1": {}},
                       fact_legs={"vector": ["f1"], "lexical": ["f1", "f2"]}, entity_legs={"lexical": ["e2", "e1"]})
    assert found.unloaded() == (["f2"], ["e2"])
    found.drop_unloaded()
    assert found.fact_legs == {"vector": ["f1"], "lexical": ["f1"]} and found.entity_legs == {"lexical": ["e1"]}


def test_the_plan_combines_its_vectors_and_scopes_its_searches():
    p = plan(vectors=[("question", np.array([1.0, 0.0])), ("statement", np.array([0.0, 1.0]))],
             window=(REF, None))
    assert np.allclose(p.query_vector(), [2 ** -0.5, 2 ** -0.5])
    assert p.scope().params() == {"user_id": "u", "channels": ["_global"], "start": REF, "end": None,
                                  "include_archived": False, "agent_id": None}


def test_archived_turns_count_when_asked_for_or_when_the_question_reaches_their_time():
    horizon = REF - timedelta(days=90)
    before, after = horizon - timedelta(days=1), horizon + timedelta(days=1)
    assert not plan(archive_horizon=horizon).reaches_archive()  # no time in the question: not searched
    assert not plan(archive_horizon=horizon, window=(after, None)).reaches_archive()
    assert plan(archive_horizon=horizon, window=(before, None)).reaches_archive()
    phrase = TimeRange(before, after, "last spring")
    assert plan(archive_horizon=horizon, time_ranges=[phrase]).scope().include_archived
    assert plan(recall=RecallSettings(include_archived=True)).reaches_archive()

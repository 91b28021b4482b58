"""``bench choose``: leave-one-conversation-out over the variants of ``bench locomo`` and ``bench beam`` dumps."""

from __future__ import annotations

import json

import pytest

from agentx_memory.bench.choose import (
    DEFAULTS,
    choose,
    markdown_report,
    questions_of,
    questions_of_reports,
    recall_at,
)
from agentx_memory.cli import main
from agentx_memory.errors import ValidationError

HIT, MISS = ["e", "x", "y"], ["x", "y", "e"]


def _locomo(conversations: dict[str, dict[str, list[str]]], category: int = 2) -> dict:
    """A ``bench locomo --dump`` report: one question a conversation with evidence "e", the ids each method returned."""
    return {"benchmark": "locomo evidence recall", "per_question": [
        {"sample": conv, "category": category, "question": "q", "evidence": ["e"],
         "returned": {"baseline: BM25 (rank-bm25)": HIT, **returned}}
        for conv, returned in conversations.items()]}


def _beam(chats: dict[str, dict[str, list[str]]]) -> dict:
    return {"benchmark": "beam evidence recall", "per_question": [
        {"chat": chat, "ability": "temporal_reasoning", "question": "q", "evidence": ["e"], "returned": returned}
        for chat, returned in chats.items()]}


def test_recall_counts_distinct_ids_among_the_first_k():
    assert recall_at(["a", "b"], ["a", "a", "c", "b"], 2) == 0.5
    assert recall_at(["a", "b"], ["a", "a", "c", "b"], 3) == 1.0
    assert recall_at(["a"], [], 10) == 0.0


def test_a_variant_that_wins_only_on_the_left_out_conversation_is_not_picked_for_it():
    # "lucky" finds the evidence on c1 alone; the defaults on c2 and c3. In sample "lucky" never wins, and the fold
    # that leaves c1 out must not see c1's result: it picks the defaults and scores c1 with them (a miss).
    report = _locomo({"c1": {DEFAULTS: MISS, "lucky": HIT},
                      "c2": {DEFAULTS: HIT, "lucky": MISS},
                      "c3": {DEFAULTS: HIT, "lucky": MISS}})
    result = choose(questions_of(report), k=1)
    assert [f["pick"] for f in result["folds"]] == [DEFAULTS, DEFAULTS, DEFAULTS]
    held = result["held_out"]["locomo"]
    assert (held["mean_per_conversation"], held["std_per_conversation"], held["min_per_conversation"]) == (
        pytest.approx(2 / 3, abs=1e-4), pytest.approx(0.5774, abs=1e-4), 0.0)
    # and a variant that wins on the other conversations is picked when one is held out, whatever it does there
    report = _locomo({"c1": {DEFAULTS: HIT, "better": MISS},
                      "c2": {DEFAULTS: MISS, "better": HIT},
                      "c3": {DEFAULTS: MISS, "better": HIT}})
    result = choose(questions_of(report), k=1)
    assert [(f["held_out"], f["pick"], f["held_out_recall"]) for f in result["folds"]] == [
        ("locomo:c1", "better", 0.0), ("locomo:c2", DEFAULTS, 0.0), ("locomo:c3", DEFAULTS, 0.0)]
    assert result["picks"] == {DEFAULTS: 2, "better": 1}
    assert result["in_sample"]["better"]["locomo"]["pooled"] == pytest.approx(2 / 3, abs=1e-4)
    assert result["held_out"]["locomo"]["pooled"] == 0.0


def test_each_dataset_counts_once_however_many_conversations_it_has():
    # Four LoCoMo conversations favour "lexical", one BEAM chat favours the defaults by more per dataset: with the
    # datasets weighted equally the defaults win every fold that keeps the BEAM chat (mean over conversations per
    # set: lexical 1.0 and 0.0, the defaults 0.75 and 1.0).
    locomo = _locomo({"c1": {DEFAULTS: MISS, "lexical": HIT}, **{f"c{i}": {DEFAULTS: HIT, "lexical": HIT}
                                                                 for i in (2, 3, 4)}})
    beam = _beam({"1": {DEFAULTS: HIT, "lexical": MISS}, "2": {DEFAULTS: HIT, "lexical": MISS}})
    result = choose(questions_of(locomo) + questions_of(beam), k=1)
    assert result["conversations"] == 6
    assert result["picks"] == {DEFAULTS: 6}


def test_ties_go_to_the_defaults_then_to_the_first_name():
    report = _locomo({"c1": {DEFAULTS: HIT, "b": HIT, "a": HIT}, "c2": {DEFAULTS: HIT, "b": HIT, "a": HIT}})
    assert choose(questions_of(report))["picks"] == {DEFAULTS: 2}
    report = _locomo({"c1": {"b": HIT, "a": HIT}, "c2": {"b": HIT, "a": HIT}})
    assert choose(questions_of(report))["picks"] == {"a": 2}


def test_categories_are_named_and_baselines_left_out():
    questions = questions_of(_locomo({"c1": {DEFAULTS: HIT}, "c2": {DEFAULTS: MISS}}, category=1))
    assert questions[0].category == "1 multi-hop"
    assert questions[0].conversation == "locomo:c1"
    assert list(questions[0].returned) == [DEFAULTS]
    result = choose(questions, k=1)
    assert result["configurations"] == [DEFAULTS]
    assert result["held_out"]["locomo"]["per_category"] == {"1 multi-hop": {"recall": 0.5, "n": 2}}
    assert "| locomo | 1 multi-hop | 2 | 0.5000 | 0.5000 |" in markdown_report(result)
    with pytest.raises(ValidationError, match=r"^questions: leaving one conversation out needs at least two, got 1"):
        choose(questions[:1])


@pytest.mark.parametrize(("entry", "field"), [
    ({"sample": "c1", "category": 2, "evidence": ["e"]}, r"per_question\[0\]"),
    ({"sample": "c1", "category": "two", "evidence": ["e"], "returned": {}}, r"per_question\[0\]"),
    ({"sample": "c1", "category": 2, "evidence": ["e"], "returned": ["e"]}, r"per_question\[0\]"),
    ({"sample": "c1", "category": 2, "evidence": [], "returned": {DEFAULTS: HIT}}, r"per_question\[0\]\.evidence"),
])
def test_a_malformed_dump_entry_is_refused_by_its_place(entry, field):
    with pytest.raises(ValidationError, match=f"^{field}: "):
        questions_of({"benchmark": "locomo evidence recall", "per_question": [entry]})


@pytest.mark.parametrize(("report", "field"), [
    ({"benchmark": "scale", "per_question": [{}]}, "benchmark"),
    ({"benchmark": "locomo evidence recall"}, "per_question"),
])
def test_a_report_it_cannot_use_is_refused_by_name(report, field):
    with pytest.raises(ValidationError, match=f"^{field}: "):
        questions_of(report)


def test_variants_missing_from_a_report_are_not_configurations():
    locomo = _locomo({"c1": {DEFAULTS: HIT, "only here": HIT}})
    beam = _beam({"1": {DEFAULTS: HIT}, "2": {DEFAULTS: MISS}})
    assert choose(questions_of(locomo) + questions_of(beam))["configurations"] == [DEFAULTS]
    with pytest.raises(ValidationError, match=r"^per_question: no engine configuration"):
        choose(questions_of(_locomo({"c1": {"a": HIT}})) + questions_of(_beam({"1": {"b": HIT}})))
    with pytest.raises(ValidationError, match=r"^k: "):
        choose(questions_of(locomo), k=0)


def test_the_command_writes_the_choice_and_names_an_unreadable_report(tmp_path, capsys):
    locomo, beam = tmp_path / "locomo.json", tmp_path / "beam.json"
    locomo.write_text(json.dumps(_locomo({"c1": {DEFAULTS: HIT, "v": MISS}, "c2": {DEFAULTS: HIT, "v": MISS}})))
    beam.write_text(json.dumps(_beam({"1": {DEFAULTS: MISS, "v": HIT}})))
    assert main(["bench", "choose", str(locomo), str(beam), "--k", "1", "--out", str(tmp_path / "out")]) == 0
    written = json.loads((tmp_path / "out" / "choose.json").read_text())
    assert written["k"] == 1 and written["conversations"] == 3
    assert (tmp_path / "out" / "choose.md").read_text() == markdown_report(written)
    assert "Leave-one-conversation-out over 3 conversations at R@1" in capsys.readouterr().out
    assert main(["bench", "choose", str(tmp_path / "missing.json"), "--out", str(tmp_path / "out")]) == 2
    assert "reports: cannot read" in capsys.readouterr().out


def test_a_dataset_is_given_once_and_a_cut_chat_is_a_dataset_of_its_own():
    beam = _beam({"1": {DEFAULTS: HIT}, "2": {DEFAULTS: MISS}})
    with pytest.raises(ValidationError, match=r"^reports: two reports of beam; give each dataset once"):
        questions_of_reports([beam, beam])
    quarter = {**_beam({"1": {DEFAULTS: MISS}, "2": {DEFAULTS: MISS}}), "prefix": 0.25}
    questions = questions_of_reports([beam, quarter])
    assert sorted({q.conversation for q in questions}) == ["beam:1", "beam:2", "beam@0.25:1", "beam@0.25:2"]
    result = choose(questions, k=1)
    assert result["held_out"]["beam"]["pooled"] == 0.5 and result["held_out"]["beam@0.25"]["pooled"] == 0.0

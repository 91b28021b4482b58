"""Extraction of knowledge from a conversation (issue 13), on both graph backends: the offline rules on a
LoCoMo-shaped chat (speakers, dated events, self-statements), the LLM path through the real openai SDK against a
local wire-format server (calibration, temporal tags, invalid items dropped, invented turn ids rejected), idempotent
re-runs, dry runs, the token budget stopping between batches, and the graph edges it leaves."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, Turn
from agentx_memory.bench.wire import Reply, WireServer, openai_completion
from agentx_memory.errors import NotFoundError
from agentx_memory.extraction.writer import fact_id
from tests.conftest import cli_env, gread, gwrite
from tests.integration.test_recall_cli import agentx

SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
CHAT = [
    ("Caroline", "Hey Mel! I went to a support group for new parents yesterday and it was so moving."),
    ("Melanie", "That's lovely, Caroline! I ran a charity race for the children's hospital last Saturday."),
    ("Caroline", "Amazing. How is the new place?"),
    ("Melanie", "Great! I moved from Porto to Lisbon in April, and I work at Lumen Labs now."),
    ("Caroline", "I'm a counselor at heart, you know. My sister Lena wants to visit you."),
    ("Melanie", "Tell her to come! I really love hiking in Sintra. I'm going to climb Pico next month."),
]


def _store_chat(memory: AgentMemory, conversation: str = "chat-1") -> list[Turn]:
    return memory.store_turns([
        Turn(conversation_id=conversation, user_id="alice", role="user", content=f"{who}: {text}",
             timestamp=SAID + timedelta(seconds=i), metadata={"speaker": who})
        for i, (who, text) in enumerate(CHAT)])


def _counts(memory: AgentMemory) -> dict[str, int]:
    return {
        "facts": gread(memory, "MATCH (f:Fact) RETURN count(f) AS n")[0]["n"],
        "entities": gread(memory, "MATCH (e:Entity) RETURN count(e) AS n")[0]["n"],
        "edges": gread(memory, "MATCH (:Fact)-[r]->() RETURN count(r) AS n")[0]["n"]
        + gread(memory, "MATCH (:Conversation)-[r:MENTIONS]->() RETURN count(r) AS n")[0]["n"]
        + gread(memory, "MATCH (:Entity)-[r]->(:Entity) RETURN count(r) AS n")[0]["n"],
    }


@pytest.fixture
def offline(settings):
    with AgentMemory(settings(extraction={"extractor": "offline"}), user_id="alice") as memory:
        yield memory


def test_offline_rules_find_speakers_dated_events_and_self_statements(offline):
    turns = _store_chat(offline)
    report = offline.extract_conversation("chat-1")
    assert report.extractor == "offline:rules" and report.stopped is None and report.usage.calls == 0
    claims = {offline.get_fact(i).claim: offline.get_fact(i) for i in report.fact_ids}
    # dated events, their relative dates made absolute from the turn's time
    assert "Caroline went to a support group for new parents yesterday (on 2023-05-07) and it was so moving." in claims
    assert ("Melanie ran a charity race for the children's hospital last Saturday (on 2023-05-06)." in claims)
    assert any(c.startswith("Melanie moved from Porto to Lisbon in April (in April 2023)") for c in claims)
    assert claims["Melanie plans to climb Pico next month (in June 2023)."].temporal == "future"
    # self-statements, current and past
    lives = claims["Melanie lives in Lisbon."]
    assert lives.temporal == "current" and lives.confidence == 0.95 and lives.source_turn_id == turns[3].id
    assert claims["Melanie used to live in Porto."].temporal == "past"
    assert "Melanie works at Lumen Labs." in claims and "Melanie loves hiking in Sintra." in claims
    assert "Caroline is a counselor at heart." in claims and "Lena is Caroline's sister." in claims
    # entities with types, and the graph around them
    graph = gread(offline, "MATCH (e:Entity) RETURN e.name AS name, e.type AS type ORDER BY name")
    assert {(r["name"], r["type"]) for r in graph} >= {
        ("Caroline", "person"), ("Melanie", "person"), ("Lisbon", "place"), ("Porto", "place"),
        ("Lumen Labs", "organization"), ("Lena", "person")}
    about = gread(offline, "MATCH (f:Fact {id: $id})-[:ABOUT]->(e:Entity) RETURN e.name AS name", {"id": lives.id})
    assert {r["name"] for r in about} == {"Melanie", "Lisbon"}
    derived = gread(offline, "MATCH (f:Fact {id: $id})-[:DERIVED_FROM]->(t:Turn) RETURN t.id AS id", {"id": lives.id})
    assert [r["id"] for r in derived] == [turns[3].id]
    mentions = gread(offline, "MATCH (:Conversation {id: 'chat-1'})-[:MENTIONS]->(e:Entity) RETURN e.name AS name")
    assert {"Caroline", "Melanie", "Lisbon", "Lumen Labs"} <= {r["name"] for r in mentions}
    rels = gread(offline, "MATCH (a:Entity)-[r]->(b:Entity) RETURN a.name AS a, type(r) AS t, b.name AS b")
    assert {("Melanie", "LOCATED_IN", "Lisbon"), ("Melanie", "WORKS_FOR", "Lumen Labs"),
            ("Caroline", "KNOWS", "Lena")} <= {(r["a"], r["t"], r["b"]) for r in rels}


def test_extracting_again_adds_nothing_twice(offline):
    _store_chat(offline)
    first = offline.extract_conversation("chat-1")
    before = _counts(offline)
    second = offline.extract_conversation("chat-1")  # every batch was extracted: skipped by its key
    assert (second.batches_skipped, second.fact_ids) == (second.batches, [])
    forced = offline.extract_conversation("chat-1", force=True)  # extracted and written again: the same ids
    assert _counts(offline) == before
    assert sorted(forced.fact_ids) == sorted(first.fact_ids) and forced.batches_skipped == 0
    assert before["facts"] == len(set(first.fact_ids)) > 5
    # a changed turn is a new batch: extracted again
    offline.store_turn(Turn(conversation_id="chat-1", user_id="alice", content="Melanie: I work at Orbital now.",
                            timestamp=SAID + timedelta(minutes=5), metadata={"speaker": "Melanie"}))
    third = offline.extract_conversation("chat-1")
    assert third.batches_skipped == 0 and "Melanie works at Orbital." in {offline.get_fact(i).claim
                                                                         for i in third.fact_ids}


def test_a_dry_run_writes_nothing_and_shows_what_it_found(offline):
    _store_chat(offline)
    report = offline.extract_conversation("chat-1", dry_run=True)
    assert report.dry_run and report.fact_ids == [] and _counts(offline)["facts"] == 0
    found = [f.claim for batch in report.found for f in batch.facts]
    assert "Melanie lives in Lisbon." in found


def test_an_unknown_conversation_is_not_found(offline):
    with pytest.raises(NotFoundError, match="conversation 'nope'"):
        offline.extract_conversation("nope")


# --- the LLM path --------------------------------------------------------------------------------------------------

ANSWER = {
    "entities": [
        {"name": "Melanie", "type": "person", "aliases": ["Mel"], "description": "Caroline's friend"},
        {"name": "Lisbon", "type": "place"},
        {"name": "Lumen Labs", "type": "organization"},
        {"name": 42},  # off the schema: dropped
    ],
    "facts": [
        {"claim": "Melanie lives in Lisbon.", "certainty": "explicit", "temporal": "current",
         "entities": ["Mel", "Lisbon"], "source_turns": ["t4"]},
        {"claim": "Melanie lived in Porto before April 2023.", "certainty": "implied", "temporal": "past",
         "entities": ["Melanie", "Porto"], "source_turns": ["t4"]},
        {"claim": "Melanie probably enjoys the outdoors.", "certainty": "inferred", "entities": ["Melanie"],
         "source_turns": ["t6", "t2"]},
        {"claim": "Melanie has a dog.", "certainty": "explicit", "source_turns": ["t99"]},  # invented turn
        {"claim": "Melanie is tall.", "certainty": "sure", "source_turns": ["t1"]},  # off the schema
    ],
    "relationships": [
        {"source": "Melanie", "type": "WORKS_FOR", "target": "Lumen Labs"},
        {"source": "Melanie", "type": "LOVES", "target": "Lisbon"},  # not a spec 003 type
        {"source": "Melanie", "type": "KNOWS", "target": "Somebody Unknown"},  # no such entity
    ],
}


@pytest.fixture
def wire():
    with WireServer().running() as server:
        yield server


def _llm_settings(settings, wire, **extraction):
    return settings(llm={"extraction_model": "openai:gpt-4o-mini", "openai_base_url": wire.url + "/v1",
                         "openai_api_key": "sk-test"},
                    extraction={"extractor": "auto", **extraction}, audit={"level": "writes"})


def test_llm_extraction_is_validated_calibrated_and_costed(settings, wire):
    wire.script(Reply(openai_completion(json.dumps(ANSWER), input_tokens=900, output_tokens=300)))
    with AgentMemory(_llm_settings(settings, wire), user_id="alice") as memory:
        turns = _store_chat(memory)
        report = memory.extract_conversation("chat-1")
        assert report.extractor == "openai:gpt-4o-mini"
        assert report.dropped == {"entity: off the schema": 1, "fact: cites a turn not in the batch": 1,
                                  "fact: off the schema": 1, "relationship: off the schema": 1}
        assert report.unresolved == {"fact: an entity name not found": 1,
                                     "relationship: an entity name not found": 1}
        facts = {memory.get_fact(i).claim: memory.get_fact(i) for i in report.fact_ids}
        assert set(facts) == {"Melanie lives in Lisbon.", "Melanie lived in Porto before April 2023.",
                              "Melanie probably enjoys the outdoors."}
        lives = facts["Melanie lives in Lisbon."]
        assert (lives.confidence, lives.temporal, lives.certainty) == (0.95, "current", "explicit")
        assert facts["Melanie lived in Porto before April 2023."].confidence == 0.85
        inferred = facts["Melanie probably enjoys the outdoors."]
        assert inferred.confidence == 0.70 and inferred.source_turn_id == turns[5].id
        assert inferred.metadata["source_turn_ids"] == [turns[5].id, turns[1].id]
        assert lives.id == fact_id("alice", "_global", "melanie  lives in lisbon.")
        assert len(lives.entity_ids) == 2  # "Mel" resolved through the alias
        assert report.relationships == 1
        # one call for six turns; its usage and cost in the report and in the audit log
        assert len(wire.requests) == 1 and report.usage.calls == 1
        again = memory.extract_conversation("chat-1")  # the batch's key is recorded: no second paid call
        assert again.batches_skipped == 1 and again.usage.calls == 0 and len(wire.requests) == 1
        assert (report.usage.input_tokens, report.usage.output_tokens) == (900, 300)
        assert report.usage.cost_usd == pytest.approx((900 * 0.15 + 300 * 0.60) / 1e6)
        prompt = wire.requests[0].body["messages"][1]["content"]
        assert prompt.splitlines()[3] == f"t4 [2023-05-08] Melanie: {CHAT[3][1]}"
        audit = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT metadata FROM memory_audit_log WHERE operation = 'extract' ORDER BY id"))
        assert len(audit) == 2  # one entry per run, the skipping one included
        logged = audit[0]["metadata"]
        logged = json.loads(logged) if isinstance(logged, str) else logged
        assert logged["usage"]["input_tokens"] == 900 and logged["facts"] == 3


def test_the_token_budget_stops_the_run_between_batches(settings, wire):
    small = {"entities": [], "relationships": [], "facts": [
        {"claim": "Caroline went to a support group.", "certainty": "explicit", "source_turns": ["t1"]}]}
    wire.script(Reply(openai_completion(json.dumps(small), input_tokens=1500, output_tokens=100)))
    s = _llm_settings(settings, wire, batch_turns=2)
    s.llm.max_tokens_per_run = 1500 + 100 + 2600
    s.llm.max_output_tokens = 2000
    with AgentMemory(s, user_id="alice") as memory:
        _store_chat(memory)
        report = memory.extract_conversation("chat-1")
        assert report.batches == 3 and report.batches_done == 1
        assert report.stopped and "LLMBudgetExceededError" in report.stopped
        assert len(wire.requests) == 1  # the second batch's call was never made
        assert _counts(memory)["facts"] == 1  # the first batch is written whole, nothing of the second


def test_the_extract_command_dry_runs_then_writes(settings):
    s = settings()
    with AgentMemory(s, user_id="alice") as memory:
        _store_chat(memory)
    env = cli_env(s, COLUMNS="200")
    dry = agentx("extract", "--conversation", "chat-1", "--user", "alice", "--dry-run", "--offline", env=env)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "fact    [explicit, current] Melanie lives in Lisbon." in dry.stdout
    assert "would write:" in dry.stdout and "usage: 0 call(s)" in dry.stdout
    wrote = agentx("extract", "--conversation", "chat-1", "--user", "alice", "--offline", "--json", env=env)
    assert wrote.returncode == 0, wrote.stdout + wrote.stderr
    summary = json.loads(wrote.stdout)
    assert summary["facts"] > 5 and summary["extractor"] == "offline:rules" and summary["stopped"] is None
    missing = agentx("extract", "--conversation", "nope", "--user", "alice", "--offline", env=env)
    assert missing.returncode == 2 and "conversation 'nope' not found" in missing.stdout


def test_the_log_level_option_prints_why_extract_used_the_offline_extractor(settings):
    """``--log-level info`` shows the library's INFO records on stderr (here: why ``auto`` fell back to the rules);
    without it the command prints only warnings, as before."""
    s = settings()
    with AgentMemory(s, user_id="alice") as memory:
        _store_chat(memory)
    env = cli_env(s, COLUMNS="200", AGENTX_LLM__EXTRACTION_MODEL="nowhere:model-x")
    args = ("extract", "--conversation", "chat-1", "--user", "alice", "--dry-run")
    quiet = agentx(*args, env=env)
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert "offline extractor" not in quiet.stderr
    told = agentx("--log-level", "info", *args, env=env)
    assert told.returncode == 0, told.stdout + told.stderr
    assert ("INFO agentx_memory.extraction.pipeline: extraction: using the offline extractor (setting llm model "
            "'nowhere:model-x': unknown provider 'nowhere'") in told.stderr
    refused = agentx("--log-level", "loud", *args, env=env)
    assert refused.returncode == 2 and "invalid choice: 'loud'" in refused.stderr


# --- contradictions and corrections ---------------------------------------------------------------------------------

SEPT, NOV = datetime(2026, 9, 7, 18, tzinfo=UTC), datetime(2026, 11, 15, 8, tzinfo=UTC)


def _say(memory: AgentMemory, conversation: str, when: datetime, *lines: str, speaker: str | None = "Sam",
         user_id: str = "alice") -> None:
    """The user's turns, said by ``speaker``; None is a user–assistant chat's turn, with no speaker name, which the
    offline rules call "the user"."""
    memory.store_turns([Turn(conversation_id=conversation, user_id=user_id, role="user", content=line,
                             timestamp=when + timedelta(seconds=i), metadata={"speaker": speaker} if speaker else {})
                        for i, line in enumerate(lines)])


def _claims(memory: AgentMemory) -> dict[str, object]:
    rows = gread(memory, "MATCH (f:Fact) RETURN f.id AS id")
    return {f.claim: f for f in (memory.get_fact(r["id"]) for r in rows)}


@pytest.mark.parametrize("order", ["in time order", "newest conversation first"])
def test_prefer_new_supersedes_the_fact_said_earlier(settings, order):
    with AgentMemory(settings(extraction={"extractor": "offline"}, audit={"level": "writes"}),
                     user_id="alice") as memory:
        _say(memory, "s1", SEPT, "I just moved to Porto for a new job at Lumen Labs.")
        _say(memory, "s5", NOV, "Big news: I moved from Porto to Lisbon last week.", "I ran a race last Saturday.")
        for conversation in (["s1", "s5"] if order == "in time order" else ["s5", "s1"]):
            memory.extract_conversation(conversation)
        claims = _claims(memory)
        porto, lisbon = claims["Sam lives in Porto."], claims["Sam lives in Lisbon."]
        assert (porto.status, porto.superseded_by) == ("superseded", lisbon.id)
        assert lisbon.status == "active"
        assert gread(memory, "MATCH (:Fact {id: $a})-[:SUPERSEDES]->(:Fact {id: $b}) RETURN count(*) AS n",
                     {"a": lisbon.id, "b": porto.id})[0]["n"] == 1
        # recall no longer offers the superseded fact, by vector or by words
        recalled = [f.item.claim for f in memory.remember("Where does Sam live? Porto or Lisbon?", top_k=10).facts]
        assert "Sam lives in Lisbon." in recalled and "Sam lives in Porto." not in recalled
        # as of October the Porto fact held (it was superseded by what was said in November); as of now Lisbon does
        october = {f.claim for f in memory.facts_as_of(datetime(2026, 10, 1, tzinfo=UTC))}
        assert "Sam lives in Porto." in october and "Sam lives in Lisbon." not in october
        sam = sorted(set(porto.entity_ids) & set(lisbon.entity_ids))  # the one entity both are about
        now = {f.claim for f in memory.facts_as_of(NOV + timedelta(days=1), entity_ids=sam)}
        assert "Sam lives in Lisbon." in now and "Sam lives in Porto." not in now
        # events and other slots are not contradictions
        assert claims["Sam works at Lumen Labs."].status == "active"
        assert claims["Sam used to live in Porto."].status == "active"
        audit = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT metadata FROM memory_audit_log WHERE operation = 'resolve_contradiction'"))
        assert len(audit) == 1


def test_prefer_old_rejects_the_later_fact_and_a_correction_still_wins(settings):
    s = settings(extraction={"extractor": "offline", "contradiction_policy": "prefer_old"})
    with AgentMemory(s, user_id="alice") as memory:
        _say(memory, "s1", SEPT, "I live in Porto. I work at Lumen Labs.")
        _say(memory, "s2", NOV, "I live in Lisbon.", "Actually, I work at Orbital Robotics, I got it wrong before.")
        memory.extract_conversation("s1")
        report = memory.extract_conversation("s2")
        claims = _claims(memory)
        assert claims["Sam lives in Lisbon."].status == "rejected"
        assert claims["Sam lives in Lisbon."].superseded_by == claims["Sam lives in Porto."].id
        assert claims["Sam lives in Porto."].status == "active"
        later = {f.claim for f in memory.facts_as_of(NOV + timedelta(days=1))}
        assert "Sam lives in Porto." in later and "Sam lives in Lisbon." not in later  # a rejected fact never held
        # the speaker corrected themselves: the corrected fact goes, whatever the policy
        assert claims["Sam works at Lumen Labs."].status == "superseded"
        assert claims["Sam works at Orbital Robotics."].status == "active"
        assert sorted(r["reason"] for r in report.summary()["contradictions"]) == [
            "correction", "same slot, another value"]


def test_flag_review_keeps_both_and_lists_them(settings):
    s = settings(extraction={"extractor": "offline", "contradiction_policy": "flag_review"})
    with AgentMemory(s, user_id="alice") as memory:
        _say(memory, "s1", SEPT, "I live in Porto.")
        _say(memory, "s2", NOV, "I live in Lisbon.")
        memory.extract_conversation("s1")
        memory.extract_conversation("s2")
        memory.extract_conversation("s2", force=True)  # again: still one pair, flagged once
        claims = _claims(memory)
        porto, lisbon = claims["Sam lives in Porto."], claims["Sam lives in Lisbon."]
        assert porto.status == lisbon.status == "review"
        flagged = memory.facts_for_review()
        assert [(f.id, ids) for f, ids in flagged] == [(porto.id, [lisbon.id]), (lisbon.id, [porto.id])]
        recalled = [f.item.claim for f in memory.remember("Where does Sam live?", top_k=10).facts]
        assert {"Sam lives in Porto.", "Sam lives in Lisbon."} <= set(recalled)
    listed = agentx("review", "--user", "alice", env=cli_env(s, COLUMNS="200"))
    assert listed.returncode == 0 and "2 fact(s) to review" in listed.stdout and "Sam lives in Porto." in listed.stdout


def test_the_extractor_follows_the_setting(monkeypatch):
    from agentx_memory.errors import ConfigurationError
    from agentx_memory.extraction.pipeline import LLMExtractor, RulesExtractor, choose_extractor
    from agentx_memory.settings import Settings

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    # auto without a key for the public API: the rules
    assert isinstance(choose_extractor(Settings()), RulesExtractor)
    # auto with a local server: the LLM, even with paid calls off
    local = Settings(llm={"extraction_model": "openai:llama3.1", "openai_base_url": "http://localhost:11434/v1",
                          "allow_paid_calls": False})
    assert isinstance(choose_extractor(local), LLMExtractor)
    # a key but paid calls off: the rules; 'llm' without a model: our error
    keyed = Settings(llm={"anthropic_api_key": "sk-x", "allow_paid_calls": False})
    assert isinstance(choose_extractor(keyed), RulesExtractor)
    with pytest.raises(ConfigurationError, match=r"llm\.extraction_model is empty"):
        choose_extractor(Settings(llm={"extraction_model": ""}, extraction={"extractor": "llm"}))


def test_a_nameless_user_moving_months_later_replaces_the_old_city(settings):
    """"The user" is no entity that the two claims share, and two months lie between them: the move still replaces
    the old city (the claims' slot finds the older one), so recall offers only the new one."""
    with AgentMemory(settings(extraction={"extractor": "offline"}), user_id="alice") as memory:
        _say(memory, "s1", SEPT, "I just moved to Porto for a new job at Lumen Labs.", speaker=None)
        _say(memory, "s5", NOV, "Big news: I moved from Porto to Lisbon last week.", speaker=None)
        memory.extract_conversation("s1")
        memory.extract_conversation("s5")
        claims = _claims(memory)
        porto, lisbon = claims["the user lives in Porto."], claims["the user lives in Lisbon."]
        assert (porto.status, porto.superseded_by) == ("superseded", lisbon.id)
        assert lisbon.status == "active" and claims["the user works at Lumen Labs."].status == "active"
        recalled = [f.item.claim for f in memory.remember("Where do I live?", top_k=10).facts]
        assert "the user lives in Lisbon." in recalled and "the user lives in Porto." not in recalled


def test_a_fact_stored_before_facts_had_slot_keys_is_still_replaced(settings):
    """A graph written before facts carried their slot key gets the keys when it is opened (once): the move said
    afterwards still replaces the old city, found through the key's index. Another user's same claim stays."""
    s = settings(extraction={"extractor": "offline"})
    with AgentMemory(s, user_id="alice") as memory:
        _say(memory, "s1", SEPT, "I just moved to Porto for a new job at Lumen Labs.", speaker=None)
        _say(memory, "b1", SEPT, "I just moved to Porto for a new job at Lumen Labs.", speaker=None, user_id="bob")
        memory.extract_conversation("s1")
        memory.extract_conversation("b1", user_id="bob")
        # as a graph of an earlier version left them: no key on any fact, no record of the pass
        gwrite(memory, "MATCH (f:Fact) REMOVE f.slot_key")
        gwrite(memory, "MATCH (m:AgentxMeta {key: 'fact_slot_keys'}) DELETE m")
    with AgentMemory(s, user_id="alice") as memory:
        _say(memory, "s5", NOV, "Big news: I moved from Porto to Lisbon last week.", speaker=None)
        memory.extract_conversation("s5")
        statuses = {(r["user"], r["claim"]): r["status"] for r in gread(
            memory, "MATCH (f:Fact) WHERE f.claim CONTAINS 'lives in' "
                    "RETURN f.user_id AS user, f.claim AS claim, coalesce(f.status, 'active') AS status")}
        assert statuses == {("alice", "the user lives in Porto."): "superseded",
                            ("alice", "the user lives in Lisbon."): "active",
                            ("bob", "the user lives in Porto."): "active"}


def test_two_things_a_nameless_user_loves_both_stay(settings):
    """"The user loves hiking." and, two weeks later, "… loves cooking.": likes accumulate, as they do for a named
    speaker ("Sam loves …"); the article of "the user" is not a word of the slot."""
    with AgentMemory(settings(extraction={"extractor": "offline"}), user_id="alice") as memory:
        _say(memory, "s1", NOV - timedelta(days=14), "I really love hiking.", speaker=None)
        _say(memory, "s2", NOV, "I really love cooking.", speaker=None)
        memory.extract_conversation("s1")
        report = memory.extract_conversation("s2")
        claims = _claims(memory)
        assert report.summary()["contradictions"] == []
        assert {c: f.status for c, f in claims.items() if "love" in c} == {
            "the user loves hiking.": "active", "the user loves cooking.": "active"}


def test_what_someone_is_adds_up(settings):
    """"I'm a nurse." then "I'm a mother of two.": both hold; an article is no slot word, so "Sam is a …" is not one
    single-valued slot that the later claim would take over."""
    with AgentMemory(settings(extraction={"extractor": "offline"}), user_id="alice") as memory:
        _say(memory, "s1", NOV - timedelta(days=3), "I'm a nurse.")
        _say(memory, "s2", NOV, "I'm a mother of two.")
        memory.extract_conversation("s1")
        memory.extract_conversation("s2")
        claims = _claims(memory)
        assert {c: f.status for c, f in claims.items() if c.startswith("Sam is")} == {
            "Sam is a nurse.": "active", "Sam is a mother of two.": "active"}


def test_preferences_and_goals_add_up(settings):
    """Two preferences that share three words ("the user prefers using …") and two goals ("… goal is to …") said a
    week apart: all four stay active, none replaces another."""
    with AgentMemory(settings(extraction={"extractor": "offline"}), user_id="alice") as memory:
        _say(memory, "s1", NOV - timedelta(days=7), "I prefer using the YOLOv5s model.",
                     "My goal is to keep latency under 250ms.", speaker=None)
        _say(memory, "s2", NOV, "I prefer using GPU acceleration with TensorRT.",
                     "My goal is to ship the tracker by May.", speaker=None)
        memory.extract_conversation("s1")
        memory.extract_conversation("s2")
        statuses = {c: f.status for c, f in _claims(memory).items()}
        assert statuses == {
            "the user prefers using the YOLOv5s model.": "active",
            "the user prefers using GPU acceleration with TensorRT.": "active",
            "the user's goal is to keep latency under 250ms.": "active",
            "the user's goal is to ship the tracker by May.": "active"}, statuses


def test_descriptions_add_up_and_a_new_port_replaces_the_old(settings):
    """After "is", a description adds to another ("… code is efficient." / "… code is maintainable."); a value
    replaces the one before it ("… running on port 3000." / "… port 8000.")."""
    with AgentMemory(settings(extraction={"extractor": "offline"}), user_id="alice") as memory:
        _say(memory, "s1", NOV - timedelta(days=7), "My code is efficient.",
                     "My app is currently running on port 3000.", speaker=None)
        _say(memory, "s2", NOV, "My code is maintainable.", "My app is currently running on port 8000.", speaker=None)
        memory.extract_conversation("s1")
        memory.extract_conversation("s2")
        statuses = {c: f.status for c, f in _claims(memory).items()}
        assert statuses == {
            "the user's code is efficient.": "active", "the user's code is maintainable.": "active",
            "the user's app is currently running on port 3000.": "superseded",
            "the user's app is currently running on port 8000.": "active"}, statuses

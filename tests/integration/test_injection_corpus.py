"""Injection corpus: hostile strings through every string field of the public API (issue 11, "keep it fixed" suite 2).

Every value of :data:`CORPUS` (Cypher, SQL, Redis key and protocol syntax, Lucene / RediSearch and tsquery syntax,
Unicode edge cases, time phrases at the edge of the calendar) is pushed through every string a caller hands the
engine: turn content, metadata, ids, role, model; entity name, type, description, aliases, properties; relationship
type and properties; fact claim, source, metadata, provenance ids, promotion reason; goal description, result,
metadata, status and ids; tool name, input, output, error, task type; strategy description, context pattern and tool
sequence; profile preferences, expertise, style and metadata; working-memory keys, values, thoughts and session ids;
the recall query and channel; user ids; and the ingest JSONL format. Three promises are checked:

* **Byte-exact round trips.** What is accepted reads back identical through the public read path (``get_conversation``,
  ``get_entity``, ``get_entity_graph``, ``get_fact``, ``get_goal``, ``list_goals``, ``find_strategies``,
  ``get_tool_stats``, ``get_profile``, ``working.get`` and the recall bundle), and from the graph copy a recall reads.
  The one documented change is an entity name's (and alias's) whitespace: stripped, inner runs collapsed to one space.
* **Refusals are ours.** A value an id must not hold (api.md, "Ids": 1-100 characters, conversation ids 200, no
  surrounding whitespace, no control character or line separator), or that a closed vocabulary (role, channel, goal
  status, relationship type) does not contain, raises our ``ValidationError`` naming the field, and nothing is written.
* **Nothing else changes.** Another user's data planted first (the canary: ``bob``) reads back unchanged afterwards,
  with the same number of graph nodes and PostgreSQL rows, and no recall or read by another user id ever returns it.

The corpus lives in one place (:data:`CORPUS`); add a value to its category and every test pushes it everywhere.
Each test takes the whole corpus through one area of the API in one fixture (no test case per value, which would
pay a namespace per value); reads run a few at a time, writes one by one.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, TypeVar

import pytest

from agentx_memory import Entity, Fact, Goal, Turn
from agentx_memory.errors import NotFoundError, ValidationError
from agentx_memory.ingest import ingest_file
from tests.conftest import gread, sql
from tests.store_counts import store_counts

#: The corpus, by category. Invisible and confusable characters are written as escapes so the file says what they are.
CORPUS: dict[str, list[str]] = {
    "cypher": [
        "'}) MATCH (n) DETACH DELETE n //",
        '"}) MATCH (n) DETACH DELETE n //',
        "`}) MATCH (n) DETACH DELETE n //",
        "$param",
        "{user_id: 'bob'}",
        "\\u0027}) MATCH (n) DETACH DELETE n //",
        "\\' \\\" \\\\ \\",  # backslashes before quotes, doubled, and last
        '\\"}) MATCH (n) SET n.user_id = "alice" //',
        '" user_id="bob',  # FalkorDB sends parameters as a "CYPHER name=value" header
        "``",
    ],
    "sql": [
        "'; DROP TABLE conversation_logs; --",
        "$$; DROP TABLE tool_invocations; $$",
        "E'\\x27; DROP TABLE memory_timeline; --",
        "%s %(user_id)s %% %",
        "{} {0} {user_id}",
        "' OR '1'='1",
        "\\u0000 \\x00 literal escapes",
    ],
    "redis": [
        "*",
        "?",
        "[a-z]",
        ":",
        "%3A",  # what a ':' in a key segment is encoded as
        "{hash}tags}",
        "working:bob:_global:canary:context",  # bob's working-memory key
        "*1\r\n$4\r\nPING\r\n",  # a RESP command
    ],
    "fulltext": [
        "AND OR NOT ~ ^ * ? : \\ / [ ] { } \" + -",
        "title:x",
        '"unterminated',
        "*:*",
        "@title:{x} | -y",  # RediSearch
        "_",
    ],
    "tsquery": [
        "& | ! <-> :* ( )",
        "foo:*",
        "a & !b | (c <-> d)",
        "!!!",
    ],
    "unicode": [
        "e\u0301",  # NFD e-acute
        "\u00e9",  # NFC e-acute: must stay distinct from the NFD form
        "abc\u202edef",  # right-to-left override
        "a\u200db\u200cc\u200bd",  # zero-width joiner, non-joiner, space
        "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",  # family: an emoji ZWJ sequence
        "\U0001d573\U0001d58a\U0001d591 \U00013000 \U0001f1f5\U0001f1f9 \U0010fffd",  # astral plane
        "\ufeffbom first",
        "line\u2028sep\u2029para",
        "e" + "\u0301" * 150,  # one long grapheme (151 characters)
        "\u00a0nbsp\u00a0",  # surrounding no-break spaces
        "tab\there",
    ],
    # time phrases the recall query's self-query reads, at the edge of what a date can hold
    "time": [
        "9999 years ago",
        "on 0001-01-02",
        # beyond the calendar: they raised a raw OverflowError out of remember()
        "what happened 99999999999999999999 days ago",
        "on 0001-01-01",
    ],
}

VALUES: list[str] = [v for values in CORPUS.values() for v in values]
CATEGORY: dict[str, str] = {v: cat for cat, values in CORPUS.items() for v in values}

_SPACES = re.compile(r"\s+")
_BAD_ID_CATEGORIES = {"Cc", "Cs", "Zl", "Zp"}


def id_ok(value: str, max_len: int = 100) -> bool:
    """The documented id rule (api.md, "Ids"), written out here on its own: 1 to ``max_len`` characters, no leading or
    trailing whitespace, no control characters, lone surrogates or line separators."""
    return (0 < len(value) <= max_len and value == value.strip()
            and not any(unicodedata.category(c) in _BAD_ID_CATEGORIES for c in value))


def collapsed(name: str) -> str:
    """An entity name (or alias) as stored: surrounding whitespace stripped, inner runs collapsed to one space."""
    return _SPACES.sub(" ", name.strip())


T = TypeVar("T")


def in_parallel(calls: Iterable[Callable[[], T]]) -> list[T]:
    """Run independent reads of one memory on a few threads (the sync facade is thread-safe: every call runs on its
    one event loop), results in order, the first error raised. A Neo4j recall waits ~150 ms on the server; eight at a
    time take a quarter of the time and stay well inside each store's connection pool. Writes go one by one: at once
    they gain nothing on Neo4j (they queue on the user's node) and would only add lock retries."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(lambda call: call(), calls))


GOOD_IDS = [v for v in VALUES if id_ok(v)]
BAD_IDS = [v for v in VALUES if not id_ok(v)]


def meta(value: str) -> dict[str, Any]:
    """A JSON object with ``value`` as a key, a value, a list item and a nested key and value."""
    return {value: value, "nested": [value, {value: [value]}]}


def where(value: str) -> str:
    """The corpus value and its category, for assertion messages."""
    return f"{CATEGORY.get(value, '?')}: {value!r}"


def refused(field: str, value: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """``call(*args, **kwargs)``, which passes the corpus ``value`` somewhere, raises our ValidationError naming
    ``field``."""
    with pytest.raises(ValidationError) as caught:
        call(*args, **kwargs)
    assert caught.value.field == field, (where(value), str(caught.value))


def not_found(call: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """``call(*args, **kwargs)`` raises NotFoundError (the id names nothing of this user)."""
    with pytest.raises(NotFoundError):
        call(*args, **kwargs)


# --- the canary: another user's data that no input may change or reveal ---------------------------------------------

BOB = "bob"
SECRET = "bob's canary secret: the vault code is 4711"


def plant_canary(memory) -> dict[str, Any]:
    """Store bob's turn, entity, fact, goal, tool call, strategy, profile and working-memory value; return what they
    read back as, with bob's node count and row counts."""
    turn = memory.store_turn(Turn(id="canary-turn", conversation_id="canary", user_id=BOB, content=SECRET,
                                  metadata={"secret": SECRET}))
    entity = memory.upsert_entity(Entity(id="canary-entity", user_id=BOB, name="Canary Vault", description=SECRET))
    memory.learn_fact(Fact(id="canary-fact", user_id=BOB, claim=SECRET, source_turn_id=turn.id,
                           entity_ids=[entity.id]))
    memory.add_goal(Goal(id="canary-goal", user_id=BOB, description=SECRET))
    memory.record_invocation("canary", turn.id, "vault", {"code": SECRET}, SECRET, True, 5, user_id=BOB)
    memory.learn_strategy(SECRET, context_pattern=SECRET, tool_sequence=["vault"], user_id=BOB)
    memory.update_profile(BOB, preferences={"secret": SECRET}, expertise_areas=[SECRET])
    memory.working(BOB, "canary").set("context", {"secret": SECRET})
    return canary_snapshot(memory)


def canary_snapshot(memory) -> dict[str, Any]:
    """Bob's data as the public read path returns it, and how many nodes and rows are bob's."""
    rows = {table: sql(memory, "SELECT count(*) AS n FROM " + table + " WHERE user_id = %(u)s", {"u": BOB})[0]["n"]
            for table in ("conversation_logs", "tool_invocations", "memory_timeline", "user_profiles")}
    return {
        "turns": [t.model_dump(exclude={"embedding"}) for t in memory.get_conversation("canary", user_id=BOB)],
        "entity": memory.get_entity("canary-entity", user_id=BOB).model_dump(
            include={"id", "name", "type", "description", "aliases", "properties", "channel"}),
        "fact": memory.get_fact("canary-fact", user_id=BOB).model_dump(
            include={"id", "claim", "source_turn_id", "entity_ids", "metadata", "channel", "confidence"}),
        "goal": memory.get_goal("canary-goal", user_id=BOB).model_dump(exclude={"embedding"}),
        "tools": memory.get_tool_stats(user_id=BOB),
        "profile": memory.get_profile(BOB).model_dump(include={"preferences", "expertise_areas"}),
        "working": memory.working(BOB, "canary").get("context"),
        "nodes": gread(memory, "MATCH (n) WHERE n.user_id = $u RETURN count(n) AS n", {"u": BOB})[0]["n"],
        "rows": rows,
    }


def assert_canary(memory, before: dict[str, Any]) -> None:
    """Bob's data reads back exactly as planted: nothing any corpus value did reached it."""
    assert canary_snapshot(memory) == before


def holds_secret(item: Any) -> bool:
    """Whether a recalled item (or anything else) carries bob's secret."""
    return SECRET in json.dumps(item.model_dump(mode="json") if hasattr(item, "model_dump") else item, default=str)


# --- tests -----------------------------------------------------------------------------------------------------------

def test_the_corpus_covers_what_it_must():
    """The corpus has every category, no value twice (not even after an entity name's normalization, so every value
    is its own entity), both ids the rule allows and ids it refuses, and NFC / NFD forms that differ."""
    assert set(CORPUS) == {"cypher", "sql", "redis", "fulltext", "tsquery", "unicode", "time"}
    assert len(set(VALUES)) == len(VALUES)
    assert len({collapsed(v).casefold() for v in VALUES}) == len(VALUES)
    assert GOOD_IDS and BAD_IDS
    assert unicodedata.normalize("NFC", "e\u0301") == "\u00e9" and "e\u0301" in VALUES and "\u00e9" in VALUES
    assert all(v.strip() for v in VALUES)  # every value is storable text (blank text is another suite's subject)


def test_turns_round_trip_every_string_field(memory):
    """Turn content, metadata, id, conversation id, user id and model: every accepted value reads back byte-exact from
    get_conversation, get_recent_turns and the graph copy recall reads; a value an id, the role or the channel must
    not hold is our ValidationError naming the field, with nothing written; bob's data is untouched."""
    canary = plant_canary(memory)
    turns = []
    for i, v in enumerate(VALUES):
        turns.append(Turn(
            id=v if id_ok(v) else f"turn-{i}", conversation_id=v if id_ok(v, 200) else f"conv-{i}",
            user_id=v if id_ok(v) else "alice", role="assistant", model=v if id_ok(v) else None,
            content=v, metadata=meta(v),
        ))
    stored = memory.store_turns(turns)
    assert [(t.id, t.content, t.metadata) for t in stored] == [(t.id, t.content, t.metadata) for t in turns]
    for turn in turns:
        [back] = memory.get_conversation(turn.conversation_id, user_id=turn.user_id)
        got = back.model_dump(include={"id", "conversation_id", "user_id", "role", "model", "content", "metadata"})
        want = turn.model_dump(include={"id", "conversation_id", "user_id", "role", "model", "content", "metadata"})
        assert got == want, where(turn.content)
    graph = {r["id"]: r for r in gread(
        memory, "MATCH (t:Turn) WHERE t.id IN $ids RETURN t.id AS id, t.content AS content, t.user_id AS user_id, "
                "t.conversation_id AS conversation_id, t.metadata AS metadata", {"ids": [t.id for t in turns]})}
    for turn in turns:
        row = graph[turn.id]
        assert (row["content"], row["user_id"], row["conversation_id"], json.loads(row["metadata"])) == (
            turn.content, turn.user_id, turn.conversation_id, turn.metadata), where(turn.content)
    users = sorted({t.user_id for t in turns})
    recent = dict(zip(users, in_parallel(partial(memory.get_recent_turns, user_id=u, limit=1000) for u in users),
                      strict=True))
    for user in users:
        assert sorted((t.id, t.content, t.metadata) for t in recent[user]) == sorted(
            (t.id, t.content, t.metadata) for t in turns if t.user_id == user), where(user)

    before = store_counts(memory)
    base = {"conversation_id": "refusals", "user_id": "alice", "content": "ok"}
    for v in VALUES:
        refused("role", v, memory.store_turn, Turn(**base, role=v))
        refused("channel", v, memory.store_turn, Turn(**base, channel=v))
        refused("channel", v, memory.store_turn, Turn(**base), channel=v)
        refused("channels", v, memory.get_recent_turns, channels=[v])
    for v in BAD_IDS:
        for field in ("id", "user_id", "model"):
            fields = {"conversation_id": "refusals", "user_id": "alice", "content": "ok", "role": "assistant", field: v}
            refused(field, v, memory.store_turn, Turn(**fields))
        if not id_ok(v, 200):
            refused("conversation_id", v, memory.store_turn, Turn(conversation_id=v, user_id="alice", content="ok"))
            refused("conversation_id", v, memory.get_conversation, v)
        refused("user_id", v, memory.get_conversation, "canary", user_id=v)
    assert store_counts(memory) == before
    assert_canary(memory, canary)


def test_entities_facts_and_relationships_round_trip(memory):
    """Entity name, type, description, aliases and properties, relationship properties, fact claim, source, metadata
    and provenance ids, and the promotion reason: accepted values read back byte-exact (names with whitespace
    collapsed, as documented) from get_entity, get_entity_graph and get_fact (the reason from the promoted fact and
    its audit entry); NFC and NFD names stay two entities; bad ids and relationship types are our ValidationError with
    nothing written; bob's data is untouched."""
    canary = plant_canary(memory)
    source = memory.store_turns([Turn(id=v, conversation_id="facts", user_id="alice", content=f"turn {i}")
                                 for i, v in enumerate(GOOD_IDS)])
    entities = [Entity(id=v if id_ok(v) else f"entity-{i}", user_id="alice", name=v,
                       type=v if len(v.encode()) <= 100 else "concept", description=v, properties=meta(v))
                for i, v in enumerate(VALUES)]
    stored = [memory.upsert_entity(e) for e in entities]
    assert [e.id for e in stored] == [e.id for e in entities]
    for entity, back in zip(entities, in_parallel(partial(memory.get_entity, e.id) for e in entities),
                            strict=True):
        assert (back.name, back.type, back.description, back.properties) == (
            collapsed(entity.name), entity.type, entity.description, entity.properties), where(entity.description)
    assert memory.get_entity("e\u0301").name == "e\u0301" and memory.get_entity("\u00e9").name == "\u00e9"

    holder = memory.upsert_entity(Entity(user_id="alice", name="alias holder", aliases=list(VALUES)))
    assert memory.get_entity(holder.id).aliases == [collapsed(v) for v in VALUES]

    # a relationship between two entities whose ids are corpus values (a quote-breaking one and the NFD form), with
    # every value in its properties
    ids = [e.id for e in entities]
    ends = (VALUES[0], "e\u0301")
    props = {v: meta(v) for v in VALUES}
    memory.create_relationship(*ends, "RELATED_TO", props)
    graph = memory.get_entity_graph(list(ends), depth=1)
    assert [(r.source_id, r.target_id, r.rel_type, r.properties) for r in graph.relationships] == [
        (*ends, "RELATED_TO", props)]

    # a fact's conversation is its source turn's when it has one (naming another is a ValidationError)
    conversation_of = {t.id: t.conversation_id for t in source}
    facts = [Fact(id=v if id_ok(v) else f"fact-{i}", user_id="alice", channel="proj", claim=v, source=v,
                  metadata=meta(v), source_turn_id=v if v in conversation_of else None,
                  conversation_id=conversation_of.get(v, v if id_ok(v, 200) else None), entity_ids=[entities[i].id])
             for i, v in enumerate(VALUES)]
    assert [memory.learn_fact(f).claim for f in facts] == VALUES
    fields = {"claim", "source", "metadata", "source_turn_id", "conversation_id", "entity_ids"}
    for fact, back in zip(facts, in_parallel(partial(memory.get_fact, f.id) for f in facts), strict=True):
        assert back.model_dump(include=fields) == fact.model_dump(include=fields), where(fact.claim)
    # a promotion (of the fact whose id is the first value), its reason every value
    reason = "\n".join(VALUES)
    promoted = memory.promote_to_global(VALUES[0], reason)
    assert (promoted.claim, promoted.channel) == (VALUES[0], "_global")
    assert gread(memory, "MATCH (g:Fact) WHERE g.id = $id RETURN g.promotion_reason AS reason",
                 {"id": promoted.id}) == [{"reason": reason}]
    audited = sql(memory, "SELECT metadata->>'reason' AS reason FROM memory_audit_log WHERE operation = 'promote'")
    assert audited == [{"reason": reason}]

    before = store_counts(memory)
    for v in VALUES:
        refused("rel_type", v, memory.create_relationship, ids[0], ids[1], v)
        refused("channel", v, memory.upsert_entity, Entity(user_id="alice", name="x", channel=v))
        refused("channel", v, memory.learn_fact, Fact(user_id="alice", claim="x"), channel=v)
    for v in BAD_IDS:
        refused("id", v, memory.upsert_entity, Entity(id=v, user_id="alice", name="x"))
        refused("user_id", v, memory.upsert_entity, Entity(user_id=v, name="x"))
        refused("entity_id", v, memory.get_entity, v)
        refused("source_id", v, memory.create_relationship, v, ids[0], "KNOWS")
        refused("target_id", v, memory.create_relationship, ids[0], v, "KNOWS")
        refused("entity_ids", v, memory.get_entity_graph, [ids[0], v])
        refused("id", v, memory.learn_fact, Fact(id=v, user_id="alice", claim="x"))
        refused("source_turn_id", v, memory.learn_fact, Fact(user_id="alice", claim="x", source_turn_id=v))
        refused("entity_ids", v, memory.learn_fact, Fact(user_id="alice", claim="x", entity_ids=[v]))
        refused("fact_id", v, memory.get_fact, v)
        refused("fact_id", v, memory.promote_to_global, v, "why")
    assert store_counts(memory) == before
    assert_canary(memory, canary)


def test_goals_round_trip(memory):
    """Goal description, metadata, result and ids (its own, parent and blockers): accepted values read back byte-exact
    from get_goal and list_goals; a bad id or status is our ValidationError with nothing written; bob's data is
    untouched."""
    canary = plant_canary(memory)

    def chain(category: str) -> list[Goal]:
        """The category's goals, each a subgoal of the one before and blocked by the category's first."""
        made: list[Goal] = []
        for v in CORPUS[category]:
            i = VALUES.index(v)
            goal = Goal(id=v if id_ok(v) else f"goal-{i}", user_id="alice", description=v, metadata=meta(v),
                        parent_id=made[-1].id if made else None, blocked_by=[made[0].id] if len(made) > 1 else [],
                        priority=i)
            memory.add_goal(goal)
            made.append(goal)
        return made

    goals = [goal for category in CORPUS for goal in chain(category)]
    for goal in goals[::3]:
        memory.complete_goal(goal.id, "completed", result=goal.description)
    listed = {g.id: g for g in memory.list_goals()}
    assert set(listed) == {g.id for g in goals}
    for i, (goal, back) in enumerate(zip(goals, in_parallel(partial(memory.get_goal, g.id) for g in goals),
                                         strict=True)):
        assert back.model_dump(include={"id", "description", "metadata", "parent_id", "blocked_by"}) == goal.model_dump(
            include={"id", "description", "metadata", "parent_id", "blocked_by"}), where(goal.description)
        assert back.result == (goal.description if i % 3 == 0 else None), where(goal.description)
        assert listed[goal.id].model_dump(exclude={"embedding"}) == back.model_dump(exclude={"embedding"})

    before = store_counts(memory)
    for v in VALUES:
        refused("status", v, memory.add_goal, Goal(user_id="alice", description="x", status=v))
        refused("status", v, memory.complete_goal, goals[0].id, v)
        refused("status", v, memory.list_goals, status=v)
        refused("channels", v, memory.list_goals, channels=[v])
    for v in BAD_IDS:
        refused("id", v, memory.add_goal, Goal(id=v, user_id="alice", description="x"))
        refused("parent_id", v, memory.add_goal, Goal(user_id="alice", description="x", parent_id=v))
        refused("blocked_by", v, memory.add_goal, Goal(user_id="alice", description="x", blocked_by=[v]))
        refused("goal_id", v, memory.get_goal, v)
        refused("goal_id", v, memory.complete_goal, v)
        refused("blocker_id", v, memory.block_goal, goals[0].id, v)
        refused("user_id", v, memory.list_goals, user_id=v)
    assert store_counts(memory) == before
    assert_canary(memory, canary)


def test_tool_calls_and_strategies_round_trip(memory):
    """Tool name, task type, conversation, turn and invocation ids, input, output and error message; strategy
    description, context pattern, tool sequence and source conversation: accepted values come back byte-exact (tool
    log rows, get_tool_stats, find_strategies, the strategy's SUCCEEDED_IN link); bad ids and channels are our
    ValidationError with nothing written; bob's data is untouched."""
    canary = plant_canary(memory)
    # the turn each call was made in: its id a corpus value where the rule allows
    turn_ids = [v if id_ok(v) else f"tool-turn-{i}" for i, v in enumerate(VALUES)]
    memory.store_turns([Turn(id=turn_ids[i], conversation_id=v if id_ok(v, 200) else "tools", user_id="alice",
                             content=f"calling tool {i}") for i, v in enumerate(VALUES)])
    invocations = [memory.record_invocation(
        v if id_ok(v, 200) else "tools", turn_ids[i], v if id_ok(v) else "tool", meta(v), v, False, i,
        task_type=v if id_ok(v) else None, error_message=v, invocation_id=v if id_ok(v) else f"inv-{i}")
        for i, v in enumerate(VALUES)]
    for i, (v, invocation) in enumerate(zip(VALUES, invocations, strict=True)):
        assert (invocation.turn_id, invocation.tool_input, invocation.tool_output, invocation.error_message) == (
            turn_ids[i], meta(v), v, v), where(v)
    rows = {r["invocation_id"]: r for r in sql(
        memory, "SELECT invocation_id, tool_name, task_type, conversation_id, turn_id, tool_input, tool_output, "
                "error_message FROM tool_invocations WHERE user_id = 'alice'")}
    for i, v in enumerate(VALUES):
        good = id_ok(v)
        row = rows[v if good else f"inv-{i}"]
        assert (row["tool_name"], row["task_type"], row["conversation_id"], row["turn_id"], row["tool_input"],
                row["tool_output"], row["error_message"]) == (
            v if good else "tool", v if good else None, v if id_ok(v, 200) else "tools", turn_ids[i], meta(v), v, v), (
            where(v))
    for v in GOOD_IDS:
        assert [s["tool_name"] for s in memory.get_tool_stats(task_type=v)] == [v], where(v)

    strategies = [memory.learn_strategy(v, context_pattern=v, tool_sequence=[v] if id_ok(v) else [],
                                        from_conversation_id=v if id_ok(v, 200) else None) for v in VALUES]
    assert [(s.description, s.context_pattern) for s in strategies] == [(v, v) for v in VALUES]
    learned = {s.id: v for s, v in zip(strategies, VALUES, strict=True)}
    found = {s.id: s for s in memory.find_strategies(VALUES[0], top_k=1000)}
    assert set(found) == set(learned)  # every one of alice's strategies, none of bob's
    # the source conversation is a SUCCEEDED_IN link to the conversation of that id (the tool calls above made it)
    links = {r["id"]: r["conversations"] for r in gread(
        memory, "MATCH (s:Strategy) WHERE s.user_id = 'alice' OPTIONAL MATCH (s)-[:SUCCEEDED_IN]->(c:Conversation) "
                "RETURN s.id AS id, collect(c.id) AS conversations")}
    for strategy_id, v in learned.items():
        best = found[strategy_id]
        assert (best.description, best.context_pattern, best.tool_sequence, links[strategy_id]) == (
            v, v, [v] if id_ok(v) else [], [v] if id_ok(v, 200) else []), where(v)

    before = store_counts(memory)
    for v in VALUES:
        refused("channel", v, memory.record_invocation, "tools", None, "tool", {}, None, True, 1, channel=v)
        refused("channel", v, memory.learn_strategy, "x", channel=v)
        refused("channels", v, memory.find_strategies, "x", channels=[v])
        refused("channel", v, memory.get_tool_stats, channel=v)
    for v in BAD_IDS:
        for field in ("tool_name", "task_type", "invocation_id", "turn_id", "user_id"):
            args: dict[str, Any] = {"conversation_id": "tools", "turn_id": None, "tool_name": "tool", "tool_input": {},
                                    "tool_output": None, "success": True, "latency_ms": 1, field: v}
            refused(field, v, memory.record_invocation, **args)
        refused("tool_sequence", v, memory.learn_strategy, "x", tool_sequence=[v])
        refused("task_type", v, memory.get_tool_stats, task_type=v)
        refused("strategy_id", v, memory.reinforce_strategy, v, True)
        if not id_ok(v, 200):
            refused("conversation_id", v, memory.record_invocation, v, None, "tool", {}, None, True, 1)
            refused("from_conversation_id", v, memory.learn_strategy, "x", from_conversation_id=v)
    assert store_counts(memory) == before
    assert_canary(memory, canary)


def test_profiles_round_trip(memory):
    """Profile preferences, expertise areas, communication style and metadata, for alice and for a user id of each
    allowed corpus value: everything reads back byte-exact from get_profile, expertise in first-seen order; a bad user
    id is our ValidationError with nothing written; bob's profile is untouched."""
    canary = plant_canary(memory)
    for category, values in CORPUS.items():
        memory.update_profile(preferences={v: v for v in values}, expertise_areas=values,
                              communication_style={category: values}, metadata={v: meta(v) for v in values})
    profile = memory.get_profile()
    assert profile.preferences == {v: v for v in VALUES}
    assert profile.expertise_areas == VALUES
    assert profile.communication_style == CORPUS
    assert profile.metadata == {v: meta(v) for v in VALUES}
    for v in GOOD_IDS:
        memory.update_profile(v, preferences=meta(v), expertise_areas=[v])
    for v in GOOD_IDS:
        back = memory.get_profile(v)
        assert (back.user_id, back.preferences, back.expertise_areas) == (v, meta(v), [v]), where(v)

    before = store_counts(memory)
    for v in BAD_IDS:
        refused("user_id", v, memory.update_profile, v, preferences={"a": 1})
        refused("user_id", v, memory.get_profile, v)
    assert store_counts(memory) == before
    assert_canary(memory, canary)


def test_working_memory_round_trips_and_never_shares_a_key(memory):
    """Working-memory keys, values, thoughts, cached turns, the active goal and session ids (user, conversation): every
    accepted value reads back byte-exact and deletes by its key; distinct ids (``*``, ``?``, ``:``, ``%3A``, NFC and
    NFD ...) never share a key, so no session reads or overwrites another (bob's included); a bad key or id is our
    ValidationError."""
    canary = plant_canary(memory)
    session = memory.working("alice", "scratch")
    keys = [v for v in VALUES if id_ok(v, 200)]
    for v in keys:
        session.set(v, meta(v))
    for v in VALUES:
        session.push_thought(v)
    session.set_active_goal("goal-1", VALUES[-1])
    for v in keys:
        assert session.get(v) == meta(v), where(v)
    context = session.get_context()
    assert context["values"] == {v: meta(v) for v in keys}
    thoughts = [t["thought"] for t in session.get_thoughts(limit=len(VALUES))]
    assert thoughts and thoughts == VALUES[-len(thoughts):]  # the newest ones (the list is capped), oldest first
    assert session.get_active_goal()["description"] == VALUES[-1]
    for v in GOOD_IDS:
        session.set_active_goal(v, v)
        goal = session.get_active_goal()
        assert (goal["goal_id"], goal["description"]) == (v, v), where(v)
    scratch = memory.working("alice", "dicts")
    for i, v in enumerate(VALUES):
        scratch.push_thought(meta(v))
        scratch.add_turn(Turn(id=f"cached-{i}", conversation_id="dicts", user_id="alice", content=v, metadata=meta(v)))
    assert scratch.get_thoughts(limit=len(VALUES))[-1] == meta(VALUES[-1])
    cached = scratch.get_recent_turns(limit=len(VALUES))
    assert [(t["content"], t["metadata"]) for t in cached] == [(v, meta(v)) for v in VALUES[-len(cached):]]

    sessions = [(v, c) for v in GOOD_IDS for c in (v, "c")] + [("alice", v) for v in keys]
    for i, (user, conversation) in enumerate(sessions):
        memory.working(user, conversation).set("slot", {"owner": [user, conversation], "n": i})
    for i, (user, conversation) in enumerate(sessions):
        assert memory.working(user, conversation).get("slot") == {"owner": [user, conversation], "n": i}, (
            where(user), where(conversation))
    for v in keys:
        assert session.get(v) == meta(v), where(v)
    for v in keys:
        assert session.delete(v) is True and session.get(v) is None, where(v)
    assert session.get_context()["values"] == {}

    for v in VALUES:
        if not id_ok(v, 200):
            refused("key", v, session.set, v, 1)
            refused("key", v, session.get, v)
            refused("conversation_id", v, memory.working, "alice", v)
        if not id_ok(v):
            refused("user_id", v, memory.working, v, "c")
        refused("channel", v, memory.working, "alice", "c", channel=v)
    assert_canary(memory, canary)


def test_every_corpus_query_recalls_only_the_users_own_data(memory):
    """remember() with each corpus value as the query returns a bundle, never raises, and holds only alice's items
    (turns, facts and entities with corpus text), each exactly as stored; with each allowed value as the user id it
    returns nothing of bob's (who stored every corpus value too); a corpus channel is our ValidationError. Bob's data
    is untouched."""
    canary = plant_canary(memory)
    memory.store_turns([Turn(id=f"bob-{i}", conversation_id="bob-corpus", user_id=BOB, content=f"{v} {SECRET}")
                        for i, v in enumerate(VALUES)])
    # per category, a fact holding every value and an entity named by its first value, aliased by all of them
    for c in CORPUS:
        memory.learn_fact(Fact(id=f"bob-fact-{c}", user_id=BOB, claim="\n".join([*CORPUS[c], SECRET])))
        memory.upsert_entity(Entity(id=f"bob-entity-{c}", user_id=BOB, name=CORPUS[c][0], aliases=CORPUS[c][1:],
                                    description=SECRET))
    alice_turns = memory.store_turns([Turn(id=f"alice-{i}", conversation_id="alice-corpus", user_id="alice",
                                           content=v, metadata=meta(v)) for i, v in enumerate(VALUES)])
    stored_turns = {t.id: (t.content, t.metadata) for t in alice_turns}
    facts = [memory.learn_fact(Fact(id=f"alice-fact-{c}", user_id="alice", claim="\n".join(CORPUS[c]),
                                    metadata={v: meta(v) for v in CORPUS[c]})) for c in CORPUS]
    stored_facts = {f.id: (f.claim, f.metadata) for f in facts}
    entities = [memory.upsert_entity(Entity(id=f"alice-entity-{c}", user_id="alice", name=CORPUS[c][0],
                                            aliases=CORPUS[c][1:], description="\n".join(CORPUS[c])))
                for c in CORPUS]
    stored_entities = {e.id: (e.name, e.aliases, e.description) for e in entities}
    assert [e.aliases for e in entities] == [[collapsed(v) for v in CORPUS[c][1:]] for c in CORPUS]
    canary = canary_snapshot(memory)  # bob's corpus data is part of what must stay as it is
    # a lookup by a corpus id nobody used is NotFoundError, never a driver's error
    lookups: list[Callable[[str], Any]] = [memory.get_entity, memory.get_fact, memory.get_goal, memory.get_conversation,
                                           partial(memory.reinforce_strategy, success=True)]
    in_parallel(partial(not_found, lookup, v) for v in GOOD_IDS for lookup in lookups)

    bundles = in_parallel(partial(memory.remember, v, top_k=5) for v in VALUES)
    for v, bundle in zip(VALUES, bundles, strict=True):
        assert bundle.query == v and bundle.turns and bundle.facts, where(v)  # alice's items are there to check
        for scored in bundle.turns:
            assert scored.item.user_id == "alice" and not holds_secret(scored.item), where(v)
            assert (scored.item.content, scored.item.metadata) == stored_turns[scored.item.id], where(v)
        for scored_fact in bundle.facts:
            assert scored_fact.item.user_id == "alice", where(v)
            assert (scored_fact.item.claim, scored_fact.item.metadata) == stored_facts[scored_fact.item.id], where(v)
        for scored_entity in bundle.entities:
            assert scored_entity.item.user_id == "alice" and not holds_secret(scored_entity.item), where(v)
            assert (scored_entity.item.name, scored_entity.item.aliases, scored_entity.item.description) == (
                stored_entities[scored_entity.item.id]), where(v)
        assert not bundle.strategies, where(v)  # alice learned none; bob's are his
        assert not any(holds_secret(g) for g in bundle.goals) and not holds_secret(bundle.user_context), where(v)
    # recall as users named like patterns (every allowed Redis-syntax id, the first allowed id of each category)
    strangers = sorted({v for v in GOOD_IDS if CATEGORY[v] == "redis"}
                       | {next(v for v in CORPUS[c] if id_ok(v)) for c in CORPUS}, key=VALUES.index)
    foreign = in_parallel(partial(memory.remember, f"{v} canary secret vault", user_id=v, top_k=5)
                          for v in strangers)
    for v, bundle in zip(strangers, foreign, strict=True):
        assert not bundle.all_scored() and not bundle.goals and not holds_secret(bundle.user_context), where(v)
    for v in GOOD_IDS:
        assert memory.get_profile(v).preferences == {}, where(v)
        assert memory.working(v, "canary").get("context") is None, where(v)
    in_parallel(partial(not_found, memory.get_conversation, "canary", user_id=v) for v in GOOD_IDS)
    memory.drain()
    for v in VALUES:
        refused("channel", v, memory.remember, "x", channel=v)
    for v in BAD_IDS:
        refused("user_id", v, memory.remember, "x", user_id=v)
    assert_canary(memory, canary)


def _jsonl_lines() -> Iterator[tuple[dict[str, Any], bool]]:
    """One ingest line per corpus value and per field it can fill: the line, and whether the id rule lets it in."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for i, v in enumerate(VALUES):
        at = (start + timedelta(minutes=i)).isoformat()
        yield {"user_id": "alice", "conversation_id": f"ingest-{i}", "role": "user", "content": v, "timestamp": at,
               "metadata": meta(v), "id": f"ingest-turn-{i}"}, True
        yield {"user_id": v, "conversation_id": v, "role": "user", "content": v, "timestamp": at,
               "id": v}, id_ok(v)
        yield {"user_id": "alice", "conversation_id": "ingest-bad", "role": v, "content": v, "timestamp": at}, False


def test_ingest_jsonl_round_trips_and_skips_exactly_the_bad_lines(memory, tmp_path):
    """The ingest JSONL format with corpus values in content, metadata, ids and role: every good line reads back
    byte-exact from get_conversation, every bad one (an id the rule refuses, a role outside the vocabulary) is skipped
    and reported by its line number, and bob's data is untouched."""
    canary = plant_canary(memory)
    lines = list(_jsonl_lines())
    path = tmp_path / "corpus.jsonl"
    with path.open("w", encoding="utf-8", newline="") as handle:
        for line, _ in lines:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    report = memory._portal.run(ingest_file(memory.core, path))
    good = [line for line, ok in lines if ok]
    assert report.stored == len(good)
    assert [number for number, _ in report.skipped] == [n for n, (_, ok) in enumerate(lines, start=1) if not ok]
    for line in good:
        [turn] = memory.get_conversation(line["conversation_id"], user_id=line["user_id"])
        assert (turn.id, turn.content, turn.metadata) == (line["id"], line["content"], line.get("metadata", {})), (
            where(line["content"]))
    assert_canary(memory, canary)


#: One grapheme of 10,001 UTF-8 bytes: a base letter and 5,000 combining acute accents.
LONG_GRAPHEME = "e" + "\u0301" * 5000


def test_a_very_long_single_grapheme_round_trips(memory):
    """A 10 kB single grapheme (fine as text, far beyond any id) round-trips byte-exact through turn content, a fact
    claim, a goal description, a strategy, an entity description and a working-memory value, and is a recall query
    that finds its turn; as an entity name (1,000 bytes at most) or an id it is our ValidationError."""
    turn = memory.store_turn(Turn(conversation_id="long", user_id="alice", content=LONG_GRAPHEME))
    assert memory.get_conversation("long")[0].content == LONG_GRAPHEME
    fact = memory.learn_fact(Fact(user_id="alice", claim=LONG_GRAPHEME, source_turn_id=turn.id))
    assert memory.get_fact(fact.id).claim == LONG_GRAPHEME
    goal = memory.add_goal(Goal(user_id="alice", description=LONG_GRAPHEME))
    assert memory.get_goal(goal.id).description == LONG_GRAPHEME
    strategy = memory.learn_strategy(LONG_GRAPHEME, context_pattern=LONG_GRAPHEME)
    [found] = memory.find_strategies(LONG_GRAPHEME)
    assert (found.id, found.description, found.context_pattern) == (strategy.id, LONG_GRAPHEME, LONG_GRAPHEME)
    entity = memory.upsert_entity(Entity(user_id="alice", name="long", description=LONG_GRAPHEME))
    assert memory.get_entity(entity.id).description == LONG_GRAPHEME
    memory.working("alice", "long").set("grapheme", LONG_GRAPHEME)
    assert memory.working("alice", "long").get("grapheme") == LONG_GRAPHEME
    bundle = memory.remember(LONG_GRAPHEME)
    assert turn.id in {t.item.id for t in bundle.turns}
    assert all(t.item.content == LONG_GRAPHEME for t in bundle.turns if t.item.id == turn.id)
    before = store_counts(memory)
    refused("name", LONG_GRAPHEME, memory.upsert_entity, Entity(user_id="alice", name=LONG_GRAPHEME))
    refused("id", LONG_GRAPHEME, memory.store_turn,
            Turn(id=LONG_GRAPHEME, conversation_id="long", user_id="alice", content="x"))
    refused("key", LONG_GRAPHEME, memory.working("alice", "long").set, LONG_GRAPHEME, 1)
    assert store_counts(memory) == before

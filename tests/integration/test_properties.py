"""Property-based tests of the whole public API and of the ingest format (issue 11, "keep it fixed" suite 1).

One property, checked with hostile input on every public method of :class:`~agentx_memory.AgentMemory` (and of the
working-memory view it hands out), and on JSONL ingest lines:

- **a result or one of our errors**: a call returns, or raises ``ValidationError``, ``NotFoundError`` or
  ``ConflictError`` (the ``AgentXMemoryError`` subclasses a caller acts on), never a raw ``TypeError``, pydantic's
  ``ValidationError``, ``UnicodeEncodeError``, ``RecursionError`` or a driver's error, nor a ``StorageError`` (the
  servers are up, so a ``StorageError`` means bad input reached a server);
- **a rejected call writes nothing**: graph nodes and relationships, the rows of every table of the namespace's
  PostgreSQL schema, and the namespace's Redis keys (with their sizes) are the same after it as before
  (:func:`tests.store_counts.store_counts`);
- **an accepted call reads back**: what it returned is what the matching read returns.

Each example draws one call. Its arguments are ordinary values (ids of the seeded world, any valid Unicode text,
numbers and instants in range, JSON metadata), except that most examples pick one argument (or one model field) and
give it a hostile value: arbitrary Unicode (lone surrogates, NUL, control characters, line separators), very long
strings, whitespace-padded ids, a wrong type where a string, a number, a list or a dict is expected, huge, negative,
NaN and infinite numbers, naive and extreme datetimes (year 1, year 9999, far-off offsets), nested JSON. One hostile
value per call means every check is reached, not only the first one of each method. Model fields get values pydantic
accepts for their type (a model pydantic itself refuses never reaches the API); arguments that are not models also
get values of the wrong type, and a model argument is sometimes not a model at all.

State is shared on purpose: each test opens one memory (one namespace) and every example runs against what the
earlier ones stored, so calls meet existing ids, other users' conversations and merged entities. Hypothesis runs
derandomized (the same examples on every run, in CI too), without a deadline and without an example database; its
``explain`` phase is off because it replays examples against state that has moved on. ``max_examples`` is set per test
so that the whole file runs in about a minute on both graph backends (FalkorDB ~6 s, Neo4j ~40 s, plus server start).
"""

from __future__ import annotations

import io
import json
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypeVar

import pydantic
import pytest
from hypothesis import HealthCheck, Phase, given, reject
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from agentx_memory import AgentMemory, Entity, Fact, Goal, Turn
from agentx_memory.errors import ConflictError, NotFoundError, ValidationError
from agentx_memory.ingest import ingest_file
from agentx_memory.models import RELATIONSHIP_TYPES
from agentx_memory.retrieval.bundle import MemoryBundle
from agentx_memory.validation import check_id
from agentx_memory.working import MAX_TTL_SECONDS
from tests.conftest import TEST_DIMENSION
from tests.store_counts import store_counts

T = TypeVar("T")

hsettings.register_profile(
    "agentx-properties",
    # The memory fixture is function-scoped on purpose: the examples of a test share one namespace, and each example
    # compares the stores' counts right before and right after its own call.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=False,
    phases=(Phase.explicit, Phase.generate, Phase.shrink),
)
PROFILE = hsettings.get_profile("agentx-properties")

#: The errors a caller is promised for bad input or a missing / colliding id.
REJECTIONS = (ValidationError, NotFoundError, ConflictError)


# --- ordinary values -------------------------------------------------------------------------------------------------

#: Text any store takes: any Unicode but lone surrogates and NUL, not blank.
nice_text = st.one_of(
    st.sampled_from(["We fly to Lisbon on May 3rd.", "Pack light.", "Lisbon again", "Ünïcödé ✓ 日本語 🙂"]),
    st.text(min_size=1, max_size=40).filter(lambda t: bool(t.strip()) and "\x00" not in t),
)
_nice_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.floats(-1e6, 1e6, allow_nan=False),
    st.text(max_size=12).filter(lambda t: "\x00" not in t),
)
nice_json = st.recursive(
    _nice_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=6).filter(lambda t: "\x00" not in t), inner, max_size=3)),
    max_leaves=6,
)
nice_object = st.dictionaries(st.text(max_size=8).filter(lambda t: "\x00" not in t), nice_json, max_size=3)
nice_datetime = st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2100, 1, 1),
                             timezones=st.sampled_from([None, UTC, timezone(timedelta(hours=-5))]))


class Args:
    """The arguments of one call: ordinary values, except for (usually) one chosen argument that gets a hostile
    value. ``target`` names it (None: every argument is ordinary)."""

    def __init__(self, data: st.DataObject, names: list[str]):
        self.data = data
        self.target: str | None = data.draw(st.one_of(st.none(), st.sampled_from(names)), label="hostile argument")

    def __call__(self, name: str, ordinary: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]) -> Any:
        """The value of argument ``name``."""
        return self.data.draw(hostile if name == self.target else ordinary, label=name)

    def fields(self, required: dict[str, tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]],
               optional: dict[str, tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]]) -> dict[str, Any]:
        """Keyword arguments (or model fields): every required one, and some optional ones (always the target)."""
        out = {name: self(name, *pair) for name, pair in required.items()}
        for name, pair in optional.items():
            if name == self.target or self.data.draw(st.booleans(), label=f"set {name}"):
                out[name] = self(name, *pair)
        return out


# --- hostile values --------------------------------------------------------------------------------------------------

def nested(depth: int) -> Any:
    """A list nested ``depth`` levels deep."""
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


#: Nested deeper than Python's json module (and copy.deepcopy) can recurse: every JSON argument and field must refuse
#: it with our ValidationError (it raised a raw RecursionError from model fields, tool input, working memory, ingest).
TOO_DEEP = nested(5000)

SPECIAL_TEXT = [
    "", " ", "   ", " padded ", " lead", "trail ", "\t", "line\nbreak", "cr\r", "\u2028", "\u2029", "\x85", "\x7f",
    "a\x00b", "\x00", "\ud800", "x\udfffy", "\udbff\udc00", "é", "🙂", "%:%3A", ":", "_global", "GLOBAL",
    "'; DROP TABLE conversation_logs; --", "MATCH (n) DETACH DELETE n", "}) RETURN 1 //", "\\", "null", "{}",
    "trail\\", 'quote"in', "it's", "a\\'b", "$param", "\\u0000", "ﬁ", "\uff21", "\u200b", "\ufeff", "\U0010ffff",
    "x" * 101, "x" * 201, "x" * 5000, "💥" * 9000, "y" * 40_000, "z" * 300_000,
]

_chars = st.one_of(
    st.characters(exclude_categories=()),
    st.sampled_from(["\ud800", "\udfff", "\x00", "\u2028", "\n", " ", ":", "%"]),
)
#: Any Python string, lone surrogates and NUL included.
any_text = st.one_of(st.sampled_from(SPECIAL_TEXT), st.lists(_chars, max_size=30).map("".join))

#: Values of a type no string argument takes.
wrong_type = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.binary(max_size=4),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.just(object()), st.just(("a", "b")), st.just({"a"}),
)

any_int = st.one_of(
    st.integers(),
    st.sampled_from([0, 1, -1, 2**31 - 1, 2**31, -(2**31), 2**63 - 1, 2**63, -(2**63) - 1, 10**30, -(10**40)]),
)
any_float = st.one_of(
    st.floats(), st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -0.0, 5e-324, 0.5, 1.0, 1.0000001]),
)
#: What a numeric argument (limit, top_k, hours, depth ...) may be handed.
any_number_arg = st.one_of(any_int, any_float, st.sampled_from(["5", "", None, True, [1], {"n": 1}]))

_zones: st.SearchStrategy[Any] = st.sampled_from([
    None, UTC, timezone(timedelta(hours=14)), timezone(timedelta(hours=-12)),
    timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-23, minutes=59)),
])
any_datetime = st.one_of(
    st.datetimes(min_value=datetime.min, max_value=datetime.max, timezones=_zones),
    st.sampled_from([
        datetime.min, datetime.max, datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5))),
        datetime(9999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-5))), datetime(1, 1, 2, tzinfo=UTC),
        datetime(9999, 12, 30, tzinfo=UTC), datetime(1970, 1, 1), datetime(2026, 5, 3, 12, 0, tzinfo=UTC),
    ]),
)

#: Any float: PostgreSQL's JSONB keeps numbers by value (1.5e20 comes back as the integer it equals), and what a store
#: call returns is what the log holds, so it reads back as returned.
_json_float = any_float
_json_leaf = st.one_of(st.none(), st.booleans(), any_int, _json_float, any_text)
#: JSON-ish values: nested lists and objects of any leaf (NaN, huge integers, lone surrogates included).
json_value = st.recursive(
    _json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(any_text, inner, max_size=3)),
    max_leaves=8,
)
SPECIAL_OBJECTS: list[dict[str, Any]] = [
    {}, {"deep": nested(100)}, {"big": "x" * 40_000}, {"a": {"b": {"c": [1, 2, {"d": None}]}}},
    {"when": datetime(2026, 1, 1)}, {"set": {1, 2}}, {"raw": b"\x00\xff"}, {"self": "ref"}, {"nan": math.nan},
    {"inf": [math.inf]}, {"\ud800": 1}, {"a\x00": "b"}, {"n": 2**80}, {"nested": [[[[[[[[[[1]]]]]]]]]]},
    {"e": 1.5e20, "big": 1e308, "z": -0.0},
]
#: JSON objects with string keys (what model metadata / properties / profile dicts take).
json_object = st.one_of(st.dictionaries(any_text, json_value, max_size=4), st.sampled_from(SPECIAL_OBJECTS))
#: An object nested deeper than json, deepcopy and the drivers recurse (a strategy of its own: hypothesis must never
#: repr it).
DEEP_OBJECT = st.just({"deep": TOO_DEEP})
#: An argument that should be a JSON object but may be anything.
any_object_arg = st.one_of(
    json_object, wrong_type, st.dictionaries(st.integers(), st.integers(), min_size=1, max_size=2),
    st.lists(json_value, max_size=3), DEEP_OBJECT,
)
#: An ``embedding`` field: of the wrong size, with NaN or infinity, or of the right size.
embedding_field = st.one_of(
    st.lists(any_float, max_size=3), st.just([math.nan] * TEST_DIMENSION), st.just([math.inf] * TEST_DIMENSION),
    st.lists(st.floats(-1, 1), min_size=TEST_DIMENSION, max_size=TEST_DIMENSION), st.just([0.0] * TEST_DIMENSION),
    st.just([1.0] * (TEST_DIMENSION + 1)),
)

# --- the shared world of a test: ids that exist, ids of another user, ids that do not exist --------------------------

USERS = ["alice", "bob", "carol"]
CONVERSATIONS = ["trip", "bob-chat", "new-conversation"]
TURNS = ["t1", "t2", "t-bob", "t-new"]
ENTITIES = ["e1", "e2", "e-bob", "e-missing"]
FACTS = ["f1", "f2", "f-missing"]
GOALS = ["g1", "g2", "g-missing"]
TOOLS = ["grep", "read", "fetch"]
CHANNELS = ["_global", "proj", "other-1"]
ROLES = ["user", "assistant", "system", "tool"]

Pair = tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]


def id_field(pool: list[str], *, fresh: bool = False) -> Pair:
    """An id model field: one of the pool (or a fresh one) / any string."""
    ordinary = st.one_of(st.sampled_from(pool), st.uuids().map(str)) if fresh else st.sampled_from(pool)
    return ordinary, any_text


def id_arg(pool: list[str]) -> Pair:
    """An id argument: one of the pool / any string or a value of the wrong type."""
    return st.sampled_from(pool), st.one_of(any_text, wrong_type)


USER_ARG: Pair = (st.one_of(st.none(), st.sampled_from(USERS)), st.one_of(any_text, wrong_type))
CHANNEL_FIELD: Pair = (st.sampled_from(CHANNELS), any_text)
CHANNEL_ARG: Pair = (st.sampled_from(CHANNELS), st.one_of(any_text, wrong_type))
OPTIONAL_CHANNEL_ARG: Pair = (st.one_of(st.none(), st.sampled_from(CHANNELS)), st.one_of(any_text, wrong_type))
CHANNELS_ARG: Pair = (
    st.one_of(st.none(), st.sampled_from(CHANNELS), st.lists(st.sampled_from(CHANNELS), max_size=2)),
    st.one_of(any_text, wrong_type, st.lists(st.one_of(any_text, wrong_type), min_size=1, max_size=3)),
)
TEXT_FIELD: Pair = (nice_text, any_text)
TEXT_ARG: Pair = (nice_text, st.one_of(any_text, wrong_type))
OBJECT_FIELD: Pair = (nice_object, st.one_of(json_object, DEEP_OBJECT))
DATETIME_FIELD: Pair = (nice_datetime, any_datetime)
BOOL_ARG: Pair = (st.booleans(), wrong_type)
EMBEDDING_FIELD: Pair = (st.none(), embedding_field)


def count_field(low: int, high: int) -> Pair:
    return st.integers(low, high), any_int


def number_arg(ordinary: st.SearchStrategy[Any]) -> Pair:
    return ordinary, any_number_arg


@dataclass
class World:
    """What the first example of a test stored, so later examples meet existing, foreign and missing ids."""

    strategies: list[str]


_WORLDS: dict[str, World] = {}


def world(memory: AgentMemory) -> World:
    """The namespace's seeded world, stored on first use (the memory, and so the namespace, is one per test)."""
    schema = memory.settings.postgres.db_schema
    if schema not in _WORLDS:
        memory.store_turns([
            Turn(id="t1", conversation_id="trip", user_id="alice", content="We fly to Lisbon on May 3rd."),
            Turn(id="t2", conversation_id="trip", user_id="alice", role="assistant", content="Pack light."),
        ])
        memory.store_turn(Turn(id="t-bob", conversation_id="bob-chat", user_id="bob", content="Bob likes Porto."))
        memory.upsert_entity(Entity(id="e1", user_id="alice", name="Lisbon", type="place"))
        memory.upsert_entity(Entity(id="e2", user_id="alice", name="Portugal", type="place", channel="proj"))
        memory.upsert_entity(Entity(id="e-bob", user_id="bob", name="Porto", type="place"))
        memory.learn_fact(Fact(id="f1", user_id="alice", channel="proj", claim="Lisbon is in Portugal",
                               source_turn_id="t1", entity_ids=["e1"]))
        memory.learn_fact(Fact(id="f2", user_id="alice", claim="Lisbon is sunny", entity_ids=["e1"]))
        memory.create_relationship("e1", "e2", "PART_OF")
        memory.add_goal(Goal(id="g1", user_id="alice", description="plan the trip"))
        memory.add_goal(Goal(id="g2", user_id="alice", description="book flights", parent_id="g1"))
        grep = memory.learn_strategy("search then read", tool_sequence=["grep", "read"])
        bob = memory.learn_strategy("ask a friend", user_id="bob")
        memory.record_invocation("trip", "t1", "grep", {"q": "Lisbon"}, "ok", True, 5)
        memory.update_profile(preferences={"units": "metric"}, expertise_areas=["hiking"])
        memory.working("alice", "trip").set("topic", "travel")
        _WORLDS[schema] = World(strategies=[grep.id, bob.id, "s-missing"])
    return _WORLDS[schema]


@pytest.fixture(autouse=True)
def _forget_worlds():
    """A world belongs to one namespace; forget it when the test (and its namespace) ends."""
    yield
    _WORLDS.clear()


# --- the property ----------------------------------------------------------------------------------------------------

class Rejected:
    """What :func:`attempt` returns for a call that raised one of our errors."""

    def __init__(self, error: Exception):
        self.error = error


def attempt(memory: AgentMemory, call: Callable[[], T]) -> T | Rejected:
    """Run ``call``: its result, or :class:`Rejected` when it raised one of :data:`REJECTIONS` having written
    nothing. Any other exception propagates and fails the property."""
    before = store_counts(memory)
    try:
        result = call()
    except REJECTIONS as error:
        after = store_counts(memory)
        changed = {k: (before.get(k), after.get(k)) for k in before.keys() | after.keys()
                   if before.get(k) != after.get(k)}
        assert not changed, f"a rejected call ({type(error).__name__}: {error}) changed the stores: {changed}"
        return Rejected(error)
    memory.drain()  # background writes of an accepted recall land before the next example counts
    return result


def model(cls: type[T], fields: dict[str, Any]) -> T:
    """``cls(**fields)``; a value pydantic refuses is no API input (the example is discarded)."""
    try:
        return cls(**fields)
    except pydantic.ValidationError:
        reject()


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON (NaN equal to NaN, tuples equal to lists)."""
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def user_of(user: Any) -> str:
    """The user a call with ``user_id=user`` is about (the memory's default user is alice)."""
    return "alice" if user is None else user


def not_a_model(*extra: Any) -> st.SearchStrategy[Any]:
    """Something passed where a model (Turn, Entity ...) belongs."""
    return st.one_of(wrong_type, st.just({"content": "a dict, not a model"}), st.sampled_from(list(extra) or [None]))


# --- episodic --------------------------------------------------------------------------------------------------------

#: Any integer, the top of PostgreSQL's INTEGER included (2**31 - 1 raised a StorageError instead of a ValidationError).
hostile_index = st.one_of(any_int, st.sampled_from([2**31 - 1, 2**31 - 2, 2**31 - 3]))

TURN_REQUIRED = {"conversation_id": id_field(CONVERSATIONS), "user_id": id_field(USERS), "content": TEXT_FIELD}
TURN_OPTIONAL = {
    "id": id_field(TURNS, fresh=True), "channel": CHANNEL_FIELD,
    "index": (st.one_of(st.none(), st.integers(0, 40)), st.one_of(st.none(), hostile_index)),
    "timestamp": DATETIME_FIELD, "role": (st.sampled_from(ROLES), any_text), "token_count": count_field(0, 1000),
    "model": (st.sampled_from(["gpt-x", "claude-1"]), any_text), "metadata": OBJECT_FIELD, "embedding": EMBEDDING_FIELD,
}
TURN_NAMES = [*TURN_REQUIRED, *TURN_OPTIONAL]


def check_turns_read_back(memory: AgentMemory, stored: list[Turn]) -> None:
    """Each stored turn is in its conversation as returned: content, index and metadata."""
    for turn in stored:
        assert isinstance(turn, Turn)
        read = {t.id: t for t in memory.get_conversation(turn.conversation_id, user_id=turn.user_id)}
        assert turn.id in read, turn
        assert (read[turn.id].content, read[turn.id].index, read[turn.id].role) == (turn.content, turn.index, turn.role)
        assert same_json(read[turn.id].metadata, turn.metadata), (read[turn.id].metadata, turn.metadata)


@hsettings(PROFILE, max_examples=100)
@given(data=st.data())
def test_episodic_calls_return_or_reject_cleanly(memory, data):
    """store_turn, store_turns, get_conversation and get_recent_turns, on any input, return or raise one of our
    errors; a rejected call leaves every store as it was, and stored turns read back from their conversation."""
    world(memory)
    op = data.draw(st.sampled_from(["store_turn", "store_turns", "get_conversation", "get_recent_turns"]))
    if op == "store_turn":
        args = Args(data, [*TURN_NAMES, "turn", "channel argument"])
        turn = model(Turn, args.fields(TURN_REQUIRED, TURN_OPTIONAL)) if args.target != "turn" \
            else data.draw(not_a_model([]))
        channel = args("channel argument", *OPTIONAL_CHANNEL_ARG)
        result = attempt(memory, lambda: memory.store_turn(turn, channel=channel))
        if not isinstance(result, Rejected):
            check_turns_read_back(memory, [result])
    elif op == "store_turns":
        args = Args(data, [*TURN_NAMES, "turns", "channel argument"])
        size = data.draw(st.integers(1, 3))
        turns: Any = [model(Turn, args.fields(TURN_REQUIRED, TURN_OPTIONAL)) for _ in range(size)]
        if args.target == "turns":
            turns = data.draw(st.sampled_from([None, "turns", {}, {"turn": 1}, (), [], [*turns, "not a turn"], [None],
                                               5, iter(turns), turns[0]]))
        channel = args("channel argument", *OPTIONAL_CHANNEL_ARG)
        result = attempt(memory, lambda: memory.store_turns(turns, channel=channel))
        if not isinstance(result, Rejected):
            check_turns_read_back(memory, result)
    elif op == "get_conversation":
        args = Args(data, ["conversation_id", "user_id"])
        conversation, user = args("conversation_id", *id_arg(CONVERSATIONS)), args("user_id", *USER_ARG)
        result = attempt(memory, lambda: memory.get_conversation(conversation, user_id=user))
        if not isinstance(result, Rejected):
            assert result and all(t.conversation_id == conversation and t.user_id == user_of(user) for t in result)
            assert [t.index for t in result] == sorted(t.index or 0 for t in result)
    else:
        args = Args(data, ["user_id", "channels", "hours", "limit"])
        user, channels = args("user_id", *USER_ARG), args("channels", *CHANNELS_ARG)
        hours = args("hours", *number_arg(st.one_of(st.integers(1, 10**5), st.floats(0.01, 10**5))))
        limit = args("limit", *number_arg(st.integers(1, 100)))
        result = attempt(memory, lambda: memory.get_recent_turns(user, channels, hours, limit))
        if not isinstance(result, Rejected):
            assert all(isinstance(t, Turn) and t.user_id == user_of(user) for t in result)
            assert len(result) <= limit


# --- semantic --------------------------------------------------------------------------------------------------------

ENTITY_REQUIRED = {"user_id": id_field(USERS), "name": (st.one_of(nice_text, st.sampled_from(["Lisbon", "lisbon"])),
                                                         any_text)}
ENTITY_OPTIONAL = {
    "id": id_field(ENTITIES, fresh=True), "channel": CHANNEL_FIELD,
    "type": (st.sampled_from(["place", "person", "concept"]), any_text),
    "aliases": (st.lists(nice_text, max_size=2), st.lists(any_text, min_size=1, max_size=3)),
    "description": TEXT_FIELD, "salience": (st.floats(0, 1), any_float), "first_seen": DATETIME_FIELD,
    "last_accessed": (st.one_of(st.none(), nice_datetime), any_datetime), "access_count": count_field(0, 100),
    "properties": OBJECT_FIELD, "embedding": EMBEDDING_FIELD,
}
FACT_REQUIRED = {"user_id": id_field(USERS), "claim": TEXT_FIELD}
FACT_OPTIONAL = {
    "id": id_field(FACTS, fresh=True), "channel": CHANNEL_FIELD, "confidence": (st.floats(0, 1), any_float),
    "source": (st.just("conversation"), any_text), "source_turn_id": id_field(TURNS),
    "conversation_id": id_field(CONVERSATIONS),
    "entity_ids": (st.lists(st.sampled_from(ENTITIES[:2]), max_size=2),
                   st.lists(st.one_of(st.sampled_from(ENTITIES), any_text), min_size=1, max_size=3)),
    "temporal": (st.sampled_from([None, "current", "past", "future"]), st.sampled_from([None, "past"])),
    "created_at": DATETIME_FIELD, "access_count": count_field(0, 100), "metadata": OBJECT_FIELD,
    "embedding": EMBEDDING_FIELD,
}


@hsettings(PROFILE, max_examples=120)
@given(data=st.data())
def test_semantic_calls_return_or_reject_cleanly(memory, data):
    """upsert_entity, get_entity, learn_fact, store_fact, get_fact, create_relationship, get_entity_graph and
    promote_to_global, on any input, return or raise one of our errors; a rejected call leaves every store as it
    was, and an accepted write reads back through the matching get."""
    world(memory)
    op = data.draw(st.sampled_from(["upsert_entity", "get_entity", "learn_fact", "store_fact", "get_fact",
                                    "create_relationship", "get_entity_graph", "promote_to_global"]))
    if op == "upsert_entity":
        args = Args(data, [*ENTITY_REQUIRED, *ENTITY_OPTIONAL, "entity", "channel argument"])
        entity = model(Entity, args.fields(ENTITY_REQUIRED, ENTITY_OPTIONAL)) if args.target != "entity" \
            else data.draw(not_a_model())
        channel = args("channel argument", *OPTIONAL_CHANNEL_ARG)
        result = attempt(memory, lambda: memory.upsert_entity(entity, channel=channel))
        if not isinstance(result, Rejected):
            read = memory.get_entity(result.id, user_id=result.user_id)
            assert (read.name, read.type, read.channel) == (result.name, result.type, result.channel)
            assert sorted(read.aliases) == sorted(result.aliases)
            assert same_json(read.properties, result.properties), (read.properties, result.properties)
    elif op == "get_entity":
        args = Args(data, ["entity_id", "user_id"])
        entity_id, user = args("entity_id", *id_arg(ENTITIES)), args("user_id", *USER_ARG)
        result = attempt(memory, lambda: memory.get_entity(entity_id, user_id=user))
        if not isinstance(result, Rejected):
            assert (result.id, result.user_id) == (entity_id, user_of(user))
    elif op in ("learn_fact", "store_fact"):
        args = Args(data, [*FACT_REQUIRED, *FACT_OPTIONAL, "fact", "channel argument"])
        fact = model(Fact, args.fields(FACT_REQUIRED, FACT_OPTIONAL)) if args.target != "fact" \
            else data.draw(not_a_model())
        channel = args("channel argument", *OPTIONAL_CHANNEL_ARG)
        learn = memory.learn_fact if op == "learn_fact" else memory.store_fact
        result = attempt(memory, lambda: learn(fact, channel=channel))
        if not isinstance(result, Rejected):
            read = memory.get_fact(result.id, user_id=result.user_id)
            assert (read.claim, read.channel, read.temporal) == (result.claim, result.channel, result.temporal)
            assert read.confidence == result.confidence
            assert set(read.entity_ids) == set(result.entity_ids)
            assert same_json(read.metadata, result.metadata), (read.metadata, result.metadata)
    elif op == "get_fact":
        args = Args(data, ["fact_id", "user_id"])
        fact_id, user = args("fact_id", *id_arg(FACTS)), args("user_id", *USER_ARG)
        result = attempt(memory, lambda: memory.get_fact(fact_id, user_id=user))
        if not isinstance(result, Rejected):
            assert (result.id, result.user_id) == (fact_id, user_of(user))
    elif op == "create_relationship":
        args = Args(data, ["source_id", "target_id", "rel_type", "properties", "user_id"])
        source, target = args("source_id", *id_arg(ENTITIES)), args("target_id", *id_arg(ENTITIES))
        rel_type = args("rel_type", st.sampled_from(RELATIONSHIP_TYPES),
                        st.one_of(st.just("related_to"), any_text, wrong_type))
        properties = args("properties", st.one_of(st.none(), nice_object), st.one_of(any_object_arg, DEEP_OBJECT))
        user = args("user_id", *USER_ARG)
        result = attempt(memory, lambda: memory.create_relationship(source, target, rel_type, properties, user))
        if not isinstance(result, Rejected):
            assert (result.source_id, result.target_id, result.rel_type) == (source, target, rel_type)
            graph = memory.get_entity_graph([source], depth=1, user_id=user)
            edges = {(r.source_id, r.target_id, r.rel_type): r.properties for r in graph.relationships}
            assert (source, target, rel_type) in edges, (result, edges)
            assert same_json(edges[(source, target, rel_type)], result.properties)
    elif op == "get_entity_graph":
        args = Args(data, ["entity_ids", "depth", "user_id", "limit"])
        ids = args("entity_ids", st.lists(st.sampled_from(ENTITIES), max_size=3),
                   st.one_of(st.lists(st.one_of(any_text, wrong_type), min_size=1, max_size=3), wrong_type))
        depth, limit = args("depth", *number_arg(st.sampled_from([1, 2, 3]))), args("limit", *number_arg(st.none()))
        user = args("user_id", *USER_ARG)
        result = attempt(memory, lambda: memory.get_entity_graph(ids, depth, user, limit))
        if not isinstance(result, Rejected):
            assert all(e.user_id == user_of(user) for e in [*result.entities, *result.facts])
    else:
        args = Args(data, ["fact_id", "reason", "user_id"])
        fact_id, reason = args("fact_id", *id_arg(FACTS)), args("reason", *TEXT_ARG)
        user = args("user_id", *USER_ARG)
        result = attempt(memory, lambda: memory.promote_to_global(fact_id, reason, user_id=user))
        if not isinstance(result, Rejected):
            assert result.channel == "_global"
            read = memory.get_fact(result.id, user_id=user)
            assert (read.claim, read.channel) == (result.claim, "_global")


# --- procedural ------------------------------------------------------------------------------------------------------

INVOCATION_REQUIRED: dict[str, Pair] = {
    "conversation_id": id_arg(CONVERSATIONS), "turn_id": (st.one_of(st.none(), st.sampled_from(TURNS)),
                                                          st.one_of(any_text, wrong_type)),
    "tool_name": id_arg(TOOLS), "tool_input": (nice_json, st.one_of(json_value, any_object_arg)),
    "tool_output": (nice_json, st.one_of(json_value, any_object_arg)),
    "success": (st.one_of(st.none(), st.booleans()), wrong_type),
    "latency_ms": (st.one_of(st.none(), st.integers(0, 10**6)), any_number_arg),
}
INVOCATION_OPTIONAL: dict[str, Pair] = {
    "channel": CHANNEL_ARG, "user_id": USER_ARG, "task_type": (st.sampled_from(["search", "io"]),
                                                                 st.one_of(any_text, wrong_type)),
    # an id used before: the same call is idempotent, other fields are a ConflictError (it returned the new call)
    "error_message": TEXT_ARG, "invocation_id": (st.one_of(st.builds(lambda: str(uuid.uuid4())),
                                                           st.sampled_from(["inv-1", "inv-2"])),
                                                 st.one_of(any_text, wrong_type).filter(lambda v: not is_id(v))),
    "timestamp": (nice_datetime, st.one_of(any_datetime, wrong_type, st.just("2026-05-03T10:00:00"))),
}


def is_id(value: Any) -> bool:
    """Whether ``value`` passes the id rule."""
    try:
        check_id(value, "id")
    except ValidationError:
        return False
    return True


def read_strategy(memory: AgentMemory, strategy_id: str, user: str) -> Any:
    """The stored strategy (the procedural store's own read: the public API has no get_strategy)."""
    return memory._portal.run(memory.core.procedural.get_strategy(strategy_id, user))


@hsettings(PROFILE, max_examples=120)
@given(data=st.data())
def test_procedural_calls_return_or_reject_cleanly(memory, data):
    """record_invocation, learn_strategy, find_strategies, reinforce_strategy and get_tool_stats, on any input,
    return or raise one of our errors; a rejected call leaves every store as it was, a recorded call shows in the
    user's tool statistics, and a learned or reinforced strategy reads back with its counts."""
    strategies = world(memory).strategies
    op = data.draw(st.sampled_from(["record_invocation", "learn_strategy", "find_strategies", "reinforce_strategy",
                                    "get_tool_stats"]))
    if op == "record_invocation":
        args = Args(data, [*INVOCATION_REQUIRED, *INVOCATION_OPTIONAL])
        kwargs = args.fields(INVOCATION_REQUIRED, INVOCATION_OPTIONAL)
        result = attempt(memory, lambda: memory.record_invocation(**kwargs))
        if not isinstance(result, Rejected):
            stats = memory.get_tool_stats(user_id=result.user_id, channel=result.channel)
            assert result.tool_name in {s["tool_name"] for s in stats}, (result, stats)
    elif op == "learn_strategy":
        args = Args(data, ["description", "context_pattern", "tool_sequence", "from_conversation_id", "success",
                           "channel", "user_id"])
        description = args("description", st.one_of(nice_text, st.sampled_from(["search then read", "ask a friend"])),
                           st.one_of(any_text, wrong_type))
        context = args("context_pattern", st.one_of(st.just(""), nice_text),
                       st.one_of(any_text, wrong_type, st.sampled_from([{}, b"", 0, False, [], ()])))
        tools = args("tool_sequence", st.lists(st.sampled_from(TOOLS), max_size=3),
                     st.one_of(st.lists(st.one_of(any_text, wrong_type), min_size=1, max_size=3), any_text, wrong_type))
        origin = args("from_conversation_id", st.one_of(st.none(), st.sampled_from(CONVERSATIONS)),
                      st.one_of(any_text, wrong_type))
        success, channel = args("success", *BOOL_ARG), args("channel", *CHANNEL_ARG)
        user = args("user_id", *USER_ARG)
        result = attempt(memory, lambda: memory.learn_strategy(description, context, tools, origin, success, channel,
                                                               user))
        if not isinstance(result, Rejected):
            read = read_strategy(memory, result.id, user_of(user))
            assert (read.description, read.channel) == (result.description, result.channel)
            assert (read.success_count, read.failure_count) == (result.success_count, result.failure_count)
            assert read.tool_sequence == result.tool_sequence
    elif op == "find_strategies":
        args = Args(data, ["task_description", "channels", "top_k", "user_id"])
        task = args("task_description", *TEXT_ARG)
        channels, top_k = args("channels", *CHANNELS_ARG), args("top_k", *number_arg(st.integers(1, 20)))
        user = args("user_id", *USER_ARG)
        result = attempt(memory, lambda: memory.find_strategies(task, channels, top_k, user))
        if not isinstance(result, Rejected):
            assert len(result) <= top_k
            assert all(s.user_id == user_of(user) for s in result)
    elif op == "reinforce_strategy":
        args = Args(data, ["strategy_id", "success", "user_id"])
        strategy_id = args("strategy_id", st.sampled_from(strategies), st.one_of(any_text, wrong_type))
        success, user = args("success", *BOOL_ARG), args("user_id", *USER_ARG)
        result = attempt(memory, lambda: memory.reinforce_strategy(strategy_id, success, user))
        if not isinstance(result, Rejected):
            read = read_strategy(memory, strategy_id, user_of(user))
            assert (read.success_count, read.failure_count) == (result.success_count, result.failure_count)
    else:
        args = Args(data, ["task_type", "channel", "user_id"])
        task_type = args("task_type", st.sampled_from([None, "search"]), st.one_of(any_text, wrong_type))
        channel, user = args("channel", *OPTIONAL_CHANNEL_ARG), args("user_id", *USER_ARG)
        result = attempt(memory, lambda: memory.get_tool_stats(task_type, channel, user))
        if not isinstance(result, Rejected):
            assert all(isinstance(s["tool_name"], str) for s in result)


# --- goals -----------------------------------------------------------------------------------------------------------

GOAL_REQUIRED = {"user_id": id_field(USERS), "description": TEXT_FIELD}
GOAL_OPTIONAL = {
    "id": id_field(GOALS, fresh=True), "channel": CHANNEL_FIELD,
    "status": (st.sampled_from(["active", "completed", "abandoned", "blocked"]), any_text),
    "priority": count_field(-10, 10), "created_at": DATETIME_FIELD,
    "completed_at": (st.one_of(st.none(), nice_datetime), any_datetime), "result": TEXT_FIELD,
    "deadline": (st.one_of(st.none(), nice_datetime), any_datetime), "parent_id": id_field(GOALS[:2]),
    "blocked_by": (st.lists(st.sampled_from(GOALS[:2]), max_size=2),
                   st.lists(st.one_of(st.sampled_from(GOALS), any_text), min_size=1, max_size=3)),
    "metadata": OBJECT_FIELD, "embedding": EMBEDDING_FIELD,
}
GOAL_STATUS_ARG: Pair = (st.sampled_from(["completed", "abandoned", "blocked", "active"]),
                         st.one_of(any_text, wrong_type))


@hsettings(PROFILE, max_examples=100)
@given(data=st.data())
def test_goal_calls_return_or_reject_cleanly(memory, data):
    """add_goal, get_goal, complete_goal, block_goal and list_goals, on any input, return or raise one of our
    errors; a rejected call leaves every store as it was, and a stored or changed goal reads back."""
    world(memory)
    op = data.draw(st.sampled_from(["add_goal", "get_goal", "complete_goal", "block_goal", "list_goals"]))
    if op == "add_goal":
        args = Args(data, [*GOAL_REQUIRED, *GOAL_OPTIONAL, "goal", "channel argument"])
        goal = model(Goal, args.fields(GOAL_REQUIRED, GOAL_OPTIONAL)) if args.target != "goal" \
            else data.draw(not_a_model())
        channel = args("channel argument", *OPTIONAL_CHANNEL_ARG)
        result = attempt(memory, lambda: memory.add_goal(goal, channel=channel))
        if not isinstance(result, Rejected):
            read = memory.get_goal(result.id, user_id=result.user_id)
            assert (read.description, read.status, read.priority, read.channel, read.parent_id) == (
                result.description, result.status, result.priority, result.channel, result.parent_id)
            assert set(read.blocked_by) == set(result.blocked_by)
            assert same_json(read.metadata, result.metadata), (read.metadata, result.metadata)
    elif op == "get_goal":
        args = Args(data, ["goal_id", "user_id"])
        goal_id, user = args("goal_id", *id_arg(GOALS)), args("user_id", *USER_ARG)
        result = attempt(memory, lambda: memory.get_goal(goal_id, user_id=user))
        if not isinstance(result, Rejected):
            assert (result.id, result.user_id) == (goal_id, user_of(user))
    elif op == "complete_goal":
        args = Args(data, ["goal_id", "status", "result", "user_id"])
        goal_id, status = args("goal_id", *id_arg(GOALS)), args("status", *GOAL_STATUS_ARG)
        outcome = args("result", st.one_of(st.none(), nice_text), st.one_of(any_text, wrong_type))
        user = args("user_id", *USER_ARG)
        result = attempt(memory, lambda: memory.complete_goal(goal_id, status, outcome, user))
        if not isinstance(result, Rejected):
            read = memory.get_goal(goal_id, user_id=user)
            assert (read.status, read.result) == (result.status, result.result) == (status, outcome)
    elif op == "block_goal":
        args = Args(data, ["goal_id", "blocker_id", "user_id"])
        goal_id, blocker = args("goal_id", *id_arg(GOALS)), args("blocker_id", *id_arg(GOALS))
        user = args("user_id", *USER_ARG)
        result = attempt(memory, lambda: memory.block_goal(goal_id, blocker, user))
        if not isinstance(result, Rejected):
            assert blocker in result.blocked_by
            assert blocker in memory.get_goal(goal_id, user_id=user).blocked_by
    else:
        args = Args(data, ["user_id", "status", "channels"])
        user = args("user_id", *USER_ARG)
        status = args("status", st.one_of(st.none(), st.sampled_from(["active", "completed"])),
                      st.one_of(any_text, wrong_type))
        channels = args("channels", *CHANNELS_ARG)
        result = attempt(memory, lambda: memory.list_goals(user, status, channels))
        if not isinstance(result, Rejected):
            assert all(g.user_id == user_of(user) and (status is None or g.status == status) for g in result)


# --- profiles and recall ---------------------------------------------------------------------------------------------

PROFILE_OPTIONAL: dict[str, Pair] = {
    "preferences": (nice_object, st.one_of(any_object_arg, DEEP_OBJECT)),
    "communication_style": (nice_object, any_object_arg), "metadata": (nice_object, any_object_arg),
    "expertise_areas": (st.lists(st.one_of(nice_text, st.just("rust")), max_size=3),
                        st.one_of(st.lists(st.one_of(any_text, json_value), min_size=1, max_size=3), any_text,
                                  wrong_type)),
}
RECALL_OPTIONAL: dict[str, Pair] = {
    "user_id": USER_ARG, "channel": CHANNEL_ARG, "top_k": number_arg(st.integers(1, 20)),
    "time_window_hours": number_arg(st.one_of(st.none(), st.floats(0.5, 10**4))),
    "include_episodic": BOOL_ARG, "include_semantic": BOOL_ARG, "include_procedural": BOOL_ARG,
    "reference_time": (st.one_of(st.none(), st.datetimes(min_value=datetime(1990, 1, 1),
                                                         max_value=datetime(2100, 1, 1), timezones=st.just(UTC))),
                       st.one_of(any_datetime, wrong_type)),
    "recall": (st.sampled_from([None, {"hybrid": False}, {"neighbours": 0}]),
               st.one_of(any_object_arg, DEEP_OBJECT, st.just({"hybrid": "maybe"}), st.just({"no_such": 1}))),
}


@hsettings(PROFILE, max_examples=60)
@given(data=st.data())
def test_profile_and_recall_calls_return_or_reject_cleanly(memory, data):
    """get_profile, update_profile and remember, on any input, return or raise one of our errors; a rejected call
    leaves every store as it was, and an updated profile reads back as returned, with every area it was given."""
    world(memory)
    op = data.draw(st.sampled_from(["get_profile", "update_profile", "remember"]))
    if op == "get_profile":
        args = Args(data, ["user_id"])
        user = args("user_id", *USER_ARG)
        result = attempt(memory, lambda: memory.get_profile(user))
        if not isinstance(result, Rejected):
            assert result.user_id == user_of(user)
    elif op == "update_profile":
        args = Args(data, ["user_id", *PROFILE_OPTIONAL])
        user = args("user_id", *USER_ARG)
        parts = args.fields({}, PROFILE_OPTIONAL)
        result = attempt(memory, lambda: memory.update_profile(user, **parts))
        if not isinstance(result, Rejected):
            read = memory.get_profile(user)
            assert read.user_id == result.user_id == user_of(user)
            for name in ("preferences", "communication_style", "metadata", "expertise_areas"):
                assert same_json(getattr(read, name), getattr(result, name)), name
            for area in parts.get("expertise_areas") or []:
                assert any(same_json(area, stored) for stored in read.expertise_areas), area
    else:
        args = Args(data, ["query", *RECALL_OPTIONAL])
        query = args("query", st.one_of(nice_text, st.just("Where am I flying?")), st.one_of(any_text, wrong_type))
        kwargs = args.fields({}, RECALL_OPTIONAL)
        result = attempt(memory, lambda: memory.remember(query, **kwargs))
        if not isinstance(result, Rejected):
            assert isinstance(result, MemoryBundle)
            assert isinstance(result.to_prompt(max_tokens=200), str)


# --- working memory --------------------------------------------------------------------------------------------------

def as_stored(value: Any) -> Any:
    """``value`` as working memory hands it back: JSON, with timestamps as ISO text and sets and tuples as lists."""
    def default(item: Any) -> Any:
        if isinstance(item, datetime):
            return item.isoformat()
        if isinstance(item, (set, frozenset, tuple)):
            return list(item)
        return item.model_dump(mode="json")

    return json.loads(json.dumps(value, default=default))


WORKING_VALUE: Pair = (
    nice_json,
    st.one_of(json_value, json_object, wrong_type, st.just("x" * 70_000), st.just(datetime(2026, 5, 3, tzinfo=UTC)),
              st.just(b"\xff"), st.just({1, 2}), st.just(object()), st.just(TOO_DEEP)),
)
#: A read's ``limit`` (one above 2**63 was a StorageError: Redis refuses LRANGE's stop).
WORKING_LIMIT: Pair = (st.integers(-2, 50), st.one_of(any_int, any_float, st.sampled_from(["5", None, True, [1]])))


@hsettings(PROFILE, max_examples=120)
@given(data=st.data())
def test_working_memory_calls_return_or_reject_cleanly(memory, data):
    """memory.working(...) and every method of the session view (add_turn, get_recent_turns, set, get, delete,
    set_active_goal, get_active_goal, push_thought, get_thoughts, get_context, clear_session), on any input,
    return or raise one of our errors; a rejected call leaves every store as it was, and what was set, pushed or
    cached reads back."""
    world(memory)
    op = data.draw(st.sampled_from(["add_turn", "get_recent_turns", "set", "get", "delete", "set_active_goal",
                                    "get_active_goal", "push_thought", "get_thoughts", "get_context",
                                    "clear_session"]))
    args = Args(data, ["user_id", "conversation_id", "channel", "turn", "limit", "key", "value", "ttl_seconds",
                       "goal_id", "goal_description", "thought"])
    user, conversation = args("user_id", *USER_ARG), args("conversation_id", *id_arg(CONVERSATIONS))
    channel = args("channel", *CHANNEL_ARG)
    session = attempt(memory, lambda: memory.working(user, conversation, channel))
    if isinstance(session, Rejected):
        return
    key: Pair = (st.sampled_from(["topic", "plan", "ünï:cödé"]), st.one_of(any_text, wrong_type))
    if op == "add_turn":
        turn: Any = args("turn", st.builds(Turn, conversation_id=st.just("trip"), user_id=st.just("alice"),
                                           content=nice_text, metadata=nice_object),
                         st.one_of(json_object, wrong_type))
        result = attempt(memory, lambda: session.add_turn(turn))
        if not isinstance(result, Rejected):
            expected = turn.model_dump(mode="json", exclude={"embedding"}) if isinstance(turn, Turn) else turn
            assert same_json(session.get_recent_turns(1), [as_stored(expected)])
    elif op in ("get_recent_turns", "get_thoughts"):
        limit = args("limit", *WORKING_LIMIT)
        read = session.get_recent_turns if op == "get_recent_turns" else session.get_thoughts
        result = attempt(memory, lambda: read(limit))
        if not isinstance(result, Rejected):
            assert isinstance(result, list)
            assert len(result) <= max(limit, 0)
    elif op == "set":
        name, value = args("key", *key), args("value", *WORKING_VALUE)
        # A value that expires while the test runs would change the key counts under another example: accepted
        # expiries here are an hour or more.
        ttl = args("ttl_seconds", st.sampled_from([None, 3600, MAX_TTL_SECONDS]),
                   any_number_arg.filter(lambda v: not (type(v) is int and 1 <= v < 3600)))
        result = attempt(memory, lambda: session.set(name, value, ttl_seconds=ttl))
        if not isinstance(result, Rejected):
            assert same_json(session.get(name), as_stored(value))
    elif op in ("get", "delete"):
        name = args("key", *key)
        result = attempt(memory, lambda: (session.get if op == "get" else session.delete)(name))
        if not isinstance(result, Rejected) and op == "delete":
            assert session.get(name) is None
    elif op == "set_active_goal":
        goal_id, description = args("goal_id", *id_arg(GOALS)), args("goal_description", *WORKING_VALUE)
        result = attempt(memory, lambda: session.set_active_goal(goal_id, description))
        if not isinstance(result, Rejected):
            active = session.get_active_goal()
            assert active is not None
            assert active["goal_id"] == goal_id
            assert same_json(active["description"], as_stored(description))
    elif op == "push_thought":
        thought = args("thought", st.one_of(nice_text, nice_object), st.one_of(any_text, json_object, wrong_type))
        result = attempt(memory, lambda: session.push_thought(thought))
        if not isinstance(result, Rejected):
            last = session.get_thoughts(1)
            assert len(last) == 1, thought
            if isinstance(thought, str):
                assert last[0]["thought"] == thought
            else:
                assert same_json(last[0], as_stored(thought))
    else:
        call = {"get_active_goal": session.get_active_goal, "get_context": session.get_context,
                "clear_session": session.clear_session}[op]
        result = attempt(memory, call)
        if not isinstance(result, Rejected) and op == "clear_session":
            context = session.get_context()
            assert (context["values"], context["recent_turns"], context["thoughts"]) == ({}, [], [])
            assert context["active_goal"] is None


# --- ingest (JSONL lines) --------------------------------------------------------------------------------------------

RAW_LINES = [
    b"[1, 2]", b"null", b"{", b'"text"', b'{"content": NaN}', b"\xff\xfe{}", b"\xef\xbb\xbf{}", b'{"user_id": "alice"}',
    b"{}{}", b"  ", b"\x00", b"\xc3\x28", b'{"user_id": "alice", "user_id": "bob"}', b"1e999",
    b"[" * 100_000 + b"]" * 100_000,
]
INGEST_REQUIRED: dict[str, Pair] = {
    "user_id": (st.sampled_from(USERS), st.one_of(any_text, wrong_type)),
    "conversation_id": (st.sampled_from(CONVERSATIONS), st.one_of(any_text, wrong_type)),
    "role": (st.sampled_from(ROLES), st.one_of(any_text, wrong_type)),
    "content": (nice_text, st.one_of(any_text, wrong_type)),
    "timestamp": (nice_datetime.map(lambda d: d.isoformat()),
                  st.one_of(any_datetime.map(lambda d: d.isoformat()), any_text, any_int, wrong_type)),
}
INGEST_OPTIONAL: dict[str, Pair] = {
    "metadata": (nice_object, st.one_of(json_object, json_value, st.just({"deep": nested(600)}))),
    "channel": (st.sampled_from(CHANNELS), st.one_of(any_text, wrong_type)),
    "id": (st.uuids().map(str), st.one_of(st.sampled_from(TURNS), any_text, wrong_type)),
    "index": (st.integers(0, 40), st.one_of(hostile_index, any_float, any_text)),
    "extra": (st.nothing(), json_value),
}


def ingest_line(data: st.DataObject) -> bytes:
    """One line of an ingest file: a JSON object with one hostile field (or a missing one), or a line that is not
    JSON, not an object or not UTF-8."""
    kind = data.draw(st.sampled_from(["object", "object", "object", "missing field", "raw"]))
    if kind == "raw":
        raw = data.draw(st.one_of(st.binary(max_size=30), st.sampled_from(RAW_LINES)))
        return raw.replace(b"\n", b" ")
    args = Args(data, [*INGEST_REQUIRED, *INGEST_OPTIONAL])
    line = args.fields(INGEST_REQUIRED, {k: v for k, v in INGEST_OPTIONAL.items() if k != "extra" or k == args.target})
    if kind == "missing field":
        del line[data.draw(st.sampled_from(sorted(INGEST_REQUIRED)))]
    text = json.dumps(line, ensure_ascii=data.draw(st.booleans()), default=str)
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate written raw is a line that is not UTF-8


@hsettings(PROFILE, max_examples=60)
@given(data=st.data())
def test_ingest_lines_are_stored_or_reported(memory, tmp_path: Path, data):
    """ingest_file on a JSONL file of hostile lines never raises: every non-blank line is either stored or reported
    as skipped, once; a file of which nothing was stored leaves every store as it was; and every stored line reads
    back from its conversation."""
    world(memory)
    lines = [ingest_line(data) for _ in range(data.draw(st.integers(1, 4)))]
    content = b"\n".join(lines) + b"\n"
    path = tmp_path / "turns.jsonl"
    path.write_bytes(content)
    numbered = [(n, line) for n, line in enumerate(io.BytesIO(content), start=1) if line.strip()]
    before = store_counts(memory)
    report = memory._portal.run(ingest_file(memory.core, path, batch_size=2))
    skipped = [n for n, _ in report.skipped]
    assert sorted(set(skipped)) == skipped, report.skipped  # each line reported once, in order
    assert report.stored + len(skipped) == len(numbered), (report, numbered)
    after = store_counts(memory)
    if report.stored == 0:
        assert after == before, report.skipped
    assert after["postgres.conversation_logs"] - before["postgres.conversation_logs"] <= report.stored
    for number, line in numbered:
        if number not in skipped:
            raw = json.loads(line.decode("utf-8-sig"))
            turns = memory.get_conversation(raw["conversation_id"], user_id=raw["user_id"])
            assert raw["content"] in [t.content for t in turns], (number, raw)

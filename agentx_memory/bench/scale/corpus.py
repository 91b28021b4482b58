"""The scale benchmark's corpus: a deterministic, seeded synthetic chat corpus and the questions asked about it.

50 users whose activity follows a Zipf law (the most active user holds ~22% of all turns, the median one ~1%), five
channels, conversations of 6-36 chat turns between a user and the assistant, built from the templates and word lists
of :mod:`.vocabulary`. New entities are introduced at ~10% and facts derived at ~20% of the turn count; every fact
names its source turn and the entities it is about, and ~60% of new entities get a typed relationship to an earlier
one. Sizes are prefixes of one corpus, so the store grows 10k → 100k (→ 1M).
"""

from __future__ import annotations

import math
import random
import string
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from .vocabulary import load_vocabulary

__all__ = [
    "CHANNELS",
    "CHANNEL_EVENTS",
    "CHANNEL_WEIGHTS",
    "USER_ZIPF",
    "Corpus",
    "CorpusEntity",
    "CorpusFact",
    "CorpusTurn",
    "generate_corpus",
    "make_queries",
]

#: The words and templates every corpus is drawn from (the package data file).
VOCABULARY = load_vocabulary()

CHANNELS = ("_global", "work", "travel", "health", "family")
CHANNEL_WEIGHTS = (0.40, 0.15, 0.15, 0.15, 0.15)
#: Which events a conversation of each channel talks about.
CHANNEL_EVENTS = {
    "_global": ["meal", "trip", "hobby", "work", "health", "recommend", "gift", "pet", "move", "preference", "goal",
                "busy"],
    "work": ["work", "work", "move", "meal", "busy"],
    "travel": ["trip", "recommend", "meal", "trip", "goal"],
    "health": ["health", "hobby", "preference", "health", "goal"],
    "family": ["gift", "pet", "move", "hobby", "meal", "preference"],
}
#: Zipf exponent of user activity (user rank r gets a share proportional to 1 / r**s).
USER_ZIPF = 1.0

_LOWER_OK = frozenset(VOCABULARY.lower_ok)
_FIELDS = {t: {f for _, f, _, _ in string.Formatter().parse(t) if f}
           for t in [*VOCABULARY.reactions, *VOCABULARY.follow_ups, *VOCABULARY.remarks, *VOCABULARY.tails,
                     *VOCABULARY.chitchat]}
_ENTITY_TYPE = {"person": "person", "city": "place", "venue": "place", "org": "organization", "pet": "pet"}
_RELATION_FOR = {("person", "person"): "KNOWS", ("person", "org"): "WORKS_FOR", ("person", "city"): "LOCATED_IN",
                 ("venue", "city"): "LOCATED_IN", ("org", "city"): "LOCATED_IN", ("pet", "person"): "RELATED_TO"}


def _city(token: str) -> str:
    return token.replace("_", " ")


@dataclass
class CorpusTurn:
    """One chat turn of the corpus (the user's or the assistant's)."""

    id: str
    conversation_id: str
    user_id: str
    channel: str
    index: int
    timestamp: datetime
    role: str
    content: str
    speaker: str


@dataclass
class CorpusEntity:
    """An entity the user introduced in a turn."""

    id: str
    user_id: str
    channel: str
    name: str
    type: str
    description: str
    aliases: list[str]

    @property
    def text(self) -> str:
        """What ``upsert_entity`` would embed."""
        return self.name + (f": {self.description}" if self.description else "")


@dataclass
class CorpusFact:
    """A fact derived from a turn, with the question a user would later ask about it."""

    id: str
    user_id: str
    channel: str
    claim: str
    source_turn_id: str
    conversation_id: str
    entity_ids: list[str]
    created_at: datetime
    question: str


@dataclass
class Corpus:
    """A generated corpus: turns, entities, relationships and facts, in ingest order (sizes are prefixes)."""

    seed: int
    users: list[str]
    speakers: dict[str, str]
    turns: list[CorpusTurn] = field(default_factory=list)
    entities: list[CorpusEntity] = field(default_factory=list)
    relationships: list[tuple[str, str, str, str]] = field(default_factory=list)  # (user, source, target, type)
    facts: list[CorpusFact] = field(default_factory=list)
    # Where each conversation ends: (turn count, entity count, relationship count, fact count) after it.
    marks: list[tuple[int, int, int, int]] = field(default_factory=list)
    end_time: datetime = datetime(2024, 6, 30, tzinfo=UTC)

    def prefix(self, turns: int) -> tuple[int, int, int, int]:
        """Counts of (turns, entities, relationships, facts) in the prefix that holds ``turns`` turns."""
        for mark in self.marks:
            if mark[0] >= turns:
                return mark
        return self.marks[-1]

    def stats(self, turns: int) -> dict[str, Any]:
        """Sizes and text statistics of a prefix."""
        n_turns, n_entities, n_rel, n_facts = self.prefix(turns)
        sample = self.turns[:n_turns]
        words = [len(t.content.split()) for t in sample]
        vocab = {w.strip(".,!?'-").lower() for t in sample[:20_000] for w in t.content.split()}
        per_user: dict[str, int] = defaultdict(int)
        for t in sample:
            per_user[t.user_id] += 1
        return {
            "turns": n_turns, "entities": n_entities, "relationships": n_rel, "facts": n_facts,
            "users": len(per_user), "conversations": len({t.conversation_id for t in sample}),
            "channels": sorted({t.channel for t in sample}),
            "words_per_turn": {"mean": round(float(np.mean(words)), 1), "p50": int(np.percentile(words, 50)),
                               "p95": int(np.percentile(words, 95))},
            "vocabulary_first_20k_turns": len(vocab),
            "distinct_turn_texts": len({t.content for t in sample}),
            "turns_per_user": {"max": max(per_user.values()), "median": int(np.median(list(per_user.values()))),
                               "min": min(per_user.values())},
        }


class _World:
    """One user's world while generating: the entities introduced so far, by type."""

    def __init__(self, user_id: str, rnd: random.Random):
        self.user_id = user_id
        self.rnd = rnd
        self.by_type: dict[str, list[CorpusEntity]] = defaultdict(list)
        self.names: set[tuple[str, str]] = set()
        self.n_entities = 0
        self.n_facts = 0
        self.n_conversations = 0

    def pick(self, kind: str) -> CorpusEntity | None:
        """An entity of ``kind`` introduced before (recent ones more often), or None while there is none."""
        pool = self.by_type.get(kind) or []
        if not pool:
            return None
        if len(pool) > 30 and self.rnd.random() < 0.7:  # recent entities come up more often
            return self.rnd.choice(pool[-30:])
        return self.rnd.choice(pool)

    def new_name(self, kind: str) -> str | None:
        """A name of ``kind`` this user has not used yet (None after 50 tries)."""
        rnd, v = self.rnd, VOCABULARY
        for _ in range(50):
            if kind == "person":
                name = f"{rnd.choice(v.first_names)} {rnd.choice(v.last_names)}"
            elif kind == "city":
                name = _city(rnd.choice(v.cities))
            elif kind == "venue":
                name = f"The {rnd.choice(v.venue_words)} {rnd.choice(v.venue_nouns)}"
            elif kind == "org":
                name = f"{rnd.choice(v.org_words)}{rnd.choice(['', ' '])}{rnd.choice(v.org_kinds)}"
            else:
                name = rnd.choice(v.pet_names)
            if (kind, name.casefold()) not in self.names:
                self.names.add((kind, name.casefold()))
                return name
        return None


def _fill(template: str, slots: dict[str, str]) -> str:
    return template.format(**slots)


def _sround(rnd: random.Random, x: float) -> int:
    """Stochastic rounding: the expected value is exactly x."""
    low = math.floor(x)
    return low + (1 if rnd.random() < x - low else 0)


def generate_corpus(turns: int, *, users: int = 50, seed: int = 7,
                    checkpoints: Sequence[int] = ()) -> Corpus:
    """A deterministic synthetic chat corpus of exactly ``turns`` turns (see the module docstring).

    Conversations end exactly at each of ``checkpoints`` so that every benchmark size is a prefix of whole
    conversations. The same seed, users and checkpoints give the same corpus, byte for byte.
    """
    rnd = random.Random(seed)
    user_ids = [f"user{r:02d}" for r in range(users)]
    weights = [1.0 / (r + 1) ** USER_ZIPF for r in range(users)]
    speakers = {u: rnd.choice(VOCABULARY.first_names) for u in user_ids}
    worlds = {u: _World(u, random.Random(f"{seed}:{u}")) for u in user_ids}
    corpus = Corpus(seed=seed, users=user_ids, speakers=speakers)
    span = timedelta(days=730)
    start_of_time = corpus.end_time - span
    stops = sorted({c for c in checkpoints if 0 < c < turns} | {turns})
    while len(corpus.turns) < turns:
        remaining_to_stop = next(s for s in stops if s > len(corpus.turns)) - len(corpus.turns)
        length = min(rnd.randint(6, 36), remaining_to_stop)
        if 0 < remaining_to_stop - length < 6:  # never leave a stub shorter than a conversation before a stop
            length = remaining_to_stop
        user = rnd.choices(user_ids, weights)[0]
        channel = rnd.choices(CHANNELS, CHANNEL_WEIGHTS)[0]
        started = start_of_time + timedelta(seconds=rnd.uniform(0, span.total_seconds() - 86400))
        _conversation(corpus, worlds[user], channel, length, started, rnd)
        corpus.marks.append((len(corpus.turns), len(corpus.entities), len(corpus.relationships), len(corpus.facts)))
    return corpus


def _conversation(corpus: Corpus, world: _World, channel: str, length: int, started: datetime,
                  rnd: random.Random) -> None:
    world.n_conversations += 1
    user = world.user_id
    conversation_id = f"{user}-c{world.n_conversations:05d}"
    user_slots = list(range(0, length, 2))  # the user speaks first, then the assistant, alternating
    n_entities = min(_sround(rnd, 0.1 * length), len(user_slots))
    n_facts = _sround(rnd, 0.2 * length)
    intro_at = set(rnd.sample(user_slots, n_entities))
    others = [i for i in user_slots if i not in intro_at]
    rnd.shuffle(others)
    fact_at = set(others[: max(0, n_facts - n_entities)])
    moment = started
    slots: dict[str, str] = {}
    for index in range(length):
        moment += timedelta(seconds=rnd.randint(15, 240))
        turn_id = f"{conversation_id}-t{index:02d}"
        if index % 2 == 1:
            content = _reply(rnd, slots)
            role, speaker = "assistant", "assistant"
        else:
            role, speaker = "user", corpus.speakers[user]
            if index in intro_at:
                content, slots = _introduce(corpus, world, channel, conversation_id, turn_id, moment, rnd)
            elif index in fact_at or rnd.random() < 0.35:
                content, slots = _event(corpus, world, channel, conversation_id, turn_id, moment, rnd,
                                        with_fact=index in fact_at)
            else:
                content, slots = _chitchat(rnd, world)
        corpus.turns.append(CorpusTurn(turn_id, conversation_id, user, channel, index, moment, role, content, speaker))


def _common_slots(rnd: random.Random) -> dict[str, str]:
    v = VOCABULARY
    event, advice = rnd.choice(v.health)
    return {"food": rnd.choice(v.foods), "hobby": rnd.choice(v.hobbies), "past": rnd.choice(v.past),
            "future": rnd.choice(v.future), "good": rnd.choice(v.good), "bad": rnd.choice(v.bad),
            "feeling": rnd.choice(v.feelings), "work_item": rnd.choice(v.work_items),
            "weekday": rnd.choice(v.weekdays), "month": rnd.choice(v.months), "health_event": event,
            "advice": advice, "product": rnd.choice(v.products), "kind": rnd.choice(v.venue_kinds),
            "pet_kind": rnd.choice(v.pet_kinds), "nice": rnd.choice(v.nice),
            "hour": f"{rnd.randint(1, 12)}{rnd.choice(['am', 'pm', ':30pm', ':15am'])}",
            "city": _city(rnd.choice(v.cities))}


def _capitalize(text: str) -> str:
    return text[:1].upper() + text[1:]


def _introduce(corpus: Corpus, world: _World, channel: str, conversation_id: str, turn_id: str, moment: datetime,
               rnd: random.Random) -> tuple[str, dict[str, str]]:
    kinds = ["person"] * 5 + ["city"] * 2 + ["venue"] * 2 + ["org"] * 2
    if channel in ("family", "_global"):
        kinds.append("pet")
    kind = rnd.choice(kinds)
    if kind == "venue" and not world.by_type.get("city"):
        kind = "city"
    name = world.new_name(kind) or world.new_name("person")
    if name is None:  # every name taken: talk instead
        return _chitchat(rnd, world)
    if (kind, name.casefold()) not in world.names:
        kind = "person"
    slots = _common_slots(rnd)
    group = "work" if channel == "work" else "family" if channel == "family" else "other"
    slots.update(name=name, first=name.split()[0], relation=rnd.choice(VOCABULARY.relations[group]),
                 intro_detail=rnd.choice(VOCABULARY.intro_details))
    city = world.pick("city")
    slots["city"] = city.name if city else _city(rnd.choice(VOCABULARY.cities))
    spec = VOCABULARY.introductions[kind]
    world.n_entities += 1
    entity = CorpusEntity(id=f"{world.user_id}-e{world.n_entities:05d}", user_id=world.user_id, channel=channel,
                          name=name, type=_ENTITY_TYPE[kind], description=_fill(spec["describe"], slots),
                          aliases=[name.split()[0]] if kind == "person" else [])
    # ~60% of new entities are linked to an earlier one of a fitting type.
    if rnd.random() < 0.6:
        for target_kind in rnd.sample(["person", "org", "city"], 3):
            relation = _RELATION_FOR.get((kind, target_kind))
            target = world.pick(target_kind)
            if relation and target is not None:
                corpus.relationships.append((world.user_id, entity.id, target.id, relation))
                break
    world.by_type[kind].append(entity)
    corpus.entities.append(entity)
    content = _dress(rnd, _capitalize(_fill(rnd.choice(spec["say"]), slots)), slots)
    world.n_facts += 1
    corpus.facts.append(CorpusFact(
        id=f"{world.user_id}-f{world.n_facts:06d}", user_id=world.user_id, channel=channel,
        claim=_fill(spec["fact"], slots), source_turn_id=turn_id, conversation_id=conversation_id,
        entity_ids=[entity.id], created_at=moment, question=_fill(rnd.choice(spec["ask"]), slots)))
    slots["person_first"] = slots["first"] if kind == "person" else slots.get("first", "them")
    return content, slots


def _event(corpus: Corpus, world: _World, channel: str, conversation_id: str, turn_id: str, moment: datetime,
           rnd: random.Random, *, with_fact: bool) -> tuple[str, dict[str, str]]:
    options = list(CHANNEL_EVENTS[channel])
    rnd.shuffle(options)
    # The last three events need no entity, so the loop always ends with every need met.
    for kind in [*options, *rnd.sample(["preference", "goal", "busy"], 3)]:
        spec = VOCABULARY.events[kind]
        picked = {need: world.pick(need) for need in spec["needs"]}
        if all(picked.values()):
            break
    slots = _common_slots(rnd)
    about: list[str] = []
    for need, entity in picked.items():
        assert entity is not None
        slots[need] = entity.name
        about.append(entity.id)
        if need == "person":
            slots["person_first"] = entity.name.split()[0]
            slots["person_last"] = entity.name.split()[-1]
    content = _dress(rnd, _capitalize(_fill(rnd.choice(spec["say"]), slots)), slots)
    if with_fact:
        world.n_facts += 1
        corpus.facts.append(CorpusFact(
            id=f"{world.user_id}-f{world.n_facts:06d}", user_id=world.user_id, channel=channel,
            claim=_fill(spec["fact"], slots), source_turn_id=turn_id, conversation_id=conversation_id,
            entity_ids=about, created_at=moment, question=_fill(rnd.choice(spec["ask"]), slots)))
    return content, slots


def _chitchat(rnd: random.Random, world: _World) -> tuple[str, dict[str, str]]:
    slots = _common_slots(rnd)
    person = world.pick("person")
    if person is not None:
        slots["person_first"] = person.name.split()[0]
    if rnd.random() < 0.3:
        return rnd.choice(VOCABULARY.chitchat_fixed), slots
    template = rnd.choice([t for t in VOCABULARY.chitchat if _FIELDS[t] <= slots.keys()])
    return _fill(template, {**slots, "city": _city(slots["city"])}), slots


def _reply(rnd: random.Random, slots: dict[str, str]) -> str:
    """An assistant reply: a reaction, sometimes a remark, and a follow-up, from templates whose slots the user turn
    filled (or fresh details)."""
    available = {**_common_slots(rnd), **slots}
    remark = _fill(rnd.choice([t for t in VOCABULARY.remarks if _FIELDS[t] <= available.keys()]), available)
    remark = _capitalize(remark)
    follow = _fill(rnd.choice([t for t in VOCABULARY.follow_ups if _FIELDS[t] <= available.keys()]), available)
    return " ".join(p for p in (_fill(rnd.choice(VOCABULARY.reactions), available), remark, follow) if p)


def _dress(rnd: random.Random, sentence: str, slots: dict[str, str]) -> str:
    """A user turn as people type it: an optional opener and an optional second thought."""
    opener = rnd.choice(VOCABULARY.openers)
    first = sentence.split(" ", 1)[0]
    body = sentence[:1].lower() + sentence[1:] if opener and first in _LOWER_OK else sentence
    tail = _fill(rnd.choice(VOCABULARY.tails), {**_common_slots(rnd), **slots})
    return _capitalize(opener + body) + tail


def make_queries(corpus: Corpus, user_id: str, n_turns: int, count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` questions (with the channel they are asked in) about the user's facts in the first ``n_turns``."""
    _, _, _, n_facts = corpus.prefix(n_turns)
    facts = [f for f in corpus.facts[:n_facts] if f.user_id == user_id]
    if not facts:
        return []
    rnd = random.Random(f"{seed}:queries:{user_id}:{n_turns}")
    return [(f.question, f.channel) for f in (rnd.choice(facts) for _ in range(count))]

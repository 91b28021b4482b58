"""The offline extractor: rules instead of an LLM, answering in the same schema (so the rest of the pipeline is the
same). No model, nothing downloaded; English only.

What it finds, per sentence of each turn (the speaker from ``metadata["speaker"]``, else "the user"/"the assistant"):

* **speakers** as person entities;
* **self-statements**: "I live in / moved to X" (and "from Y": past), "I work at / for X", "a new job at X",
  "I'm a/an X", "I like / love / enjoy / prefer / hate X", "my X is Y", "my sister / friend / manager … Name" — except
  where a word among the five before it makes it wished, checked or supposed ("make sure", "not sure if", "when");
* **dated events**: a first-person sentence in the past tense with a time phrase ("yesterday", "last Saturday",
  "in May 2023", …) becomes a past fact with the date made absolute from the turn's time; the same with a future
  phrase ("next week", "tomorrow") and a plan ("going to", "will", "plan to") becomes a future fact; the claim stops
  where the sentence turns to a question or, after the time phrase, to the speaker's next request ("I want …");
* **names** (capitalized words after "in", "at", "to", "from", "with") as entities mentioned.

Nothing in the first person comes from the unnamed assistant (role ``assistant``, no speaker name): that is the agent
itself ("we'll break the tasks down", "I'd love to help"); the names it mentions still count.

Its recall is far below an LLM's (it reads no meaning, only these forms); docs/extraction.md measures it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from ..models import Turn
from ..retrieval.timeparse import TimeRange, parse_time_phrases
from .schema import RawBatch

__all__ = ["BatchTurn", "OfflineExtractor"]


@dataclass(frozen=True)
class BatchTurn:
    """A turn of a batch with its reference (``t1`` …) and its speaker's name."""

    ref: str
    turn: Turn
    speaker: str
    text: str


_NAME: Final = r"([A-Z][\w'’-]+(?: (?:de |da |do |van |von )?[A-Z][\w'’-]+){0,3})"
_SENTENCES: Final = re.compile(r"(?<=[.!?])\s+")
_FAMILY: Final = ("sister", "brother", "mom", "mother", "dad", "father", "friend", "manager", "boss", "wife",
                  "husband", "partner", "son", "daughter", "colleague", "coworker", "cousin", "aunt", "uncle",
                  "grandma", "grandmother", "grandpa", "grandfather", "girlfriend", "boyfriend", "roommate",
                  "neighbor", "neighbour", "mentor", "teacher")
_RULES: Final = [
    (re.compile(rf"\bI (?:just |recently |finally )?moved (?:from {_NAME} )?to {_NAME}"), "moved"),
    (re.compile(rf"\bI(?: now|'m| am)? (?:currently )?(?:live|living) in {_NAME}"), "lives"),
    (re.compile(rf"\bI(?:'m| am)? (?:now |currently )?(?:work|working) (?:at|for) {_NAME}"), "works"),
    (re.compile(rf"\b(?:new |a )?job at {_NAME}"), "works"),
    (re.compile(r"\bI(?:'m| am) (an? [a-z][a-z -]{2,40}?)(?=[,.!?;]| and | but | who | so |$)"), "is"),
    (re.compile(r"\bI (?:really )?(like|love|enjoy|prefer|hate|dislike) ([a-zA-Z][\w' -]{2,60}?)(?=[,.!?;]| and | but"
                r" | because | so |$)"), "likes"),
    (re.compile(r"\b[Mm]y (favou?rite [a-z]+|[a-z]+ name|[a-z]+) is ([\w' -]{2,80}?)(?=[,.!?;]| but |$)"),
     "my_is"),
    (re.compile(rf"\b[Mm]y ({'|'.join(_FAMILY)}),? {_NAME}"), "family"),
]
#: What "I live in X" / "I work at X" make of X: its entity type, the claim's verb and the relationship.
_HOLDS: Final = {"lives": ("place", "lives in", "LOCATED_IN"), "works": ("organization", "works at", "WORKS_FOR")}
_MENTION: Final = re.compile(rf"\b(?:in|at|to|from|with|visit(?:ed|ing)?|called) {_NAME}")
_PAST_VERB: Final = re.compile(
    r"\b(?:I|we|We)\s+(?:just\s+|finally\s+|also\s+)?(?:went|ran|visited|had|got|did|made|took|started|finished|"
    r"attended|joined|bought|met|saw|watched|tried|moved|won|lost|gave|hiked|painted|wrote|read|played|celebrated|"
    r"adopted|signed|graduated|traveled|travelled|camped|baked|cooked|learned|found|received|hosted|organized|"
    r"organised|completed|launched|released|passed|failed|returned|left|arrived|volunteered|quit)\b")
_PLAN: Final = re.compile(r"\b(?:I|we|We)(?:'m| am|'re| are)?(?: going to| gonna| will| plan to| planning to|'ll)\b")
#: Where a dated event's sentence turns to something else: a question to the other speaker ("I met Robert on April 25,
#: can you suggest …"), or, after its time phrase, the speaker's next request ("… on April 10, and now I want to learn
#: more about …"). The event's claim stops there, so that it stands alone; how the speaker felt about it stays ("…,
#: I was mesmerized by the castles"), and so does what comes before the time phrase.
_BOUNDARY: Final = r"\s*(?:[,;:]|\s[-–—]|\band\b|\bbut\b|\bso\b)\s+(?:(?:and|but|so|now)\s+)*"
_QUESTION_TAIL: Final = re.compile(_BOUNDARY + r"(?:(?:can|could|would|will|should|do|does|did|is|are)\s+"
                                   r"(?:you|I|we|there)\b|(?:what|how|why)\b)")
_FIRST_PERSON_TAIL: Final = re.compile(
    _BOUNDARY + r"I(?:'m| am|'d| would)?\s+(?:want|need|like|wonder|wondering|was wondering|trying|thinking|"
    r"looking|not sure|hoping|planning to ask)\b")
_CORRECTION: Final = re.compile(r"^\s*(?:actually\b|no,? I meant\b|correction:|I was wrong\b|sorry,? I meant\b)",
                                re.IGNORECASE)
#: An object with one of these words points at something the sentence does not name ("I love it", "a fan of this
#: genre", "I love the color"): the fact would not stand alone, so it is not extracted.
_UNRESOLVED: Final = re.compile(r"\b(?:it|its|them|this|that|these|those|there|too|one)\b|^the\b|"
                                r"\b(?:of|in|on|at|to|for|with|about)$", re.IGNORECASE)
#: A word among the few before a self-statement that makes it something wished, checked or supposed, not said to
#: hold ("I want to make sure my code is secure", "not sure if my approach is correct", "if I live in Porto"): in
#: user–assistant chats most "my X is Y" forms are such clauses. Moves and family ("when I moved to …", "if my sister
#: Lena …") still hold under them; a hedge more than five words back, or behind a comma, belongs to another clause
#: ("explain why it works when x is negative, I prefer step-by-step explanations").
_HEDGE: Final = re.compile(r"\b(?:if|whether|when|whenever|unless|sure|ensure|ensuring|verify|verifying|check|checking|"
                           r"confirm|confirming|wonder|wondering|hope|hoping|wish)\b[^\w,;:]+(?:\w+[^\w,;:]+){0,4}$",
                           re.IGNORECASE)
_HEDGED_KINDS: Final = frozenset({"is", "likes", "my_is", "lives", "works"})
_STOP_NAMES: Final = {"I", "The", "A", "An", "My", "We", "It", "This", "That", "Hey", "Hi", "Thanks", "Yes", "No",
                      "Wow", "Oh", "So", "And", "But", "Ok", "Okay", "Sure", "Well"}


class OfflineExtractor:
    """Rule-based extraction (see the module docstring); :meth:`extract` answers a batch like the LLM does."""

    model = "offline:rules"

    def extract(self, batch: Sequence[BatchTurn]) -> RawBatch:
        """Entities, facts and relationships found in the batch's turns (plain dicts, as from the wire)."""
        found = _Found()
        for item in batch:
            if item.turn.metadata.get("speaker"):
                found.entity(item.speaker, "person")
            for sentence in _SENTENCES.split(item.text):
                self._sentence(found, item, sentence.strip())
        return RawBatch(entities=list(found.entities.values()), facts=found.facts, relationships=found.relationships)

    def _sentence(self, found: _Found, item: BatchTurn, sentence: str) -> None:
        if not sentence:
            return
        who = item.speaker
        for m in _MENTION.finditer(sentence):
            name = _clean_name(m[1])
            if name and name != who:
                found.entity(name, "concept")
        if _is_the_agent(item):
            return
        correction = bool(_CORRECTION.match(sentence))
        for pattern, kind in _RULES:
            for m in pattern.finditer(sentence):
                self._statement(found, item, kind, m, correction)
        self._dated(found, item, sentence, correction)

    def _statement(self, found: _Found, item: BatchTurn, kind: str, m: re.Match[str], correction: bool) -> None:
        who, ref = item.speaker, item.ref
        if kind in ("is", "likes", "my_is") and _UNRESOLVED.search(m.group(m.lastindex or 0).strip()):
            return
        if kind in _HEDGED_KINDS and _HEDGE.search(m.string[max(0, m.start() - 80):m.start()]):
            return
        if kind in _HOLDS or kind == "moved":
            name = _clean_name(m[2] if kind == "moved" else m[1])
            if not name:
                return
            self._holds(found, item, "lives" if kind == "moved" else kind, name, correction)
            origin = _clean_name(m[1]) if kind == "moved" else ""
            if origin:
                found.entity(origin, "place")
                found.fact(f"{who} used to live in {origin}.", ref, [who, origin], "past")
        elif kind == "is":
            found.fact(f"{who} is {m[1].strip()}.", ref, [who], "current", correction=correction)
        elif kind == "likes":
            verb = {"like": "likes", "love": "loves", "enjoy": "enjoys", "prefer": "prefers", "hate": "hates",
                    "dislike": "dislikes"}[m[1]]
            found.fact(f"{who} {verb} {m[2].strip()}.", ref, [who], "current", correction=correction)
        elif kind == "my_is":
            found.fact(f"{who}'s {m[1]} is {m[2].strip()}.", ref, [who], "current", correction=correction)
        elif kind == "family":
            name = _clean_name(m[2])
            if name:
                found.entity(name, "person", f"{who}'s {m[1]}")
                found.fact(f"{name} is {who}'s {m[1]}.", ref, [who, name], "current")
                found.relate(who, "KNOWS", name)

    @staticmethod
    def _holds(found: _Found, item: BatchTurn, kind: str, name: str, correction: bool) -> None:
        """The speaker lives in / works at ``name``: the entity, the current fact and the relationship."""
        type_, verb, relation = _HOLDS[kind]
        found.entity(name, type_)
        found.fact(f"{item.speaker} {verb} {name}.", item.ref, [item.speaker, name], "current", correction=correction)
        found.relate(item.speaker, relation, name)

    def _dated(self, found: _Found, item: BatchTurn, sentence: str, correction: bool) -> None:
        past, plan = _PAST_VERB.search(sentence), _PLAN.search(sentence)
        if not (past or plan):
            return
        ranges = parse_time_phrases(sentence, item.turn.timestamp)
        if not ranges:
            return
        when = ranges[0]
        middle = when.start + (when.end - when.start) / 2
        future = bool(plan) and middle > item.turn.timestamp
        if not future and (not past or when.start > item.turn.timestamp):
            return
        start = plan.start() if future and plan else past.start()  # type: ignore[union-attr]
        body = _PLAN.sub("plans to", sentence[start:], count=1) if future else sentence[start:]
        body = re.sub(r"^(?:I|we|We)\b", "", body).strip()
        body = _event_only(body, when.phrase)
        dated = f"{when.phrase} ({_absolute(when, item.turn.timestamp)})"
        body = body.replace(when.phrase, dated, 1) if when.phrase in body else f"{body.rstrip(' .!?')}, {dated}"
        body = re.sub(r"\bmy\b", f"{item.speaker}'s", body.rstrip(" .!?"))
        subject = item.speaker if sentence[start] == "I" else f"{item.speaker} and others"
        claim = f"{subject} {body}."
        if len(claim) > 400:
            return
        found.fact(claim, item.ref, [item.speaker], "future" if future else "past", correction=correction)


def _event_only(body: str, phrase: str) -> str:
    """A dated event's words up to where its sentence turns to a question, or to the speaker's next request after
    the time ``phrase`` (see :data:`_QUESTION_TAIL`)."""
    at = body.find(phrase)
    after = at + len(phrase) if at >= 0 else len(body)  # no phrase in the words: no request tail to cut
    cuts = [m.start() for m in (_QUESTION_TAIL.search(body, after if at >= 0 else 0),
                                _FIRST_PERSON_TAIL.search(body, after)) if m]
    return body[:min(cuts)] if cuts else body


def _absolute(when: TimeRange, said: datetime) -> str:
    """The date a time phrase names, made absolute from when it was said: "on 2023-05-07" for a day, "in May 2023"
    for a month, "in 2022" for a year, "around <date>" for looser phrases ("last week", "three weeks ago")."""
    phrase, day, length = when.phrase.casefold(), timedelta(days=1), when.end - when.start
    if "day before yesterday" in phrase:
        return f"on {(said - 2 * day).date().isoformat()}"
    if "yesterday" in phrase:
        return f"on {(said - day).date().isoformat()}"
    if length == day:  # today, tonight, last Saturday, the day before yesterday
        return f"on {when.start.date().isoformat()}"
    if length == 3 * day:  # a named date, read give or take a day
        return f"on {(when.start + day).date().isoformat()}"
    if when.start.day == 1 and when.start.hour == 0 and 28 <= length.days <= 38:  # a month (a named one + a week)
        return f"in {when.start:%B %Y}"
    if when.start.month == 1 and when.start.day == 1 and length.days in (365, 366):
        return f"in {when.start.year}"
    return f"around {(when.start + (length - day) / 2).date().isoformat()}"


def _is_the_agent(item: BatchTurn) -> bool:
    """Whether the turn is the unnamed assistant's: the agent itself, whose first person is the conversation's moves
    ("we'll break the tasks down", "I'd love to help", "let's find the derivative"), not memory about the user or
    the world; a named assistant (``metadata["speaker"]``, a persona) speaks like anyone else."""
    return item.turn.role == "assistant" and not item.turn.metadata.get("speaker")


def _clean_name(name: str | None) -> str:
    if not name:
        return ""
    words = name.split()
    while words and words[0] in _STOP_NAMES:
        words.pop(0)
    if words:  # "my mom Karen's birthday": the name is Karen
        words[-1] = re.sub(r"['’]s$", "", words[-1])
    return " ".join(w for w in words if w)


class _Found:
    """What a batch yielded so far, as wire-format dicts (entities by name)."""

    def __init__(self) -> None:
        self.entities: dict[str, dict[str, Any]] = {}
        self.facts: list[dict[str, Any]] = []
        self.relationships: list[dict[str, Any]] = []

    def entity(self, name: str, type_: str, description: str = "") -> None:
        known = self.entities.get(name.casefold())
        if known is None:
            self.entities[name.casefold()] = {"name": name, "type": type_, "description": description}
        elif known["type"] == "concept" and type_ != "concept":
            known["type"] = type_

    def fact(self, claim: str, ref: str, entities: list[str], temporal: str, *, correction: bool = False) -> None:
        if entities:  # the first entity is the speaker: "my" in what they said is theirs
            claim = re.sub(r"\bmy\b", f"{entities[0]}'s", claim)
        item: dict[str, Any] = {"claim": claim, "certainty": "explicit", "temporal": temporal, "entities": entities,
                                "source_turns": [ref]}
        if correction:
            item["corrects"] = "an earlier statement"
        self.facts.append(item)

    def relate(self, source: str, type_: str, target: str) -> None:
        self.relationships.append({"source": source, "type": type_, "target": target})

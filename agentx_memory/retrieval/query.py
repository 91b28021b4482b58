"""Query understanding without an LLM: rewrite a question as a statement, find the names it mentions, and read its
time phrases (self-query). All rule-based and fast; an LLM (when configured) can do better, see ``recall.py``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..stopwords import STOP_WORDS
from .timeparse import TimeRange, parse_time_phrases

__all__ = ["ABOUT_PATTERNS", "QueryAnalysis", "analyze", "asks_about_now", "asks_for_help", "mentioned_names",
           "rewrite_as_statement", "unsaid_names"]

_QUESTION_HEAD = re.compile(
    r"^\s*(?:what|which|who|whom|whose|when|where|why|how(?: many| much| long| often| old)?)\b"
    r"(?:\s+(?:kind|type|sort)\s+of)?\s*"
    r"\b(?:do|does|did|is|are|was|were|has|have|had|will|would|can|could|should|might)\b\s*",
    re.IGNORECASE,
)
_AUX_HEAD = re.compile(r"^\s*(?:do|does|did|is|are|was|were|has|have|had|will|would|can|could|should)\b\s*",
                       re.IGNORECASE)
_WH_ONLY = re.compile(r"^\s*(?:what|which|who|whom|whose|when|where|why|how)\b\s*", re.IGNORECASE)

#: "Tell me about X" style questions: the entity-centric technique resolves X.
ABOUT_PATTERNS = re.compile(
    r"(?:tell me (?:everything |more |all )?about|what do (?:you|we|i) know about|who is|who was|what is|"
    r"what about|information (?:on|about)|remind me (?:about|of)|details (?:on|about))\s+(.+?)[?.!]*$",
    re.IGNORECASE,
)
_NAME = re.compile(r"\b([A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*)")
_NOT_NAMES = {
    "I", "I'm", "I've", "I'd", "I'll", "What", "When", "Where", "Who", "Whom", "Whose", "Why", "How", "Which", "Did",
    "Do", "Does", "Is", "Are", "Was", "Were", "Has", "Have", "Had", "Will", "Would", "Can", "Could", "Should", "Tell",
    "The", "A", "An", "In", "On", "At", "Of", "And", "Or", "But", "If", "Me", "My", "Our", "Your", "Yes", "No",
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "January", "February", "March",
    "April", "May", "June", "July", "August", "September", "October", "November", "December", "Last", "Next", "This",
}


#: Words by which a question names its asker (the user) or the one it is asked of (the assistant).
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself)\b", re.IGNORECASE)
_SECOND_PERSON = re.compile(r"\b(?:you|you're|you've|you'd|you'll|your|yours|yourself)\b", re.IGNORECASE)


def question_speaker(question: str) -> str | None:
    """The role the question is about when its pronouns name one side only: ``"user"`` for "I"/"my" ("What did I
    say about the PDF error?"), ``"assistant"`` for "you"/"your" ("What did you recommend?"), else None (both, or
    neither: "What did you tell me…", "When did Melanie…").

    >>> question_speaker("Have I completed any geometry problems?"), question_speaker("What did you suggest to me?")
    ('user', None)
    """
    first, second = bool(_FIRST_PERSON.search(question)), bool(_SECOND_PERSON.search(question))
    if first != second:
        return "user" if first else "assistant"
    return None


#: Words by which a question asks about how things were, not how they are ("Where did I live before?").
_ABOUT_THE_PAST = re.compile(
    r"\b(?:before|previously|formerly|originally|earlier|former|used to|use to|back then|at first|in the past|"
    r"at the time)\b", re.IGNORECASE)
#: A question's auxiliary verbs: the first one gives its tense ("Where does Sam live?" asks about now, "What did we
#: do?" about an event).
_AUXILIARY = re.compile(r"\b(?:do|does|did|is|are|am|was|were|has|have|had|will|would|can|could|should|shall|may|"
                        r"might|must)\b|['’]s\b", re.IGNORECASE)
_PRESENT = frozenset({"do", "does", "is", "are", "am", "has", "have", "'s", "’s"})
_NOW = re.compile(r"\b(?:now|currently|current|nowadays|these days|at the moment|at present|still|any ?more|"
                  r"no longer|latest|today)\b", re.IGNORECASE)


def asks_about_now(question: str) -> bool:
    """Whether the question asks how things are now (and so wants the newest of several statements): a word for now
    ("currently", "still", "latest" ...), or a present-tense question ("Where does Sam live?") that does not ask
    about the past by its words ("before", "used to", "previously" ...). "What did I ..." asks about an event.

    >>> asks_about_now("Where does Sam live now?"), asks_about_now("Where did Sam live before?")
    (True, False)
    >>> asks_about_now("When did Caroline go to the support group?"), asks_about_now("Is Maya still in Porto?")
    (False, True)
    """
    if _ABOUT_THE_PAST.search(question):
        return False
    first = _AUXILIARY.search(question)
    return bool(_NOW.search(question)) or (first is not None and first.group(0).casefold() in _PRESENT)


#: How a question asks the assistant to do or advise something now ("How should I…", "Can you show me…", "What
#: would you suggest…", "Help me…"); an advice word ("recommend", "tips", "approach") counts only beside "I"/"we"/"you"
#: (so "What advice does Caroline give?" asks about a conversation, not for help).
_REQUEST = re.compile(
    r"\b(?:can|could|would|will) you\b|\b(?:how|what) would you\b|\b(?:help|show|give|walk|teach) me\b"
    r"|\bhow (?:can|should|could|would|do|might) (?:I|we)\b|\b(?:what|which)\b[^?]{0,60}\bshould (?:I|we)\b"
    r"|^\s*(?:please\s+)?(?:help|show|give|explain|suggest|recommend|write|walk|describe)\b",
    re.IGNORECASE)
_ADVICE = re.compile(r"\b(?:suggest|suggestions?|recommend|recommendations?|advice|advise|tips?|strateg(?:y|ies)|"
                     r"approach(?:es)?|best way|ways to)\b", re.IGNORECASE)
_PLURAL_FIRST_PERSON = re.compile(r"\b(?:we|our)\b", re.IGNORECASE)
_PAST_AUXILIARY = frozenset({"did", "was", "were", "had"})
#: How a request asks to recount the conversation itself ("Can you give me a summary of what we covered?", "list the
#: order in which I brought up…"): that asks about what was said, not for help now.
_RECOUNT = re.compile(
    r"\b(?:summar(?:y|ies|ise|ize)|recap|in (?:the )?order|brought up|we (?:covered|discussed|talked about|went over)"
    r"|I (?:mentioned|said|told you)|(?:our|these|previous) (?:conversations?|discussions?|chats?|sessions?))\b",
    re.IGNORECASE)


def asks_for_help(question: str) -> bool:
    """Whether the question asks the assistant for help or advice now, where the user's standing instructions and
    preferences apply ("How should I configure the Docker Compose file?"), rather than about what was said or done
    ("How many days passed between…", "Have I ever used Alpine?"). A question whose first auxiliary is in the past
    tense ("How did you recommend…"), or that asks to recount the conversation ("Can you summarize what we
    covered?"), asks about the past.

    >>> asks_for_help("How should I handle token expiry?"), asks_for_help("Have I ever deployed on Fargate?")
    (True, False)
    >>> asks_for_help("What approaches would you suggest?"), asks_for_help("What advice does Caroline give?")
    (True, False)
    """
    first = _AUXILIARY.search(question)
    if (first is not None and first.group(0).casefold() in _PAST_AUXILIARY) or _RECOUNT.search(question):
        return False
    if _REQUEST.search(question):
        return True
    return bool(_ADVICE.search(question)) and any(
        p.search(question) for p in (_FIRST_PERSON, _SECOND_PERSON, _PLURAL_FIRST_PERSON))


@dataclass
class QueryAnalysis:
    """What the rule-based analysis read from a question."""

    text: str
    statement: str
    names: list[str] = field(default_factory=list)
    about: str | None = None
    time_ranges: list[TimeRange] = field(default_factory=list)
    speaker_role: str | None = None  # the role its pronouns name (question_speaker)
    about_now: bool = False  # asks how things are now (asks_about_now)
    for_help: bool = False  # asks the assistant for help or advice now (asks_for_help)


def rewrite_as_statement(question: str) -> str:
    """Drop the question scaffolding ("what did", "when was", a trailing "?") so the rest reads like a statement.

    ``"When did Caroline go to the support group?"`` → ``"Caroline go to the support group"``.
    """
    text = question.strip()
    stripped = _QUESTION_HEAD.sub("", text, count=1)
    if stripped == text:
        stripped = _AUX_HEAD.sub("", text, count=1)
    if stripped == text:
        stripped = _WH_ONLY.sub("", text, count=1)
    stripped = stripped.rstrip(" ?!.")
    return stripped or text.rstrip(" ?")


def _starts_sentence(text: str, start: int) -> bool:
    """Whether the word at ``start`` begins the text or a sentence of it (only blanks since a '.', '!' or '?')."""
    while start > 0 and text[start - 1].isspace():
        start -= 1
    return start == 0 or text[start - 1] in ".!?"


def mentioned_names(text: str) -> list[str]:
    """Capitalized names in the text (not question words, pronouns or month/day names, nor a common word that is
    capitalized only because it starts a sentence: "Any tips from Lena?" names Lena)."""
    names: list[str] = []
    for match in _NAME.finditer(text):
        words = match.group(1).split()
        if len(words[0]) > 1 and words[0].casefold() in STOP_WORDS and _starts_sentence(text, match.start()):
            words = words[1:]
        words = [w for w in words if w.strip("'’") not in _NOT_NAMES]
        if not words:
            continue
        name = " ".join(words)
        name = re.sub(r"['’]s$", "", name)
        if name and name not in names:
            names.append(name)
    return names


def unsaid_names(question: str, entities: Sequence[Mapping[str, Any]]) -> list[str]:
    """The names and aliases of ``entities`` (rows with ``name`` and ``aliases``) that the question does not say
    (compared casefolded, as whole words), each once, in the entities' order: what a question that calls Maya Costa
    "Maya" should also match ("Costa"), and "Robert" for a question that calls him "Bob".

    >>> unsaid_names("Tell me about Maya", [{"name": "Maya Costa", "aliases": ["Maya"]}])
    ['Maya Costa']
    """
    said = question.casefold()
    out: list[str] = []
    for entity in entities:
        for name in [entity.get("name"), *(entity.get("aliases") or [])]:
            text = str(name or "").strip()
            key = text.casefold()
            if not key or any(key == o.casefold() for o in out):
                continue
            if not re.search(r"(?<!\w)" + re.escape(key) + r"(?!\w)", said):
                out.append(text)
    return out


def analyze(question: str, reference_time: datetime | None = None) -> QueryAnalysis:
    """Rewrite, names, the "about" subject, time ranges and the role its pronouns name of a question."""
    about_match = ABOUT_PATTERNS.search(question.strip())
    return QueryAnalysis(
        text=question,
        statement=rewrite_as_statement(question),
        names=mentioned_names(question),
        about=about_match.group(1).strip() if about_match else None,
        time_ranges=parse_time_phrases(question, reference_time),
        speaker_role=question_speaker(question),
        about_now=asks_about_now(question),
        for_help=asks_for_help(question),
    )

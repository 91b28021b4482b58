"""The corpus vocabulary: word lists and sentence templates, read from the package data file ``vocabulary.json``.

The file is data, not code: it ships in the wheel beside this module and is read with :mod:`importlib.resources`.
Every key of the file is a field of :class:`Vocabulary` (``about`` excepted), so a missing or unknown key fails
loudly instead of silently changing the corpus.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["DATA_FILE", "Vocabulary", "load_vocabulary", "parse_vocabulary"]

#: The data file's name inside this package.
DATA_FILE = "vocabulary.json"


@dataclass(frozen=True)
class Vocabulary:
    """Word lists (people, places, venues, companies, pets, hobbies, foods, time phrases …) and the templates of
    events, introductions, small talk and assistant replies; slots in templates are ``str.format`` fields."""

    first_names: list[str]
    last_names: list[str]
    cities: list[str]
    venue_words: list[str]
    venue_nouns: list[str]
    venue_kinds: list[str]
    org_words: list[str]
    org_kinds: list[str]
    products: list[str]
    hobbies: list[str]
    foods: list[str]
    past: list[str]
    future: list[str]
    good: list[str]
    bad: list[str]
    feelings: list[str]
    work_items: list[str]
    weekdays: list[str]
    months: list[str]
    #: (health event, the doctor's advice) pairs.
    health: list[list[str]]
    pet_kinds: list[str]
    pet_names: list[str]
    #: Relations of a new person to the user, by channel group (work, family, other).
    relations: dict[str, list[str]]
    nice: list[str]
    intro_details: list[str]
    #: Per event kind: the entity types it needs, user-turn templates (say), the fact it yields, the questions (ask).
    events: dict[str, dict[str, Any]]
    #: Per entity kind: how a new one is introduced (say), its fact, questions and description.
    introductions: dict[str, dict[str, Any]]
    chitchat_fixed: list[str]
    chitchat: list[str]
    reactions: list[str]
    follow_ups: list[str]
    remarks: list[str]
    openers: list[str]
    tails: list[str]
    #: First words of templates that may be lowercased after an opener ("So, my sister …").
    lower_ok: list[str]


@cache
def load_vocabulary() -> Vocabulary:
    """The vocabulary of the package data file (read once per process)."""
    data_file = resources.files(__name__.rpartition(".")[0]).joinpath(DATA_FILE)
    return parse_vocabulary(data_file.read_text(encoding="utf-8"))


def parse_vocabulary(text: str) -> Vocabulary:
    """A vocabulary from the JSON text of a data file; ``ValueError`` when a key is missing or unknown."""
    data = json.loads(text)
    data.pop("about", None)
    expected = {f.name for f in fields(Vocabulary)}
    if set(data) != expected:
        raise ValueError(f"{DATA_FILE}: keys missing {sorted(expected - set(data))}, "
                         f"unknown {sorted(set(data) - expected)}")
    return Vocabulary(**data)

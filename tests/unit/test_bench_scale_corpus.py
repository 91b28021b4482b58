"""The scale benchmark's corpus: deterministic for a seed, sizes as prefixes, vocabulary read from its data file.

No servers: the generator is pure Python. The pinned fingerprint makes a change of the corpus (a vocabulary edit, a
generator change) visible: results of runs on different corpora are not comparable.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from importlib import resources

import pytest

from agentx_memory.bench.scale import Corpus, generate_corpus, make_queries
from agentx_memory.bench.scale.corpus import VOCABULARY
from agentx_memory.bench.scale.vocabulary import DATA_FILE, Vocabulary, load_vocabulary, parse_vocabulary

#: sha256 of generate_corpus(600, users=20, seed=7, checkpoints=[300]) as serialized by _fingerprint (the corpus the
#: scale benchmark generated before its vocabulary moved to vocabulary.json: the same corpus).
PINNED = "5f26af891affdf6418c94b97131f1873ce0b73398970c0fac9ede855d7d948a9"


def _fingerprint(corpus: Corpus) -> str:
    payload = {"turns": [dataclasses.asdict(t) for t in corpus.turns],
               "entities": [dataclasses.asdict(e) for e in corpus.entities],
               "relationships": corpus.relationships, "facts": [dataclasses.asdict(f) for f in corpus.facts],
               "marks": corpus.marks, "speakers": corpus.speakers}
    return hashlib.sha256(json.dumps(payload, default=str, sort_keys=True).encode()).hexdigest()


def test_the_same_seed_gives_the_same_corpus():
    a = generate_corpus(800, users=10, seed=3, checkpoints=[200])
    b = generate_corpus(800, users=10, seed=3, checkpoints=[200])
    assert _fingerprint(a) == _fingerprint(b)
    assert make_queries(a, a.users[0], 800, 25, 3) == make_queries(b, b.users[0], 800, 25, 3)
    assert _fingerprint(generate_corpus(800, users=10, seed=4, checkpoints=[200])) != _fingerprint(a)


def test_the_corpus_is_pinned():
    fingerprint = _fingerprint(generate_corpus(600, users=20, seed=7, checkpoints=[300]))
    assert fingerprint == PINNED, (
        "the scale corpus changed (vocabulary.json or the generator): if that is intended, pin the new fingerprint "
        f"{fingerprint} and say in the results that runs before and after used different corpora")


def test_sizes_are_prefixes_of_whole_conversations():
    corpus = generate_corpus(900, users=15, seed=7, checkpoints=[300, 600])
    assert len(corpus.turns) == 900
    for size in (300, 600, 900):
        turns, entities, relationships, facts = corpus.prefix(size)
        assert turns == size
        assert all(t.index == 0 for t in corpus.turns[size:size + 1])  # the next turn opens a conversation
        assert {f.source_turn_id for f in corpus.facts[:facts]} <= {t.id for t in corpus.turns[:turns]}
        assert all(e.id.split("-e")[0] in corpus.users for e in corpus.entities[:entities])
        assert len(corpus.relationships[:relationships]) == relationships
    stats = corpus.stats(600)
    assert stats["turns"] == 600 and stats["users"] <= 15


def test_the_vocabulary_is_the_package_data_file():
    data_file = resources.files("agentx_memory.bench.scale").joinpath(DATA_FILE)
    assert data_file.is_file()
    raw = json.loads(data_file.read_text(encoding="utf-8"))
    vocabulary = load_vocabulary()
    assert vocabulary is VOCABULARY  # what the generator draws from
    assert vocabulary.first_names == raw["first_names"] and vocabulary.events == raw["events"]
    assert {f.name for f in dataclasses.fields(Vocabulary)} == set(raw) - {"about"}
    for field in dataclasses.fields(Vocabulary):
        assert getattr(vocabulary, field.name), f"{field.name} is empty"
    assert all(len(pair) == 2 for pair in vocabulary.health)


def test_a_data_file_with_a_missing_or_unknown_key_is_refused():
    raw = json.loads(resources.files("agentx_memory.bench.scale").joinpath(DATA_FILE).read_text(encoding="utf-8"))
    del raw["foods"]
    raw["drinks"] = ["tea"]
    with pytest.raises(ValueError, match=r"missing \['foods'\].*unknown \['drinks'\]"):
        parse_vocabulary(json.dumps(raw))


def test_the_templates_fill_from_the_corpus():
    corpus = generate_corpus(400, users=5, seed=11)
    assert not any("{" in t.content or "}" in t.content for t in corpus.turns)
    assert not any("{" in f.claim or "{" in f.question for f in corpus.facts)
    assert not any("_" in t.content for t in corpus.turns if "_global" not in t.content)  # city tokens restored

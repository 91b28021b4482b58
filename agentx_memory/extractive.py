"""Extractive summaries: the sentences of a text whose words recur most in it, kept in their order.

Used where no LLM is configured: the context window's ``summarize`` prune and conversation summaries. A sentence
weighs the sum, over its distinct words, of how many sentences use the word, divided by the square root of its
length (long sentences do not win by length alone); sentences are taken best first while the summary fits the
token budget, then shown in their original order.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Final

from .tokens import count_tokens

__all__ = ["sentences", "top_sentences"]

_SENTENCE: Final = re.compile(r"(?<=[.!?])\s+")
_WORD: Final = re.compile(r"\w+")


def sentences(texts: Sequence[str]) -> list[str]:
    """The sentences of ``texts``, in order (split after ``.``, ``!`` or ``?``)."""
    return [s for text in texts for s in _SENTENCE.split(text.strip()) if s]


def top_sentences(texts: Sequence[str], budget: int) -> str:
    """The most representative sentences of ``texts`` within ``budget`` tokens, in their order (module docstring)."""
    found = sentences(texts)
    words = Counter(w for s in found for w in set(_WORD.findall(s.casefold())))

    def weight(sentence: str) -> float:
        tokens = _WORD.findall(sentence.casefold())
        return sum(words[w] for w in set(tokens)) / (1 + len(tokens)) ** 0.5

    chosen: set[int] = set()
    for i in sorted(range(len(found)), key=lambda i: -weight(found[i])):
        if count_tokens(" ".join(found[j] for j in sorted(chosen | {i}))) <= budget:
            chosen.add(i)
    return " ".join(found[j] for j in sorted(chosen))

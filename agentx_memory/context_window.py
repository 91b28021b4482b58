"""The context window (spec 004's short-term memory): the messages of the current exchange, within a token budget.

A :class:`ContextWindow` holds messages in order and counts their tokens exactly as ``to_prompt`` does
(:func:`agentx_memory.tokens.count_tokens`, tiktoken's ``cl100k_base``); a message costs the tokens of
``"{role}: {content}"``. When a message takes the window past ``max_tokens``, the window prunes itself with its
strategy:

* ``fifo`` drops the oldest messages until it fits;
* ``summarize`` replaces every message but the newest ``keep_recent`` with one ``system`` message summarizing them —
  written by the LLM when one is configured (``llm.query_model``), extractive otherwise (the sentences whose words
  recur most in what is summarized, in their order, within a quarter of the budget) — then drops the oldest if it
  still does not fit;
* ``semantic`` keeps the newest ``keep_recent`` messages and, of the older ones, those most similar to the current
  goal (cosine of the embedder's vectors), in their order, as many as fit; without a goal it is ``fifo``.

The defaults are seed 004's: a window of 4,096 tokens, and ``summarize`` keeps the newest 10 messages
(``keep_recent``) beside its summary; ``clear()`` drops every message.

A single message larger than the whole window is refused (:class:`~agentx_memory.errors.ValidationError`): no
strategy could keep it. The window lives in the process (it is the prompt being assembled, not a store); working
memory and the conversation log are where a conversation is kept.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Final

import numpy as np
from pydantic import BaseModel

from .errors import ValidationError
from .extractive import top_sentences
from .providers.embeddings import Embedder
from .providers.llm import LLM
from .tokens import count_tokens
from .validation import check_int, check_text

__all__ = ["ContextMessage", "ContextWindow", "PruneStrategy"]

SUMMARY_PROMPT: Final = ("Summarize these earlier messages of a conversation in a few sentences. Keep names, numbers, "
                         "decisions and open questions; write nothing else.")


class PruneStrategy(enum.StrEnum):
    """How a full window makes room (see the module docstring)."""

    FIFO = "fifo"
    SUMMARIZE = "summarize"
    SEMANTIC = "semantic"


class ContextMessage(BaseModel):
    """One message of the window and its token cost; ``summary`` marks the message a ``summarize`` prune wrote."""

    role: str
    content: str
    tokens: int
    summary: bool = False


def _cost(role: str, content: str) -> int:
    return count_tokens(f"{role}: {content}")


class ContextWindow:
    """Messages within ``max_tokens``, pruned with ``strategy`` when a new one does not fit (module docstring)."""

    def __init__(self, max_tokens: int = 4096, *, strategy: PruneStrategy | str = PruneStrategy.FIFO,
                 keep_recent: int = 10, goal: str | None = None, embedder: Embedder | None = None,
                 llm: LLM | None = None):
        self.max_tokens = check_int(max_tokens, "max_tokens", low=1, high=10_000_000)
        self.strategy = _strategy(strategy)
        self.keep_recent = check_int(keep_recent, "keep_recent", low=0, high=100_000)
        self.goal = goal
        self.embedder = embedder
        self.llm = llm
        self._messages: list[ContextMessage] = []

    @property
    def messages(self) -> list[ContextMessage]:
        """The messages, oldest first (a copy)."""
        return list(self._messages)

    def set_goal(self, goal: str | None) -> None:
        """The current goal the ``semantic`` strategy keeps messages relevant to."""
        if goal is not None:
            check_text(goal, "goal", max_bytes=32 * 1024)
        self.goal = goal

    async def add_message(self, role: str, content: str) -> ContextMessage:
        """Append a message; when the window is then over ``max_tokens``, prune it with its strategy."""
        check_text(role, "role", max_bytes=100)
        check_text(content, "content", max_bytes=16 * 1024 * 1024)
        tokens = _cost(role, content)
        if tokens > self.max_tokens:
            raise ValidationError("content", f"the message is {tokens} tokens; the window holds {self.max_tokens}")
        message = ContextMessage(role=role, content=content, tokens=tokens)
        self._messages.append(message)
        if self.get_token_count() > self.max_tokens:
            await self.prune()
        return message

    def get_context(self, max_tokens: int | None = None) -> list[dict[str, str]]:
        """The newest messages that fit ``max_tokens`` (default: the window's), oldest first, as ``role`` /
        ``content`` dicts ready for a chat API."""
        budget = self.max_tokens if max_tokens is None else check_int(max_tokens, "max_tokens", low=0)
        kept: list[ContextMessage] = []
        used = 0
        for message in reversed(self._messages):
            if used + message.tokens > budget:
                break
            kept.append(message)
            used += message.tokens
        return [{"role": m.role, "content": m.content} for m in reversed(kept)]

    def get_token_count(self) -> int:
        """The tokens of every message."""
        return sum(m.tokens for m in self._messages)

    def is_full(self) -> bool:
        """Whether the window holds ``max_tokens`` or more."""
        return self.get_token_count() >= self.max_tokens

    def clear(self) -> None:
        """Drop every message."""
        self._messages.clear()

    async def prune(self, strategy: PruneStrategy | str | None = None) -> int:
        """Make the window fit ``max_tokens`` with ``strategy`` (default: the window's); return the tokens freed."""
        chosen = self.strategy if strategy is None else _strategy(strategy)
        before = self.get_token_count()
        if chosen is PruneStrategy.SUMMARIZE:
            await self._summarize()
        elif chosen is PruneStrategy.SEMANTIC and self.goal and self.embedder is not None:
            await self._keep_relevant()
        self._drop_oldest()
        return before - self.get_token_count()

    def _drop_oldest(self) -> None:
        while self._messages and self.get_token_count() > self.max_tokens:
            self._messages.pop(0)

    async def _summarize(self) -> None:
        cut = max(0, len(self._messages) - self.keep_recent)
        old, recent = self._messages[:cut], self._messages[cut:]
        if not old:
            return
        budget = max(1, self.max_tokens // 4)
        text = (await self._llm_summary(old, budget) if self.llm is not None
                else top_sentences([m.content for m in old], budget))
        content = f"Summary of {len(old)} earlier messages: {text}"
        summary = ContextMessage(role="system", content=content, tokens=_cost("system", content), summary=True)
        self._messages = [summary, *recent] if summary.tokens <= self.max_tokens else recent

    async def _llm_summary(self, old: Sequence[ContextMessage], budget: int) -> str:
        assert self.llm is not None
        transcript = "\n".join(f"{m.role}: {m.content}" for m in old)
        return (await self.llm.complete(SUMMARY_PROMPT, transcript, max_tokens=budget)).text.strip()

    async def _keep_relevant(self) -> None:
        assert self.embedder is not None and self.goal
        cut = max(0, len(self._messages) - self.keep_recent)
        old, recent = self._messages[:cut], self._messages[cut:]
        if not old:
            return
        goal = (await self.embedder.embed([self.goal], is_query=True))[0]
        vectors = await self.embedder.embed_documents([m.content for m in old])
        similarity = [float(np.dot(goal, v)) for v in vectors]
        room = self.max_tokens - sum(m.tokens for m in recent)
        keep: set[int] = set()
        for i in sorted(range(len(old)), key=lambda i: -similarity[i]):
            if old[i].tokens <= room:
                keep.add(i)
                room -= old[i].tokens
        self._messages = [m for i, m in enumerate(old) if i in keep] + recent


def _strategy(value: PruneStrategy | str) -> PruneStrategy:
    try:
        return PruneStrategy(value)
    except ValueError:
        raise ValidationError("strategy", f"must be one of {', '.join(s.value for s in PruneStrategy)}, "
                                          f"got {value!r}") from None


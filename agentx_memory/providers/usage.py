"""What LLM calls cost: token usage, its estimated price, and the budgets that stop an operation before it overspends.

A :class:`Usage` is the sum of some calls (tokens in and out, calls, retries are inside the SDK and not counted);
:class:`UsageMeter` is one operation's running total (an extraction run), which checks every call against the
per-call and per-run budgets *before* the call is made: an operation that would pass its budget stops with
:class:`~agentx_memory.errors.LLMBudgetExceededError` before it writes anything from that call.

Input tokens are estimated before a call from the prompt's UTF-8 length (:func:`estimate_tokens`, a deliberate
over-estimate: providers' tokenizers give 3.5-4.5 characters per token on English, fewer on code and other scripts),
and the budget is charged with the provider's reported counts afterwards.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import LLMBudgetExceededError
from ..settings import LLMSettings

__all__ = ["Usage", "UsageMeter", "estimate_tokens"]

#: Characters per token assumed by :func:`estimate_tokens` (below every tokenizer's average, so it over-estimates).
CHARS_PER_TOKEN = 3.0


def estimate_tokens(*texts: str) -> int:
    """An upper estimate of the tokens of ``texts``: UTF-8 bytes / 3, rounded up."""
    return math.ceil(sum(len(t.encode("utf-8")) for t in texts) / CHARS_PER_TOKEN)


@dataclass
class Usage:
    """Tokens and calls of one or more LLM calls, and their estimated cost (None when the model has no price)."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    cost_usd: float | None = 0.0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    @classmethod
    def of_call(cls, model: str, input_tokens: int, output_tokens: int,
                prices: Mapping[str, tuple[float, float]]) -> Usage:
        """The usage of one call of ``model`` ("provider:model"), priced from ``prices`` (USD per million tokens)."""
        price = prices.get(model)
        cost = None if price is None else (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000
        return cls(input_tokens, output_tokens, 1, cost)

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens,
                     self.calls + other.calls, cost)

    def as_dict(self) -> dict[str, Any]:
        """Plain values, for reports and the audit log."""
        return {**asdict(self), "total_tokens": self.total_tokens}


class UsageMeter:
    """The running usage of one operation, with its budgets: ``per_call`` and ``per_run`` tokens (input + output).

    :meth:`reserve` is called before each call with the prompt's estimate and the output cap; :meth:`charge` after it
    with what the provider reported.
    """

    def __init__(self, *, per_call: int, per_run: int):
        self.per_call = per_call
        self.per_run = per_run
        self.usage = Usage()

    @classmethod
    def from_settings(cls, settings: LLMSettings) -> UsageMeter:
        """A meter with the budgets of ``llm.max_tokens_per_call`` and ``llm.max_tokens_per_run``."""
        return cls(per_call=settings.max_tokens_per_call, per_run=settings.max_tokens_per_run)

    def reserve(self, model: str, prompt_tokens: int, max_output_tokens: int) -> None:
        """Refuse a call whose estimated size would pass the per-call budget or the run's remaining budget."""
        wanted = prompt_tokens + max_output_tokens
        if wanted > self.per_call:
            raise LLMBudgetExceededError(
                f"{model}: a call of about {prompt_tokens} input + {max_output_tokens} output tokens passes "
                f"llm.max_tokens_per_call ({self.per_call}); it was not made")
        left = self.per_run - self.usage.total_tokens
        if wanted > left:
            raise LLMBudgetExceededError(
                f"{model}: a call of about {wanted} tokens passes the run's budget (llm.max_tokens_per_run "
                f"{self.per_run}, {self.usage.total_tokens} used); it was not made")

    def charge(self, usage: Usage) -> None:
        """Add a finished call's usage."""
        self.usage = self.usage + usage

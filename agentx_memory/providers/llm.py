"""LLM providers behind one small interface, chosen with ``"provider:model"`` strings.

``anthropic:<model>`` uses the official ``anthropic`` SDK (Messages API); ``openai:<model>`` the official ``openai``
SDK (Chat Completions). Both honour a base URL setting, so they can be pointed at a compatible local server.
``llm.allow_paid_calls = False`` blocks every call (tests set it unless they run a local stand-in server).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod

from ..errors import ConfigurationError
from ..settings import LLMSettings

__all__ = ["LLM", "AnthropicLLM", "OpenAILLM", "make_llm"]


class LLM(ABC):
    """Text in, text out."""

    model: str

    @abstractmethod
    async def complete(self, system: str, prompt: str, *, max_tokens: int = 300) -> str:
        """One completion for ``prompt`` under the ``system`` instruction."""


class AnthropicLLM(LLM):
    """Claude through the Anthropic Messages API."""

    def __init__(self, model: str, *, api_key: str, base_url: str, timeout: float):
        try:
            from anthropic import AsyncAnthropic
        except ImportError as exc:
            raise ConfigurationError(
                "anthropic:* models need the anthropic extra: pip install 'agentx-memory[anthropic]'"
            ) from exc
        self.model = model
        self._client = AsyncAnthropic(api_key=api_key or None, base_url=base_url or None, timeout=timeout)

    async def complete(self, system: str, prompt: str, *, max_tokens: int = 300) -> str:
        from anthropic.types import TextBlock

        message = await self._client.messages.create(
            model=self.model, max_tokens=max_tokens, system=system, messages=[{"role": "user", "content": prompt}],
        )
        return "".join(block.text for block in message.content if isinstance(block, TextBlock))


class OpenAILLM(LLM):
    """GPT models through the OpenAI Chat Completions API."""

    def __init__(self, model: str, *, api_key: str, base_url: str, timeout: float):
        try:
            from openai import AsyncOpenAI
        except ImportError as exc:
            raise ConfigurationError(
                "openai:* models need the openai extra: pip install 'agentx-memory[openai]'"
            ) from exc
        self.model = model
        self._client = AsyncOpenAI(api_key=api_key or None, base_url=base_url or None, timeout=timeout)

    async def complete(self, system: str, prompt: str, *, max_tokens: int = 300) -> str:
        response = await self._client.chat.completions.create(
            model=self.model, max_tokens=max_tokens,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
        )
        return response.choices[0].message.content or ""


def make_llm(spec: str, settings: LLMSettings) -> LLM | None:
    """The LLM that ``spec`` ("provider:model") names, or None when ``spec`` is empty or paid calls are off."""
    if not spec:
        return None
    if not settings.allow_paid_calls:
        return None
    provider, _, model = spec.partition(":")
    if provider == "anthropic":
        return AnthropicLLM(model, api_key=settings.anthropic_api_key or os.environ.get("ANTHROPIC_API_KEY", ""),
                            base_url=settings.anthropic_base_url, timeout=settings.timeout_seconds)
    if provider == "openai":
        return OpenAILLM(model, api_key=settings.openai_api_key or os.environ.get("OPENAI_API_KEY", ""),
                         base_url=settings.openai_base_url, timeout=settings.timeout_seconds)
    raise ConfigurationError(f"setting llm model {spec!r}: unknown provider {provider!r} (allowed: anthropic, openai)")

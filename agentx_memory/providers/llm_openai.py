"""The ``openai:<model>`` provider: the official ``openai`` SDK (Chat Completions), also for local
OpenAI-compatible servers (Ollama, vLLM, llama.cpp server, LM Studio) through ``llm.openai_base_url``.

Structured output is ``response_format`` ``{"type": "json_schema", ...}`` with ``strict`` off (local servers and
schemas with optional fields accept it); the answer is validated here either way. A server that reports no token
usage is charged an estimate (:func:`~agentx_memory.providers.usage.estimate_tokens`).
"""

from __future__ import annotations

from typing import Any

from ..settings import LLMSettings
from .llm import LLM, Answer, Stop
from .usage import estimate_tokens

__all__ = ["OpenAILLM"]

_STOPS: dict[str | None, Stop] = {"length": "max_tokens", "content_filter": "refusal"}


class OpenAILLM(LLM):
    """GPT models (or a local model) through Chat Completions (the SDK retries, with ``llm.max_retries``)."""

    provider = "openai"

    def __init__(self, model: str, settings: LLMSettings, *, api_key: str, base_url: str):
        super().__init__(model, settings, api_key=api_key, base_url=base_url)
        self._client = self._sdk.AsyncOpenAI(**self._client_options())

    async def _complete(self, system: str, prompt: str, max_tokens: int) -> Answer:
        response = await self._client.chat.completions.create(
            model=self.name, max_tokens=max_tokens,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}])
        return self._answer(response, system + prompt)

    async def _structured(self, system: str, prompt: str, schema: dict[str, Any], name: str, description: str,
                          max_tokens: int) -> Answer:
        response = await self._client.chat.completions.create(
            model=self.name, max_tokens=max_tokens,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
            response_format={"type": "json_schema", "json_schema": {
                "name": name, "description": description or f"The {name}.", "schema": schema, "strict": False}})
        return self._answer(response, system + prompt)

    @staticmethod
    def _answer(response: Any, prompt: str) -> Answer:
        choice = response.choices[0]
        text = choice.message.content or ""
        refusal = getattr(choice.message, "refusal", None) or ""
        stop = "refusal" if refusal else _STOPS.get(choice.finish_reason, "end")
        usage = response.usage
        return Answer(text=text, stop=stop, refusal=refusal,
                      input_tokens=usage.prompt_tokens if usage else estimate_tokens(prompt),
                      output_tokens=usage.completion_tokens if usage else estimate_tokens(text))

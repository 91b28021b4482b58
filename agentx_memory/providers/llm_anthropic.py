"""The ``anthropic:<model>`` provider: Claude through the official ``anthropic`` SDK (Messages API).

Structured output is a forced tool call: the schema is the tool's ``input_schema`` and ``tool_choice`` names the
tool, so the model answers with the tool's arguments (a JSON object the SDK has already decoded).
"""

from __future__ import annotations

from typing import Any

from ..settings import LLMSettings
from .llm import LLM, Answer, Stop

__all__ = ["AnthropicLLM"]

_STOPS: dict[str | None, Stop] = {"max_tokens": "max_tokens", "refusal": "refusal",
                                  "model_context_window_exceeded": "max_tokens"}


class AnthropicLLM(LLM):
    """Claude through the Anthropic Messages API (the SDK retries, with ``llm.max_retries`` and its backoff)."""

    provider = "anthropic"

    def __init__(self, model: str, settings: LLMSettings, *, api_key: str, base_url: str):
        super().__init__(model, settings, api_key=api_key, base_url=base_url)
        self._client = self._sdk.AsyncAnthropic(**self._client_options())

    async def _complete(self, system: str, prompt: str, max_tokens: int) -> Answer:
        message = await self._client.messages.create(
            model=self.name, max_tokens=max_tokens, system=system, messages=[{"role": "user", "content": prompt}])
        return self._answer(message, None)

    async def _structured(self, system: str, prompt: str, schema: dict[str, Any], name: str, description: str,
                          max_tokens: int) -> Answer:
        message = await self._client.messages.create(
            model=self.name, max_tokens=max_tokens, system=system, messages=[{"role": "user", "content": prompt}],
            tools=[{"name": name, "description": description or f"Record the {name}.", "input_schema": schema}],
            tool_choice={"type": "tool", "name": name})
        return self._answer(message, name)

    @staticmethod
    def _answer(message: Any, tool: str | None) -> Answer:
        text = "".join(block.text for block in message.content if block.type == "text")
        arguments = next((dict(block.input) for block in message.content
                          if block.type == "tool_use" and block.name == tool), None)
        return Answer(text=text, stop=_STOPS.get(message.stop_reason, "end"), arguments=arguments,
                      input_tokens=message.usage.input_tokens, output_tokens=message.usage.output_tokens)

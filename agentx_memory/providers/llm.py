"""LLM providers behind one small interface, chosen with ``"provider:model"`` strings.

``anthropic:<model>`` uses the official ``anthropic`` SDK (Messages API, structured output through a forced tool
call); ``openai:<model>`` the official ``openai`` SDK (Chat Completions, structured output through
``response_format`` ``json_schema``). Both take a base URL (``llm.anthropic_base_url`` / ``llm.openai_base_url``), so
``openai:`` also reaches local OpenAI-compatible servers (Ollama, vLLM, llama.cpp server, LM Studio).

What every call gets, whatever the provider (:class:`LLM`):

* **retries** by the SDK itself (``llm.max_retries``): 408/409/429/5xx, timeouts and network errors, exponential
  backoff with jitter, honouring ``retry-after`` (up to 60 s);
* **budgets**: with a :class:`~agentx_memory.providers.usage.UsageMeter`, a call that would pass the per-call or the
  run's token budget is refused before it is made;
* **usage** (tokens in and out, calls, estimated cost from ``llm.prices``) on every answer;
* **our errors** (:class:`~agentx_memory.errors.LLMError` and subclasses), whose messages name the model and never the
  API key;
* **validation**: :meth:`LLM.structured` parses the answer into a pydantic model; malformed JSON, a value off the
  schema (the field is named), a truncated answer and a refusal are each their own error;
* the **paid-call switch**: with ``llm.allow_paid_calls`` off, a call to a provider's public endpoint raises
  :class:`~agentx_memory.errors.PaidCallRefusedError`; a base URL on this machine or the local network still works.
"""

from __future__ import annotations

import importlib
import ipaddress
import json
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import urlsplit

import pydantic

from ..errors import (
    ConfigurationError,
    LLMError,
    LLMOutputError,
    LLMRefusalError,
    LLMTimeoutError,
    LLMUnavailableError,
    PaidCallRefusedError,
)
from ..settings import LLMSettings
from .usage import Usage, UsageMeter, estimate_tokens

__all__ = ["LLM", "Answer", "Completion", "Structured", "is_local_endpoint", "make_llm"]

T = TypeVar("T", bound=pydantic.BaseModel)

#: Why a provider stopped: the answer is complete, cut at the output limit, or a refusal.
Stop = Literal["end", "max_tokens", "refusal"]


@dataclass
class Answer:
    """One provider answer as the adapters hand it back: the text, the structured arguments of a forced tool call
    (Anthropic) if any, why it stopped, and the reported token counts."""

    text: str
    stop: Stop
    input_tokens: int
    output_tokens: int
    arguments: dict[str, Any] | None = None
    refusal: str = ""


@dataclass
class Completion:
    """A text completion and its usage."""

    text: str
    usage: Usage


@dataclass
class Structured(Generic[T]):
    """A structured answer, validated into the requested model, and its usage."""

    value: T
    usage: Usage
    raw: dict[str, Any] = field(default_factory=dict)


def is_local_endpoint(base_url: str) -> bool:
    """Whether ``base_url`` points at this machine or the local network: ``localhost``, a loopback, private or
    link-local address, a ``.local``/``.localhost``/``.internal`` name, or a single-label host name (a compose
    service such as ``ollama``). An empty URL is the provider's public endpoint."""
    host = (urlsplit(base_url).hostname or "").lower() if base_url else ""
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:  # a name
        return host == "localhost" or host.endswith((".localhost", ".local", ".internal")) or "." not in host
    return address.is_loopback or address.is_private or address.is_link_local


class LLM(ABC):
    """One configured model. Subclasses adapt a provider SDK: they build their client from :meth:`_client_options`,
    and :meth:`_complete` and :meth:`_structured` return an :class:`Answer` and raise the SDK's own errors, which
    :meth:`_errors` maps to ours."""

    #: The provider's name in ``"provider:model"``; also the name of its SDK package and of its extra.
    provider: str = ""

    def __init__(self, model: str, settings: LLMSettings, *, api_key: str, base_url: str):
        self.name = model
        self.model = f"{self.provider}:{model}"
        self.settings = settings
        self.base_url = base_url
        self._secret = api_key
        try:
            #: The SDK module: its exception classes share names across providers (:meth:`_errors`).
            self._sdk: Any = importlib.import_module(self.provider)
        except ImportError as exc:
            raise ConfigurationError(f"{self.provider}:* models need the {self.provider} extra: pip install "
                                     f"'agentx-memory[{self.provider}]'") from exc
        if not api_key and not is_local_endpoint(base_url):
            raise ConfigurationError(f"{self.model} needs an API key: set llm.{self.provider}_api_key or "
                                     f"{self.provider.upper()}_API_KEY")

    def _client_options(self) -> dict[str, Any]:
        """The SDK client's arguments (both SDKs take the same): a local server without a key gets a placeholder."""
        return {"api_key": self._secret or "local", "base_url": self.base_url or None,
                "timeout": self.settings.timeout_seconds, "max_retries": self.settings.max_retries}

    # --- the interface ---------------------------------------------------------------------------------------------

    async def complete(self, system: str, prompt: str, *, max_tokens: int = 300,
                       meter: UsageMeter | None = None) -> Completion:
        """One text completion for ``prompt`` under the ``system`` instruction (a refusal raises)."""
        answer, usage = await self._call(lambda: self._complete(system, prompt, max_tokens), system + prompt,
                                         max_tokens, meter)
        return Completion(answer.text, usage)

    async def structured(self, system: str, prompt: str, output: type[T], *, name: str, description: str = "",
                         schema: dict[str, Any] | None = None, max_tokens: int | None = None,
                         meter: UsageMeter | None = None) -> Structured[T]:
        """An answer in the JSON shape of the pydantic model ``output``, validated into it. The JSON schema sent to
        the provider (as the tool's input schema or the response format ``name``: letters, digits, ``_`` and ``-``)
        is ``output``'s, or ``schema`` when given (a stricter one the caller then checks item by item)."""
        schema = schema or output.model_json_schema()
        limit = max_tokens or self.settings.max_output_tokens
        prompt_size = system + prompt + json.dumps(schema)
        answer, usage = await self._call(lambda: self._structured(system, prompt, schema, name, description, limit),
                                         prompt_size, limit, meter)
        if answer.stop == "max_tokens":
            raise LLMOutputError(f"{self.model}: the answer was cut at the output limit ({limit} tokens); raise "
                                 f"llm.max_output_tokens or send less per call", truncated=True)
        raw = answer.arguments if answer.arguments is not None else self._parse_json(answer.text)
        try:
            value = output.model_validate(raw)
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(root)"
            raise LLMOutputError(f"{self.model}: the answer breaks the schema {name!r} at {where}: {first['msg']}",
                                 field=where) from None
        return Structured(value, usage, raw)

    # --- what adapters implement -----------------------------------------------------------------------------------

    @abstractmethod
    async def _complete(self, system: str, prompt: str, max_tokens: int) -> Answer:
        """Call the provider for text."""

    @abstractmethod
    async def _structured(self, system: str, prompt: str, schema: dict[str, Any], name: str, description: str,
                          max_tokens: int) -> Answer:
        """Call the provider for JSON in ``schema``."""

    # --- shared machinery ------------------------------------------------------------------------------------------

    async def _call(self, request: Any, prompt: str, max_tokens: int, meter: UsageMeter | None
                    ) -> tuple[Answer, Usage]:
        """Make one call (after the paid-call switch and the budget allow it): the answer, and its usage charged to
        ``meter``; a refusal raises (the usage still counted)."""
        if not self.settings.allow_paid_calls and not is_local_endpoint(self.base_url):
            raise PaidCallRefusedError(
                f"{self.model}: llm.allow_paid_calls is off and the endpoint is the provider's public API; set a "
                f"local base URL (llm.{self.provider}_base_url) or allow paid calls")
        if meter is not None:
            meter.reserve(self.model, estimate_tokens(prompt), max_tokens)
        try:
            answer: Answer = await request()
        except Exception as exc:
            raise self._errors(exc) from None
        usage = Usage.of_call(self.model, answer.input_tokens, answer.output_tokens, self.settings.prices)
        if meter is not None:
            meter.charge(usage)
        if answer.stop == "refusal":
            raise LLMRefusalError(f"{self.model} refused: {self._scrub(answer.refusal or answer.text)[:200]}")
        return answer, usage

    def _errors(self, exc: Exception) -> LLMError:
        sdk = self._sdk
        retries = self.settings.max_retries
        if isinstance(exc, sdk.APITimeoutError):
            return LLMTimeoutError(f"{self.model}: no answer within llm.timeout_seconds "
                                   f"({self.settings.timeout_seconds:g} s), {retries} retries")
        if isinstance(exc, sdk.APIConnectionError):
            return LLMUnavailableError(f"{self.model}: could not connect ({retries} retries)")
        if isinstance(exc, sdk.APIStatusError):
            status = exc.status_code
            detail = self._scrub(str(getattr(exc, "message", "") or ""))[:300]
            retried = f" after {retries} retries" if status in (408, 409, 429) or status >= 500 else ""
            return LLMUnavailableError(f"{self.model}: HTTP {status}{retried}: {detail}", status=status)
        if isinstance(exc, sdk.APIResponseValidationError | json.JSONDecodeError):
            return LLMOutputError(f"{self.model}: the provider's response is not valid JSON of its API")
        return LLMError(f"{self.model}: {type(exc).__name__}: {self._scrub(str(exc))[:300]}")

    def _parse_json(self, text: str) -> Any:
        body = text.strip()
        if body.startswith("```"):  # a fenced block, as some local models answer
            body = body.strip("`").removeprefix("json").strip()
        try:
            return json.loads(body)
        except json.JSONDecodeError as exc:
            raise LLMOutputError(f"{self.model}: the answer is not valid JSON ({exc.msg} at character {exc.pos})",
                                 field="(root)") from None

    def _scrub(self, text: str) -> str:
        # an error body may echo the request: never let the key out
        return text.replace(self._secret, "***") if self._secret else text


def make_llm(spec: str, settings: LLMSettings) -> LLM | None:
    """The LLM that ``spec`` ("provider:model") names, or None when ``spec`` is empty. The API key comes from the
    settings or the provider's environment variable; a missing SDK is a :class:`ConfigurationError`."""
    if not spec:
        return None
    provider, _, model = spec.partition(":")
    if not model:
        raise ConfigurationError(f"setting llm model {spec!r}: expected 'provider:model', e.g. openai:gpt-4o-mini")
    if provider == "anthropic":
        from .llm_anthropic import AnthropicLLM

        return AnthropicLLM(model, settings, api_key=settings.anthropic_api_key or os.environ.get(
            "ANTHROPIC_API_KEY", ""), base_url=settings.anthropic_base_url)
    if provider == "openai":
        from .llm_openai import OpenAILLM

        return OpenAILLM(model, settings, api_key=settings.openai_api_key or os.environ.get("OPENAI_API_KEY", ""),
                         base_url=settings.openai_base_url)
    raise ConfigurationError(f"setting llm model {spec!r}: unknown provider {provider!r} (allowed: anthropic, openai)")

"""The LLM providers with their real SDK clients (anthropic, openai) against a local server in each provider's wire
format: success, malformed JSON, an answer off the schema, 429 then success, 500, a timeout, a refusal, a truncated
answer; budgets, usage and cost, the paid-call switch, and API keys kept out of errors and logs."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pydantic
import pytest

from agentx_memory.bench.wire import (
    Reply,
    WireServer,
    anthropic_error,
    anthropic_message,
    openai_completion,
    openai_error,
)
from agentx_memory.errors import (
    ConfigurationError,
    LLMBudgetExceededError,
    LLMOutputError,
    LLMRefusalError,
    LLMTimeoutError,
    LLMUnavailableError,
    PaidCallRefusedError,
)
from agentx_memory.providers.llm import LLM, is_local_endpoint, make_llm
from agentx_memory.providers.usage import Usage, UsageMeter
from agentx_memory.settings import LLMSettings

KEY = "sk-test-secret-0123456789"
TOOL = "record_entities"


class Entity(pydantic.BaseModel):
    """One extracted entity (the test's output model)."""

    name: str
    type: str


class Entities(pydantic.BaseModel):
    """What the test asks for."""

    entities: list[Entity]


GOOD = {"entities": [{"name": "Maya Costa", "type": "person"}, {"name": "Lumen Labs", "type": "organization"}]}


@dataclass
class Wire:
    """How one provider speaks: its model string and the bodies the server answers with."""

    spec: str
    success: Callable[[dict[str, Any]], dict[str, Any]]
    malformed: Callable[[], dict[str, Any]]
    refusal: Callable[[], dict[str, Any]]
    truncated: Callable[[], dict[str, Any]]
    error: Callable[[str, str], dict[str, Any]]
    base_url_setting: str
    key_setting: str

    def settings(self, url: str, **values: Any) -> LLMSettings:
        return LLMSettings(**{self.base_url_setting: url, self.key_setting: KEY, "allow_paid_calls": False,
                              "max_retries": 0, **values})


ANTHROPIC = Wire(
    spec="anthropic:claude-haiku-4-5",
    success=lambda args: anthropic_message(tool=TOOL, arguments=args),
    malformed=lambda: anthropic_message(text='{"entities": [{"name": "Maya"'),
    refusal=lambda: anthropic_message(text="I can't help with that.", stop_reason="refusal"),
    truncated=lambda: anthropic_message(tool=TOOL, arguments={"entities": []}, stop_reason="max_tokens"),
    error=lambda kind, message: anthropic_error(kind, message),
    base_url_setting="anthropic_base_url", key_setting="anthropic_api_key",
)
OPENAI = Wire(
    spec="openai:gpt-4o-mini",
    success=lambda args: openai_completion(json.dumps(args)),
    malformed=lambda: openai_completion('{"entities": [{"name": "Maya"'),
    refusal=lambda: openai_completion(None, refusal="I can't help with that."),
    truncated=lambda: openai_completion('{"entities": [{"name": "Ma', finish_reason="length"),
    error=lambda kind, message: openai_error(kind, message),
    base_url_setting="openai_base_url", key_setting="openai_api_key",
)


@pytest.fixture(params=[ANTHROPIC, OPENAI], ids=["anthropic", "openai"])
def wire(request) -> Wire:
    return request.param


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer().running() as running:
        yield running


def llm(wire: Wire, server: WireServer, **values: Any) -> LLM:
    made = make_llm(wire.spec, wire.settings(server.url + ("/v1" if wire is OPENAI else ""), **values))
    assert made is not None
    return made


def ask(model: LLM, meter: UsageMeter | None = None, max_tokens: int | None = None):
    return asyncio.run(model.structured("Extract entities.", "Sam works with Maya Costa at Lumen Labs.", Entities,
                                        name=TOOL, meter=meter, max_tokens=max_tokens))


def test_a_structured_answer_is_validated_and_carries_its_usage_and_cost(wire, server):
    server.script(Reply(wire.success(GOOD)))
    answer = ask(llm(wire, server))
    assert answer.value == Entities.model_validate(GOOD)
    assert answer.usage == Usage(input_tokens=120, output_tokens=30, calls=1,
                                 cost_usd=pytest.approx(answer.usage.cost_usd))
    price = LLMSettings().prices[wire.spec]
    assert answer.usage.cost_usd == pytest.approx((120 * price[0] + 30 * price[1]) / 1e6)
    # what went over the wire: the model, the schema as a forced tool / a json_schema response format, the key
    (request,) = server.requests
    assert request.body["model"] == wire.spec.split(":", 1)[1]
    if wire is ANTHROPIC:
        assert request.path == "/v1/messages"
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        assert KEY in (request.headers.get("x-api-key"), bearer)
        assert request.body["tool_choice"] == {"type": "tool", "name": TOOL}
        assert request.body["tools"][0]["input_schema"] == Entities.model_json_schema()
    else:
        assert request.path == "/v1/chat/completions" and request.headers["authorization"] == f"Bearer {KEY}"
        assert request.body["response_format"]["json_schema"]["schema"] == Entities.model_json_schema()


def test_malformed_json_is_an_output_error(wire, server):
    server.script(Reply(wire.malformed()))
    with pytest.raises(LLMOutputError, match="not valid JSON") as caught:
        ask(llm(wire, server))
    assert caught.value.field == "(root)" and not caught.value.truncated


def test_an_answer_off_the_schema_names_the_field(wire, server):
    server.script(Reply(wire.success({"entities": [{"name": "Maya Costa", "type": "person"}, {"name": "Lumen"}]})))
    with pytest.raises(LLMOutputError, match="breaks the schema") as caught:
        ask(llm(wire, server))
    assert caught.value.field == "entities.1.type"


def test_429_then_success_waits_the_retry_after_and_answers(wire, server):
    server.script(Reply(wire.error("rate_limit_error", "slow down"), status=429, headers={"retry-after": "1"}),
                  Reply(wire.success(GOOD)))
    started = time.monotonic()
    answer = ask(llm(wire, server, max_retries=2))
    assert answer.value.entities[0].name == "Maya Costa"
    assert len(server.requests) == 2
    assert time.monotonic() - started >= 0.95  # the server's retry-after, not the SDK's own shorter backoff


def test_500_after_the_retries_is_unavailable_with_the_status(wire, server):
    server.script(Reply(wire.error("api_error", "internal"), status=500))
    with pytest.raises(LLMUnavailableError, match="HTTP 500 after 1 retries") as caught:
        ask(llm(wire, server, max_retries=1))
    assert caught.value.status == 500
    assert len(server.requests) == 2  # the first attempt and one retry


def test_a_client_error_is_not_retried(wire, server):
    server.script(Reply(wire.error("invalid_request_error", "bad model"), status=400))
    with pytest.raises(LLMUnavailableError, match="HTTP 400: ") as caught:
        ask(llm(wire, server, max_retries=3))
    assert caught.value.status == 400 and len(server.requests) == 1


def test_a_timeout_is_retried_then_raised_as_a_timeout(wire, server):
    server.script(Reply(wire.success(GOOD), delay=1.5))
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError, match=r"no answer within llm\.timeout_seconds"):
        ask(llm(wire, server, timeout_seconds=0.3, max_retries=1))
    assert len(server.requests) == 2
    assert time.monotonic() - started < 1.5 * 2  # each attempt gave up at the timeout, not at the server's delay


def test_a_refusal_is_its_own_error(wire, server):
    server.script(Reply(wire.refusal()))
    with pytest.raises(LLMRefusalError, match="refused: I can't help with that"):
        ask(llm(wire, server))


def test_a_truncated_answer_is_an_output_error_that_says_so(wire, server):
    server.script(Reply(wire.truncated()))
    with pytest.raises(LLMOutputError, match="cut at the output limit") as caught:
        ask(llm(wire, server), max_tokens=50)
    assert caught.value.truncated


def test_text_completion_and_its_usage(wire, server):
    body = anthropic_message(text="Lisbon.") if wire is ANTHROPIC else openai_completion("Lisbon.")
    server.script(Reply(body))
    completion = asyncio.run(llm(wire, server).complete("Answer briefly.", "Where does Sam live?"))
    assert completion.text == "Lisbon." and completion.usage.calls == 1 and completion.usage.total_tokens == 150


# --- budgets -------------------------------------------------------------------------------------------------------

def test_the_run_budget_stops_before_the_call_that_would_pass_it(wire, server):
    server.script(Reply(wire.success(GOOD)))
    model = llm(wire, server)
    meter = UsageMeter(per_call=2_000, per_run=1_200)
    ask(model, meter, max_tokens=500)
    assert meter.usage.total_tokens == 150 and meter.usage.calls == 1
    with pytest.raises(LLMBudgetExceededError, match="run's budget"):
        ask(model, meter, max_tokens=1_000)  # 150 used + ~130 prompt + 1,000 output > 1,200
    assert len(server.requests) == 1  # the refused call never reached the server
    assert meter.usage.calls == 1


def test_the_per_call_budget_refuses_an_oversized_call(wire, server):
    server.script(Reply(wire.success(GOOD)))
    with pytest.raises(LLMBudgetExceededError, match=r"llm\.max_tokens_per_call"):
        ask(llm(wire, server), UsageMeter(per_call=400, per_run=10_000), max_tokens=300)
    assert server.requests == []
    defaults = UsageMeter.from_settings(LLMSettings())
    assert (defaults.per_call, defaults.per_run) == (16_000, 1_000_000)


def test_a_model_without_a_price_has_no_cost_estimate():
    assert Usage.of_call("openai:some-local-model", 100, 10, LLMSettings().prices).cost_usd is None
    total = Usage.of_call("openai:gpt-4o-mini", 100, 10, LLMSettings().prices) + Usage(5, 5, 1, None)
    assert total.calls == 2 and total.total_tokens == 120 and total.cost_usd is None


def test_a_local_server_without_usage_is_charged_an_estimate(server):
    server.script(Reply(openai_completion(json.dumps(GOOD), usage=False)))
    answer = ask(llm(OPENAI, server))
    assert answer.usage.input_tokens > 0 and answer.usage.output_tokens > 0


# --- the paid-call switch and secrets -------------------------------------------------------------------------------

@pytest.mark.parametrize(("url", "local"), [
    ("", False), ("https://api.openai.com/v1", False), ("https://api.anthropic.com", False),
    ("http://127.0.0.1:8080/v1", True), ("http://localhost:11434/v1", True), ("http://[::1]:8000", True),
    ("http://192.168.1.20:8000/v1", True), ("http://10.0.0.5", True), ("http://ollama:11434/v1", True),
    ("http://gpu-box.local:8000", True), ("https://llm.example.com/v1", False), ("http://8.8.8.8", False),
])
def test_which_endpoints_count_as_local(url, local):
    assert is_local_endpoint(url) is local


@pytest.mark.parametrize("spec", [ANTHROPIC.spec, OPENAI.spec])
def test_with_paid_calls_off_a_public_endpoint_is_refused_before_any_request(spec):
    model = make_llm(spec, LLMSettings(anthropic_api_key=KEY, openai_api_key=KEY, allow_paid_calls=False))
    assert model is not None
    with pytest.raises(PaidCallRefusedError, match="allow_paid_calls is off"):
        asyncio.run(model.complete("s", "p"))


def test_a_public_endpoint_without_a_key_is_a_configuration_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="needs an API key"):
        make_llm("openai:gpt-4o-mini", LLMSettings())
    with pytest.raises(ConfigurationError, match="unknown provider"):
        make_llm("mistral:small", LLMSettings())
    assert make_llm("", LLMSettings()) is None


def test_the_api_key_never_appears_in_an_error_or_a_log(wire, server, caplog):
    caplog.set_level(logging.DEBUG)
    server.script(Reply(wire.error("authentication_error", f"invalid x-api-key {KEY}"), status=401))
    with pytest.raises(LLMUnavailableError, match="HTTP 401") as caught:
        ask(llm(wire, server))
    assert KEY not in str(caught.value) and "***" in str(caught.value)
    assert KEY not in repr(caught.value.__cause__) and caught.value.__suppress_context__
    assert KEY not in caplog.text

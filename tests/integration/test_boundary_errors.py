"""Issue 11 item 13: the public API raises only errors of our tree — pydantic's ValidationError is converted at
the facade (naming the field), and a call after close() is a ClosedError, not RuntimeError('Event loop is closed')."""

from __future__ import annotations

import asyncio

import pydantic
import pytest

from agentx_memory import AgentMemory, AsyncAgentMemory, ClosedError, Turn, ValidationError


def test_pydantic_errors_become_ours_naming_the_field(memory):
    with pytest.raises(ValidationError) as caught:
        memory.record_invocation("c1", None, "grep", {}, {}, True, 1.5)  # type: ignore[arg-type]
    assert not isinstance(caught.value, pydantic.ValidationError)
    assert caught.value.field == "latency_ms"
    assert "latency_ms" in str(caught.value)
    with pytest.raises(ValidationError) as caught:  # the argument's name, not the model field it fills
        memory.record_invocation("c1", None, "grep", {}, {}, True, 1, invocation_id=5)  # type: ignore[arg-type]
    assert caught.value.field == "invocation_id"
    assert memory.get_tool_stats() == []  # nothing was written


def test_every_call_after_close_is_a_closed_error(settings):
    mem = AgentMemory(settings(), user_id="alice")
    wm = mem.working("alice", "c1")
    mem.store_turn(Turn(conversation_id="c1", user_id="alice", content="before close"))
    mem.close()
    assert mem.closed
    for call in (mem.get_profile, lambda: mem.remember("close"), lambda: mem.working("alice", "c1"),
                 lambda: wm.get("topic"), lambda: mem.store_turn(Turn(conversation_id="c1", user_id="alice",
                                                                        content="after close"))):
        with pytest.raises(ClosedError, match="closed"):
            call()
    mem.close()  # still idempotent


def test_async_calls_after_close_are_closed_errors(settings):
    async def scenario() -> None:
        mem = await AsyncAgentMemory.open(settings(), user_id="alice")
        await mem.close()
        await mem.close()
        assert mem.closed
        with pytest.raises(ClosedError):
            await mem.get_profile()
        with pytest.raises(ClosedError):
            mem.working("alice", "c1")

    asyncio.run(scenario())

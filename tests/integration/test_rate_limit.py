"""Issue 19 / spec 003 security: remember() is rate limited per user (and per agent of a user) when
``limits.remember_rate_limit`` is set, counted in Redis so every process shares the count; off by default."""

from __future__ import annotations

import time

import pytest

from agentx_memory import AgentMemory, RateLimitedError

WINDOW = 60.0  # long enough that no call of a test leaves it, however slow the machine
SHORT = 1.0  # for the tests that wait for the window to pass


@pytest.fixture
def limited(settings):
    """A factory of memories limiting remember() to 3 calls per window (``window`` seconds, default WINDOW), all on
    one store."""
    made: dict[float, object] = {}
    opened: list[AgentMemory] = []

    def open_memory(window: float = WINDOW) -> AgentMemory:
        if window not in made:
            made[window] = settings(limits={"remember_rate_limit": 3, "remember_rate_window_seconds": window})
        mem = AgentMemory(made[window], user_id="alice")
        opened.append(mem)
        return mem

    yield open_memory
    for mem in opened:
        mem.close()


def hit(memory, user_id: str = "alice") -> float:
    """Count one remember() call directly in Redis (no recall: fast), as remember() does; the wait it returns."""
    limits = memory.settings.limits
    return memory._portal.run(memory.core.ctx.working.hit_rate(
        "remember", user_id, None, limit=limits.remember_rate_limit,
        window_seconds=limits.remember_rate_window_seconds))


def test_the_call_past_the_limit_is_refused_with_retry_after(limited):
    memory = limited()
    for _ in range(3):
        memory.remember("where do I live")
    with pytest.raises(RateLimitedError) as caught:
        memory.remember("where do I live")
    err = caught.value
    assert err.status == 429 and 0 < err.retry_after <= WINDOW
    assert err.user_id == "alice" and err.agent_id is None and err.limit == 3 and err.operation == "remember"
    assert "429" in str(err)


def test_other_users_and_agents_have_their_own_count(limited):
    memory = limited()
    for _ in range(3):
        memory.remember("where do I live")
    with pytest.raises(RateLimitedError):
        memory.remember("where do I live")
    for _ in range(3):
        memory.remember("where do I live", user_id="bob")
    agent = memory.for_agent("planner")
    for _ in range(3):
        agent.remember("where do I live")
    with pytest.raises(RateLimitedError) as caught:
        agent.remember("where do I live")
    assert caught.value.agent_id == "planner"


def test_the_count_is_shared_by_every_memory_on_the_store(limited):
    first, second = limited(), limited()
    first.remember("a")
    second.remember("b")
    first.remember("c")
    with pytest.raises(RateLimitedError):
        second.remember("d")


def test_the_window_passing_lets_calls_through_again(limited):
    memory = limited(SHORT)
    assert [hit(memory) for _ in range(3)] == [0.0, 0.0, 0.0]
    with pytest.raises(RateLimitedError) as caught:
        memory.remember("where do I live")
    assert 0 < caught.value.retry_after <= SHORT
    time.sleep(caught.value.retry_after + 0.05)
    memory.remember("where do I live")


def test_refused_calls_are_not_counted(limited):
    memory = limited(SHORT)
    assert [hit(memory) for _ in range(3)] == [0.0, 0.0, 0.0]
    waits = [hit(memory) for _ in range(5)]
    assert all(0 < w <= SHORT for w in waits)
    time.sleep(max(waits) + 0.05)
    assert [hit(memory) for _ in range(3)] == [0.0, 0.0, 0.0]


def test_off_by_default(settings):
    made = settings()
    assert made.limits.remember_rate_limit is None
    with AgentMemory(made, user_id="alice") as memory:
        for _ in range(25):
            memory.remember("where do I live")


def test_forget_user_removes_their_counts_only(limited):
    memory = limited()
    for _ in range(3):
        hit(memory)
        hit(memory, "bob")
    memory.forget_user("alice")
    for _ in range(3):
        memory.remember("q")  # alice starts again
    with pytest.raises(RateLimitedError):
        memory.remember("q", user_id="bob")

"""``gathering.gather``: results in order, and when one awaitable fails the others are cancelled and have ended before
the error (unchanged) reaches the caller."""

from __future__ import annotations

import asyncio

import pytest

from agentx_memory.errors import StorageUnavailableError
from agentx_memory.gathering import gather


async def _value(value: int, delay: float = 0.0) -> int:
    await asyncio.sleep(delay)
    return value


def test_results_come_in_the_order_of_the_awaitables():
    assert asyncio.run(gather(_value(1, 0.02), _value(2))) == [1, 2]
    assert asyncio.run(gather(*(_value(n, 0.001 * (5 - n)) for n in range(5)))) == [0, 1, 2, 3, 4]


def test_a_failure_cancels_the_others_and_waits_for_them_before_it_is_raised():
    ended: list[str] = []

    async def slow_read() -> int:
        try:
            await asyncio.sleep(60)
            return 1
        finally:
            await asyncio.sleep(0.01)  # a read's cleanup takes a moment (a rollback, a connection returned)
            ended.append("slow read")

    async def failing_read() -> int:
        await asyncio.sleep(0)
        raise StorageUnavailableError("PostgreSQL unavailable while searching the timeline: boom")

    async def recall() -> None:
        with pytest.raises(StorageUnavailableError, match="searching the timeline"):
            await gather(slow_read(), failing_read())
        assert ended == ["slow read"]
        assert asyncio.all_tasks() == {asyncio.current_task()}

    asyncio.run(recall())

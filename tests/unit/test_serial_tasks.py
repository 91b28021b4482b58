"""Background jobs keep their order per key and run concurrently across keys (:mod:`agentx_memory.serial_tasks`)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agentx_memory.serial_tasks import SerialTasks


def job(done: list[str], name: str, seconds: float = 0.0, fail: bool = False):
    async def run() -> None:
        await asyncio.sleep(seconds)
        if fail:
            raise RuntimeError(f"{name} failed")
        done.append(name)
    return run


def test_jobs_of_one_key_run_in_the_order_they_were_started():
    async def scenario() -> list[str]:
        tasks, done = SerialTasks(), []
        tasks.start("alice", job(done, "slow", 0.05))
        tasks.start("alice", job(done, "fast"))
        tasks.start("alice", job(done, "last", 0.01))
        await tasks.drain()
        return done

    assert asyncio.run(scenario()) == ["slow", "fast", "last"]


def test_jobs_of_different_keys_do_not_wait_for_each_other():
    async def scenario() -> list[str]:
        tasks, done = SerialTasks(), []
        tasks.start("alice", job(done, "alice", 0.05))
        tasks.start("bob", job(done, "bob"))
        await tasks.drain()
        return done

    assert asyncio.run(scenario()) == ["bob", "alice"]


def test_a_failed_job_is_logged_and_the_next_one_still_runs(caplog):
    async def scenario() -> tuple[list[str], int]:
        tasks, done = SerialTasks(), []
        tasks.start("alice", job(done, "broken", 0.01, fail=True))
        tasks.start("alice", job(done, "next"))
        await tasks.drain()
        return done, len(tasks)

    with caplog.at_level(logging.ERROR, logger="agentx_memory.serial_tasks"):
        assert asyncio.run(scenario()) == (["next"], 0)
    assert "background job failed" in caplog.text and "broken failed" in caplog.text


def test_drain_waits_for_jobs_started_by_jobs():
    async def scenario() -> list[str]:
        tasks, done = SerialTasks(), []

        async def spawning() -> None:
            await asyncio.sleep(0.01)
            tasks.start("bob", job(done, "spawned", 0.02))

        tasks.start("alice", spawning)
        await tasks.drain()
        return done

    assert asyncio.run(scenario()) == ["spawned"]


def test_cancelling_a_job_does_not_cancel_the_one_before_it():
    async def scenario() -> list[str]:
        tasks, done = SerialTasks(), []
        tasks.start("alice", job(done, "first", 0.03))
        second = tasks.start("alice", job(done, "second"))
        await asyncio.sleep(0.01)
        second.cancel()
        with pytest.raises(asyncio.CancelledError):
            await second
        await tasks.drain()
        return done

    assert asyncio.run(scenario()) == ["first"]

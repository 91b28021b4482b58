"""Reads run at once that leave nothing running when one of them fails.

``asyncio.gather`` raises the first error and lets the other awaitables run on: a recall whose timeline search failed
returned its error while its turn searches, waiting for a lock, held on to their PostgreSQL connections (and an
orphan destroyed unfinished later logged "another command is already in progress" from its rollback).
:func:`gather` cancels the others and waits for them to end before the error reaches the caller; psycopg cancels a
cancelled statement on the server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar, overload

__all__ = ["gather"]

A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")


@overload
async def gather(first: Awaitable[A], second: Awaitable[B], /) -> tuple[A, B]: ...


@overload
async def gather(first: Awaitable[A], second: Awaitable[B], third: Awaitable[C], /) -> tuple[A, B, C]: ...


@overload
async def gather(*awaitables: Awaitable[A]) -> list[A]: ...


async def gather(*awaitables: Awaitable[Any]) -> Any:
    """The results of ``awaitables`` run concurrently, in their order (a list, typed as a tuple for two or three, as
    ``asyncio.gather``'s are). When one raises (or the caller is cancelled), the others are cancelled and awaited,
    then the first error is raised as it was."""
    tasks = [asyncio.ensure_future(awaitable) for awaitable in awaitables]
    try:
        results = await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return results

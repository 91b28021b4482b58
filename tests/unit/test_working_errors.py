"""WorkingStore._call, the one place where Redis errors become ours (no server needed: the errors are raised here)."""

from __future__ import annotations

import asyncio

import pytest
import redis.exceptions

from agentx_memory.errors import StorageError, StorageUnavailableError
from agentx_memory.settings import WorkingMemorySettings
from agentx_memory.working import WorkingStore


async def _raise(exc: Exception) -> None:
    raise exc


@pytest.mark.parametrize(("driver_error", "ours"), [
    (redis.exceptions.OutOfMemoryError("OOM command not allowed when used memory > 'maxmemory'."), StorageError),
    (redis.exceptions.ResponseError("WRONGTYPE Operation against a key holding the wrong kind of value"), StorageError),
    (redis.exceptions.ResponseError("invalid expire time in 'hexpire' command"), StorageError),
    (redis.exceptions.ExecAbortError("EXECABORT Transaction discarded because of previous errors."), StorageError),
    (redis.exceptions.DataError("Invalid input of type: 'dict'."), StorageError),
    (redis.exceptions.ConnectionError("Error 111 connecting"), StorageUnavailableError),
    (redis.exceptions.TimeoutError("Timeout reading from socket"), StorageUnavailableError),
    (redis.exceptions.BusyLoadingError("LOADING Redis is loading the dataset in memory"), StorageUnavailableError),
    (ConnectionRefusedError(111, "Connection refused"), StorageUnavailableError),
])
def test_every_redis_error_becomes_one_of_ours(driver_error, ours):
    store = WorkingStore(None, WorkingMemorySettings())  # type: ignore[arg-type]  # _call never touches the client
    with pytest.raises(ours) as caught:
        asyncio.run(store._call(_raise(driver_error)))
    assert caught.value.__cause__ is driver_error
    assert (type(caught.value) is StorageUnavailableError) == (ours is StorageUnavailableError)

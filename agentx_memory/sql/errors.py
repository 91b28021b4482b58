"""The one place where psycopg's exceptions become the agentx error tree (:mod:`agentx_memory.errors`).

Every statement the ``sql`` package runs goes through :func:`pg_errors`, the way httpx maps its transport errors in
one context manager::

    async with pg_errors("writing memory_timeline"), store.connection() as conn:
        await conn.execute(...)

====================================================  ====================================================
psycopg error                                         agentx error
====================================================  ====================================================
unique, exclusion or foreign-key violation            :class:`~agentx_memory.errors.ConflictError`
serialization failure, deadlock (class 40 rollback)   :class:`~agentx_memory.errors.StorageError` (retryable)
past one of the server's limits (class 54)            :class:`~agentx_memory.errors.StorageError` (not retryable)
operational / interface error, pool timeout, OSError  :class:`~agentx_memory.errors.StorageUnavailableError`
any other ``psycopg.Error``                           :class:`~agentx_memory.errors.StorageError`
====================================================  ====================================================

The original exception is always the ``__cause__`` (``raise ... from exc``); errors of our own tree raised inside the
block pass through untouched.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import psycopg
from psycopg import errors as pg

from ..errors import AgentXMemoryError, ConflictError, StorageError, StorageUnavailableError

__all__ = ["pg_errors", "wrap_pg_error"]

# A write that collides with stored state: the caller's input conflicts, so retrying it cannot help.
_CONFLICTS = (pg.UniqueViolation, pg.ExclusionViolation, pg.ForeignKeyViolation)

# SQLSTATE class 40: the server rolled the transaction back because of concurrent ones (psycopg does not derive
# SerializationFailure and DeadlockDetected from TransactionRollback; all three are OperationalError). Not a conflict
# of the caller's input (ingest reports a ConflictError as a bad line) and not an unreachable server: a StorageError
# that says a retry may succeed.
_ROLLED_BACK = (pg.TransactionRollback, pg.SerializationFailure, pg.DeadlockDetected)


# SQLSTATE class 54, "program limit exceeded": a value or statement past one of PostgreSQL's limits (a tsvector's 1 MB,
# the stack depth of a deeply nested query). psycopg makes them OperationalErrors, which read as an unreachable server;
# it is the input that no retry mends.
_PAST_A_LIMIT = "54"


def wrap_pg_error(exc: BaseException, what: str) -> AgentXMemoryError:
    """The agentx error for a psycopg error (or an ``OSError``) raised while doing ``what``."""
    if isinstance(exc, _CONFLICTS):
        return ConflictError(f"PostgreSQL refused a conflicting write while {what}: {exc}")
    if isinstance(exc, _ROLLED_BACK):
        return StorageError(
            f"PostgreSQL rolled back a transaction that raced with others while {what} (retrying may succeed): {exc}"
        )
    if isinstance(exc, psycopg.Error) and (exc.sqlstate or "").startswith(_PAST_A_LIMIT):
        return StorageError(f"PostgreSQL refused a value or statement past one of its limits while {what} (retrying "
                            f"cannot help): {exc}")
    if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError, OSError)):
        return StorageUnavailableError(f"PostgreSQL unavailable while {what}: {exc}")
    return StorageError(f"PostgreSQL failed while {what}: {exc}")


@asynccontextmanager
async def pg_errors(what: str) -> AsyncIterator[None]:
    """Map psycopg exceptions (and ``OSError``) raised inside the block with :func:`wrap_pg_error`; ``what`` says
    what was being done ("writing memory_timeline") and goes into the message."""
    try:
        yield
    except (psycopg.Error, OSError) as exc:
        raise wrap_pg_error(exc, what) from exc

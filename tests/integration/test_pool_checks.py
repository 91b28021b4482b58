"""The PostgreSQL pool's check before a connection is handed out: every write pays it, a read on a connection that
answered moments ago does not (``PostgresStore.read``; a dead one is read again, see test_outages.py)."""

from __future__ import annotations

import contextvars
import time

from psycopg_pool import AsyncConnectionPool

from agentx_memory import AgentMemory
from agentx_memory.sql import postgres


def test_a_read_skips_the_pools_check_on_a_connection_just_returned_and_a_write_never_does(settings, monkeypatch):
    checks: list[str] = []
    real_check = AsyncConnectionPool.check_connection

    async def counted(conn):  # the library's own check, counted
        checks.append("check")
        await real_check(conn)

    with AgentMemory(settings(), user_id="alice") as memory:
        store = memory.core.ctx.postgres
        run = memory._portal.run
        run(store.read("SELECT 1 AS one"))  # the connection answered: it is trusted for the next moments
        monkeypatch.setattr(AsyncConnectionPool, "check_connection", staticmethod(counted))
        assert run(store.read("SELECT 2 AS two")) == [{"two": 2}]
        assert checks == []
        run(store.fetch("SELECT 3 AS three"))  # fetch may write: always checked
        run(store.execute("SELECT 4"))
        assert checks == ["check", "check"]
        # past the window a read is checked again
        time.sleep(postgres.TRUST_ANSWERED_SECONDS + 0.2)
        run(store.read("SELECT 5 AS five"))
        assert checks == ["check", "check", "check"]


def test_a_read_closed_from_another_context_closes_quietly_and_the_store_reads_on(settings):
    """A read coroutine its task abandoned is closed by the GC in whatever Context it runs: resetting the read's
    Context variable there raised ValueError ("was created in a different Context") out of ``close()``."""
    with AgentMemory(settings(), user_id="alice") as memory:
        store = memory.core.ctx.postgres

        async def scenario() -> list[dict[str, object]]:
            read = store.read("SELECT pg_sleep(0.3) AS slept")
            contextvars.copy_context().run(read.send, None)  # started in a Context of its own, as a task's
            read.close()  # closed from this one, as the GC closes an abandoned coroutine
            return await store.read("SELECT 1 AS one")

        assert memory._portal.run(scenario()) == [{"one": 1}]

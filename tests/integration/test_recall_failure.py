"""A recall that fails leaves none of its reads running: the error reaches the caller once the reads that ran beside
the failed one have ended (``agentx_memory.gathering``). With ``asyncio.gather`` they ran on, orphaned: a turn search
waiting for a lock went on waiting, on one of the pool's connections, after the recall had returned its error."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from agentx_memory import AgentMemory, Turn
from agentx_memory.errors import AgentXMemoryError

REF = datetime(2024, 5, 10, 12, 0, tzinfo=UTC)

#: The statements of this namespace's pool waiting for a lock on the turns' log.
WAITING = """
SELECT count(*) AS n FROM pg_locks
WHERE relation = (SELECT oid FROM pg_class WHERE relname = 'conversation_logs'
                  AND relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = %s))
  AND NOT granted
"""


def test_a_failed_recall_leaves_no_read_of_its_own_running(settings, embedded_stack):
    s = settings()
    dsn = embedded_stack[1].postgres_dsn
    with AgentMemory(s, user_id="alice") as memory:
        memory.store_turns([Turn(conversation_id="c", user_id="alice", content=f"Hike {n} on the ridge trail.",
                                 timestamp=REF - timedelta(hours=n)) for n in range(20)])
        postgres = memory.core.ctx.postgres
        # the timeline's lexical search, run beside the turn search, fails at once ...
        memory._portal.run(postgres.execute("ALTER TABLE memory_timeline RENAME TO memory_timeline_away"))
        with psycopg.connect(dsn, autocommit=False) as holder:
            # ... while the turn search waits for the log, which another session has locked
            holder.execute(f'LOCK TABLE "{s.postgres.db_schema}".conversation_logs IN ACCESS EXCLUSIVE MODE')
            with pytest.raises(AgentXMemoryError):
                memory.remember("Which trail did I hike?", user_id="alice", top_k=5, reference_time=REF)
            with psycopg.connect(dsn, autocommit=True) as observer:
                waiting = observer.execute(WAITING, (s.postgres.db_schema,)).fetchone()
            holder.rollback()
        memory._portal.run(postgres.execute("ALTER TABLE memory_timeline_away RENAME TO memory_timeline"))
        assert waiting == (0,)
        memory.remember("Which trail did I hike?", user_id="alice", top_k=5, reference_time=REF)

"""PostgreSQL connection pool and the migrations runner.

Migrations are numbered SQL files (``schema/postgres/NNNN_name.sql``, shipped in the wheel as
``agentx_memory/_schema``). :func:`migrate` applies the pending ones in order, each in its own transaction, under an
advisory lock (so two processes migrating at once apply each file exactly once), and records them in
``schema_version``. Running it twice is a no-op.
"""

from __future__ import annotations

import asyncio
import re
import time
import weakref
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Final, TypeAlias

import psycopg
from pgvector import Vector
from pgvector.psycopg import register_vector_async
from pgvector.psycopg.vector import VectorBinaryLoader, VectorLoader
from psycopg import sql
from psycopg.abc import QueryNoTemplate
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from ..errors import EmbeddingDimensionMismatchError, StorageError
from .errors import pg_errors, wrap_pg_error
from .schema_version import MAX_VERSION, PRESENT

__all__ = [
    "Connection", "Params", "PostgresStore", "Query", "drop_schema", "migrate", "pending_migrations", "schema_dir",
]

#: A statement: a constant (``Final[LiteralString]`` in the repositories) or one composed with :mod:`psycopg.sql`.
Query: TypeAlias = QueryNoTemplate
#: Positional (``%s``) or named (``%(name)s``) parameters of a statement.
Params: TypeAlias = Sequence[Any] | Mapping[str, Any]
#: A pooled connection: rows come back as dicts.
Connection: TypeAlias = psycopg.AsyncConnection[DictRow]

#: A pooled connection that answered a statement less than this many seconds ago goes out again for a read without the
#: pool's check (an empty statement: one round trip before every statement). A read that finds it dead runs again on a
#: checked connection.
TRUST_ANSWERED_SECONDS: Final = 2.0

# Set while PostgresStore.read takes its connection: the pool's check runs in the caller's task, so it sees this.
_trust_answered: ContextVar[bool] = ContextVar("agentx_trust_answered", default=False)


class _ConnectionLost(Exception):
    """A read's connection turned out dead (the server restarted since it was last used): read again."""


_MIGRATION_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_LOCK_KEY = 0x61677478  # "agtx": one advisory lock id for migrations


def schema_dir() -> Path:
    """Directory holding ``postgres/`` and ``graph/`` schema files: in the wheel, or the source checkout."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_schema", here.parent / "schema"):
        if (candidate / "postgres").is_dir():
            return candidate
    raise StorageError(f"schema files not found next to {here} (looked for _schema/ and ../schema/)")


def _migrations() -> list[tuple[int, str, Path]]:
    found = []
    for path in sorted((schema_dir() / "postgres").iterdir()):
        match = _MIGRATION_FILE.match(path.name)
        if match:
            found.append((int(match.group(1)), match.group(2).replace("_", " "), path))
    return found


def _conninfo_kwargs(db_schema: str) -> dict[str, Any]:
    return {"options": f"-c search_path={db_schema},public"}


async def pending_migrations(dsn: str, db_schema: str) -> list[int]:
    """Versions not yet applied in this schema."""
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True, **_conninfo_kwargs(db_schema)) as conn:
        exists = await (await conn.execute("SELECT to_regclass('schema_version') IS NOT NULL")).fetchone()
        applied: set[int] = set()
        if exists and exists[0]:
            applied = {row[0] for row in await (await conn.execute("SELECT version FROM schema_version")).fetchall()}
    return [version for version, _, _ in _migrations() if version not in applied]


async def migrate(dsn: str, db_schema: str, *, dimension: int, model: str) -> list[int]:
    """Apply pending migrations to ``db_schema``; return the versions applied (empty when up to date).

    Raises :class:`EmbeddingDimensionMismatchError` when the schema was created for another embedding model or
    dimension.
    """
    dimension = int(dimension)
    applied_now: list[int] = []
    async with pg_errors("migrating"), await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
        try:
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public")
            await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(db_schema)))
            await conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(db_schema)))
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version ("
                " version INTEGER PRIMARY KEY, description TEXT NOT NULL,"
                " applied_at TIMESTAMPTZ NOT NULL DEFAULT NOW())"
            )
            done = {r[0] for r in await (await conn.execute("SELECT version FROM schema_version")).fetchall()}
            for version, description, path in _migrations():
                if version in done:
                    continue
                text = path.read_text(encoding="utf-8").replace(":embedding_dim", str(dimension))
                async with conn.transaction():
                    await conn.execute(text.encode())
                    await conn.execute(
                        "INSERT INTO schema_version (version, description) VALUES (%s, %s)", (version, description)
                    )
                applied_now.append(version)
            await _check_embedding_meta(conn, dimension=dimension, model=model)
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))
    return applied_now


async def _check_embedding_meta(conn: psycopg.AsyncConnection, *, dimension: int, model: str) -> None:
    value = {"model": model, "dimension": dimension}
    await conn.execute(
        "INSERT INTO agentx_meta (key, value) VALUES ('embedding', %s::jsonb) ON CONFLICT (key) DO NOTHING",
        (Jsonb(value),),
    )
    row = await (await conn.execute("SELECT value FROM agentx_meta WHERE key = 'embedding'")).fetchone()
    stored = row[0] if row else {}
    if stored.get("dimension") != dimension or stored.get("model") != model:
        raise EmbeddingDimensionMismatchError(
            f"PostgreSQL schema was created with embedding model {stored.get('model')!r} "
            f"(dimension {stored.get('dimension')}); configured now: {model!r} (dimension {dimension}); set it back, "
            "or re-embed the memory with the old model set (agentx-memory reembed, docs/reembed.md)"
        )


async def drop_schema(dsn: str, db_schema: str) -> None:
    """Drop ``db_schema`` and everything in it (``DROP SCHEMA IF EXISTS … CASCADE``) on the server at ``dsn``.

    The PostgreSQL step of :func:`agentx_memory.backends.drop_namespace`, on a bare connection (no pool, no
    search_path); it works on any server, embedded or not. Driver errors come out as :class:`StorageError`.
    """
    statement = sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(db_schema))
    async with pg_errors(f"dropping schema {db_schema}"), await psycopg.AsyncConnection.connect(
        dsn, autocommit=True
    ) as conn:
        await conn.execute(statement)


class _VectorAsList(VectorLoader):
    """Loads a pgvector ``vector`` as ``list[float]``: no pgvector type leaves this adapter."""

    def load(self, data: Any) -> list[float]:  # type: ignore[override]  # a list on purpose, not a Vector
        if isinstance(data, memoryview):
            data = data.tobytes()
        return Vector.from_text(data.decode("utf8")).to_list()


class _VectorAsListBinary(VectorBinaryLoader):
    """The binary-format twin of :class:`_VectorAsList` (for cursors that fetch in binary)."""

    def load(self, data: Any) -> list[float]:  # type: ignore[override]  # a list on purpose, not a Vector
        return Vector.from_binary(data).to_list()


class PostgresStore:
    """A pooled async connection to the agentx schema (``psycopg_pool``), with pgvector types registered.

    Rows come back as dicts. Use :meth:`connection` for a transaction spanning several statements.

    Waits are bounded: opening a connection takes at most ``connect_timeout`` seconds, and a call waits at most
    ``pool_timeout`` seconds for a working connection, then raises
    :class:`~agentx_memory.errors.StorageUnavailableError`. A pooled connection is checked before it is handed out,
    so the first call after a server restart gets a fresh connection instead of failing on a dead one (the first dead
    one found has every idle connection checked at once); :meth:`read` skips the check for a connection that answered
    within :data:`TRUST_ANSWERED_SECONDS` and, should that one be dead, reads again on a checked connection (a read
    can run twice; a write is never sent on an unchecked one).
    """

    def __init__(self, dsn: str, *, db_schema: str = "public", min_size: int = 1, max_size: int = 10,
                 connect_timeout: int = 5, pool_timeout: float = 10.0):
        self.dsn = dsn
        self.db_schema = db_schema
        self.pool_timeout = pool_timeout
        # when each pooled connection last answered a statement of fetch/read/execute (no await: no pool timing moves)
        self._answered: weakref.WeakKeyDictionary[Connection, float] = weakref.WeakKeyDictionary()
        self._sweep: asyncio.Future[None] | None = None

        async def configure(conn: Connection) -> None:
            await register_vector_async(conn)
            conn.adapters.register_loader("vector", _VectorAsList)
            conn.adapters.register_loader("vector", _VectorAsListBinary)
            # HNSW scans with a WHERE filter keep going until enough rows pass it (pgvector 0.8): a user filter
            # must never starve the result of a shared index.
            await conn.execute("SET hnsw.iterative_scan = relaxed_order")

        self.pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
            dsn,
            connection_class=Connection,
            min_size=min_size,
            max_size=max_size,
            kwargs={"row_factory": dict_row, "autocommit": True, "connect_timeout": connect_timeout,
                    **_conninfo_kwargs(db_schema)},
            configure=configure,
            check=self._check,
            timeout=pool_timeout,
            # Refilling the pool backs off (1 s, 2 s, 4 s …) while the server is away; stopping after pool_timeout
            # means the first call after a restart connects at once instead of waiting out the backoff (and failing).
            reconnect_timeout=pool_timeout,
            open=False,
        )

    async def _check(self, conn: Connection) -> None:
        # The pool's check before it hands a connection out, except for a read on one that answered just now.
        if _trust_answered.get():
            answered = self._answered.get(conn)
            if answered is not None and time.monotonic() - answered < TRUST_ANSWERED_SECONDS:
                return
        try:
            await AsyncConnectionPool.check_connection(conn)
        except Exception:
            # A dead connection means the server went away: check every idle one now. The pool's loop sleeps after
            # each failed check (0 s, 1 s, 2 s, 4 s …), so meeting five dead connections one by one outlasts the pool
            # wait; after this sweep the next connection it takes is live or a fresh one.
            await self._sweep_idle()
            raise

    async def _sweep_idle(self) -> None:
        # One sweep at a time, shared by every caller whose check failed; shielded, so a caller's deadline cannot
        # cancel it midway and strand the connections it took out of the pool.
        if self._sweep is None or self._sweep.done():
            self._sweep = asyncio.ensure_future(self.pool.check())
        await asyncio.shield(self._sweep)

    async def open(self) -> None:
        """Open the pool (waits for the first connection)."""
        try:
            await self.pool.open(wait=True, timeout=self.pool_timeout)
        except Exception as exc:
            raise wrap_pg_error(exc, "opening the connection pool") from exc

    async def close(self) -> None:
        """Close every pooled connection."""
        await self.pool.close()

    def connection(self) -> AbstractAsyncContextManager[Connection]:
        """``async with store.connection() as conn:`` a pooled connection (autocommit; use ``conn.transaction()``).

        Wrap it in :func:`~agentx_memory.sql.errors.pg_errors` so a failure leaves as an agentx error."""
        return self.pool.connection()

    async def fetch(self, query: Query, params: Params | None = None, *,
                    what: str = "querying") -> list[dict[str, Any]]:
        """Run a statement and return all rows as dicts; ``what`` names the work in an error's message."""
        async with pg_errors(what), self.pool.connection() as conn:
            return await self._rows(conn, query, params)

    async def _rows(self, conn: Connection, query: Query, params: Params | None) -> list[dict[str, Any]]:
        # The statement's rows; the connection is noted as one that just answered (see _check).
        cur = await conn.execute(query, params)
        rows = await cur.fetchall() if cur.description else []
        self._answered[conn] = time.monotonic()
        return rows

    async def read(self, query: Query, params: Params | None = None, *,
                   what: str = "querying") -> list[dict[str, Any]]:
        """:meth:`fetch` for a statement that only reads, so it may run twice: on a connection that answered within
        :data:`TRUST_ANSWERED_SECONDS` without the pool's check (the round trip recall's reads paid before each
        statement), and once more on a checked connection should that one have died with a restarted server."""
        async with pg_errors(what):
            token = _trust_answered.set(True)
            try:
                return await self._read_once(query, params)
            except _ConnectionLost:
                pass
            finally:
                # A read coroutine closed from another Context (one its task abandoned, closed by the GC) cannot reset
                # the token there, and the Context that holds the flag is its own, gone with it.
                with suppress(ValueError):
                    _trust_answered.reset(token)
            return await self.fetch(query, params, what=what)

    async def _read_once(self, query: Query, params: Params | None) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn:
            try:
                return await self._rows(conn, query, params)
            except psycopg.OperationalError as exc:
                if conn.broken:
                    raise _ConnectionLost from exc
                raise

    async def fetch_pages(self, query: Query, params: dict[str, Any], *, page_size: int,
                          what: str = "writing") -> list[dict[str, Any]]:
        """Run a statement that handles one page of at most ``%(limit)s`` rows (a paged delete) until a page comes
        back short; return the rows of every page. Each page is its own transaction, so locks stay short."""
        rows: list[dict[str, Any]] = []
        while True:
            page = await self.fetch(query, {**params, "limit": page_size}, what=what)
            rows += page
            if len(page) < page_size:
                return rows

    async def execute(self, query: Query, params: Params | None = None, *, what: str = "writing") -> int:
        """Run a statement; return the affected row count."""
        async with pg_errors(what), self.pool.connection() as conn:
            cur = await conn.execute(query, params)
            self._answered[conn] = time.monotonic()
            return cur.rowcount

    async def executemany(self, query: Query, params: Sequence[Params], *, what: str = "writing") -> None:
        """Run a statement once per parameter set on one connection (pipelined by psycopg)."""
        async with pg_errors(what), self.pool.connection() as conn, conn.cursor() as cur:
            await cur.executemany(query, params)

    async def schema_version(self) -> int | None:
        """Highest applied migration version, or None when the schema is not migrated."""
        exists = await self.fetch(PRESENT)
        if not exists[0]["present"]:
            return None
        rows = await self.fetch(MAX_VERSION)
        return rows[0]["v"]

"""The package's shape, checked from its source: ``agentx_memory/sql/`` is the one place that speaks PostgreSQL.

* No module outside ``sql/`` imports a PostgreSQL driver (psycopg, psycopg_pool, pgvector), except the few listed in
  :data:`DRIVER_ALLOWED` with the reason they need one.
* No module outside ``sql/`` holds SQL text in a string literal (docstrings aside), except :data:`SQL_ALLOWED`.
* No module outside ``sql/`` runs statements on the pool itself (``….postgres.fetch(…)``), except
  :data:`POOL_ALLOWED`: the memory subsystems go through the repositories on ``ctx.sql``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "agentx_memory"

DRIVERS = frozenset({"psycopg", "psycopg_pool", "pgvector"})

#: Modules (paths relative to the package; a trailing "/" means a whole subpackage) that may import a driver.
DRIVER_ALLOWED = {
    "sql/": "the PostgreSQL port itself",
    "runtime/postgres.py": "server management: probes the embedded server and creates its database on a bare"
                           " connection, before any pool exists",
    "bench/": "benchmark floors bypass the engine on purpose (raw COPY and pgvector queries to measure against)",
}

#: Modules that may hold SQL text.
SQL_ALLOWED = {
    "sql/": "the PostgreSQL port itself",
    "runtime/": "server management: health probes (SELECT 1) on the embedded server",
    "bench/": "benchmark floors and baselines query PostgreSQL directly on purpose",
    "providers/embeddings.py": "the embedding cache is a local SQLite file, not PostgreSQL",
}

#: Modules that may run statements through ``ctx.postgres`` instead of a repository.
POOL_ALLOWED = {
    "bench/": "benchmarks time raw statements on the engine's own pool and read its tables directly",
}

#: SQL statements as they are written in this code base (upper-case keywords).
SQL_TEXT = re.compile(r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM)\b")

POOL_METHODS = frozenset({"fetch", "execute", "executemany", "connection"})


def driver_imports(source: str) -> list[str]:
    """The PostgreSQL drivers a module imports (``import psycopg``, ``from psycopg.types.json import Jsonb`` …)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] in DRIVERS]
        elif (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
              and node.module.split(".")[0] in DRIVERS):
            found.append(node.module)
    return found


def sql_literals(source: str) -> list[str]:
    """String literals (f-string parts included, docstrings left out) that contain SQL text."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value) for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
        and SQL_TEXT.search(node.value)
    ]


def pool_calls(source: str) -> list[str]:
    """Calls of the pool's own methods through a ``postgres`` attribute (``self.ctx.postgres.fetch`` …)."""
    return [
        f"postgres.{node.attr}" for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr in POOL_METHODS
        and isinstance(node.value, ast.Attribute) and node.value.attr == "postgres"
    ]


def _modules() -> list[str]:
    return sorted(path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py"))


def _allowed(module: str, allowed: dict[str, str]) -> bool:
    return any(module == entry or (entry.endswith("/") and module.startswith(entry)) for entry in allowed)


def _violations(check, allowed: dict[str, str]) -> dict[str, list[str]]:
    found = {}
    for module in _modules():
        if not _allowed(module, allowed):
            hits = check((PACKAGE / module).read_text(encoding="utf-8"))
            if hits:
                found[module] = hits
    return found


def test_only_the_sql_package_imports_a_postgres_driver():
    assert _violations(driver_imports, DRIVER_ALLOWED) == {}


def test_no_sql_text_outside_the_sql_package():
    found = _violations(sql_literals, SQL_ALLOWED)
    assert found == {}, {module: [text[:80] for text in texts] for module, texts in found.items()}


def test_memory_subsystems_use_repositories_not_the_pool():
    assert _violations(pool_calls, POOL_ALLOWED) == {}


@pytest.mark.parametrize(("check", "allowed"), [
    (driver_imports, DRIVER_ALLOWED), (sql_literals, SQL_ALLOWED), (pool_calls, POOL_ALLOWED),
], ids=["driver", "sql-text", "pool"])
def test_every_allowance_is_still_needed(check, allowed):
    # an exception nobody uses any more only hides the next module that would need one: remove it
    for entry in allowed:
        users = [module for module in _modules() if _allowed(module, {entry: ""})
                 and check((PACKAGE / module).read_text(encoding="utf-8"))]
        assert users, f"{entry!r} is allowed but no module under it needs the allowance any more"


# The checks themselves, on the kinds of code they must catch (and the docstrings they must not).

@pytest.mark.parametrize("source", [
    "import psycopg",
    "import psycopg.errors",
    "from psycopg.types.json import Jsonb",
    "from pgvector.psycopg import register_vector_async",
    "def f():\n    from psycopg_pool import AsyncConnectionPool",
])
def test_driver_imports_are_found(source):
    assert driver_imports(source)


def test_relative_imports_of_the_sql_package_are_not_driver_imports():
    assert driver_imports("from .sql.postgres import PostgresStore\nfrom .sql import search") == []


@pytest.mark.parametrize("source", [
    '_Q = ("INSERT INTO memory_timeline (user_id)"\n      " VALUES (%s)")',
    'rows = fetch(f"SELECT {cols} FROM conversation_logs WHERE id = %s", (1,))',
    'q = "UPDATE conversation_logs SET projected = TRUE"',
    'q = "DELETE FROM tool_invocations WHERE user_id = %s"',
])
def test_sql_text_is_found(source):
    assert sql_literals(source)


def test_docstrings_and_prose_are_not_sql_text():
    source = '"""Module: INSERT INTO memory_timeline happens in sql/."""\n' \
             'def f():\n    """SELECT the best."""\n    return "select a tool, update the profile"\n'
    assert sql_literals(source) == []


def test_pool_calls_are_found():
    assert pool_calls("async def f(self):\n    await self.ctx.postgres.fetch(Q, ())") == ["postgres.fetch"]
    assert pool_calls("async def f(self):\n    await self.ctx.sql.timeline.write([])") == []

"""Startup stays light: ``import agentx_memory`` and the CLI's parser load no engine, driver or numeric library.

Issue 17 wants ``agentx-memory --help`` and ``status`` to start in 0.3 s; that figure is measured in
``docs/benchmarks.md`` (CLI startup), not here. These tests guard its cause instead: each runs a fresh interpreter
(``sys.modules`` of this one is full of whatever earlier tests imported) and lists which heavy modules got loaded.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import agentx_memory

ROOT = Path(__file__).resolve().parents[2]

#: What the engine and its drivers pull in; none of it is needed to import the package or to print help.
HEAVY = (
    "agentx_memory.memory", "agentx_memory.runtime", "agentx_memory.bench", "agentx_memory.graph",
    "agentx_memory.retrieval", "agentx_memory.sql", "agentx_memory.settings", "agentx_memory.models",
    "numpy", "psycopg", "psycopg_pool", "neo4j", "falkordb", "redis", "pydantic", "pydantic_settings", "rich.table",
    "asyncio",  # 20-30 ms: half of what --help took when the serve and keys commands imported it for their parser
)
#: ``status`` reads the settings (pydantic) and prints a rich table; with its servers stopped it has nobody to talk
#: to, so no database client (psycopg reads the schema version once PostgreSQL runs; FalkorDB is probed through
#: agentx_memory.runtime.resp, see tests/integration/test_status_probe.py) and no engine. The settings read the
#: environment themselves (agentx_memory.settings_env): pydantic-settings and the asyncio it imports cost 60-110 ms.
HEAVY_FOR_STATUS = (
    "agentx_memory.memory", "agentx_memory.bench", "agentx_memory.graph", "agentx_memory.retrieval",
    "agentx_memory.sql", "agentx_memory.models", "numpy", "neo4j", "falkordb", "redis", "psycopg", "psycopg_pool",
    "pydantic_settings", "asyncio", "filelock",
)

PROBE = """
import contextlib, io, json, sys
{setup}
print(json.dumps(sorted(name for name in {heavy!r} if name in sys.modules)))
"""

RUN_CLI = """
from agentx_memory.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main({argv!r})
    except SystemExit:
        pass
"""


def loaded_after(setup: str, heavy: tuple[str, ...] = HEAVY, home: Path | None = None) -> list[str]:
    """The modules of ``heavy`` present in ``sys.modules`` after a fresh interpreter ran ``setup``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTX_")}  # no configured services
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if home is not None:
        env["AGENTX_HOME"] = str(home)
    done = subprocess.run([sys.executable, "-c", PROBE.format(setup=setup, heavy=heavy)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_the_package_loads_none_of_the_engine():
    assert loaded_after("import agentx_memory") == []


def test_building_the_parser_loads_none_of_the_engine():
    assert loaded_after("from agentx_memory.cli import build_parser; build_parser()") == []


@pytest.mark.parametrize("argv", [["--help"], ["status", "--help"], ["bench", "scale", "--help"]])
def test_help_loads_none_of_the_engine(argv):
    assert loaded_after(RUN_CLI.format(argv=argv)) == []


def test_status_on_stopped_servers_loads_no_client_engine_or_numpy(tmp_path):
    assert loaded_after(RUN_CLI.format(argv=["status", "--json"]), HEAVY_FOR_STATUS, home=tmp_path / "home") == []


def test_the_pool_module_loads_no_repository():
    """``status`` on a running PostgreSQL reads the schema version through :class:`PostgresStore` alone."""
    heavy = ("agentx_memory.sql.conversation_log", "agentx_memory.sql.search", "agentx_memory.models", "numpy")
    assert loaded_after("from agentx_memory.sql.postgres import PostgresStore", heavy) == []


def test_every_name_of_the_sql_package_resolves_to_the_object_of_its_module():
    sql = importlib.import_module("agentx_memory.sql")
    assert set(sql._EXPORTS) == set(sql.__all__) - {"Repositories"}
    assert set(sql.__all__) <= set(dir(sql))
    for name in sql._EXPORTS:
        assert getattr(sql, name) is getattr(importlib.import_module(sql._EXPORTS[name], sql.__name__), name), name


def test_every_public_name_resolves_to_the_object_of_its_module():
    for name in agentx_memory.__all__:
        value = getattr(agentx_memory, name)
        module = importlib.import_module(agentx_memory._EXPORTS[name], "agentx_memory")
        assert value is getattr(module, name), name


def test_public_names_are_listed_and_importable_the_usual_ways():
    assert set(agentx_memory.__all__) <= set(dir(agentx_memory))
    assert set(agentx_memory._EXPORTS) == set(agentx_memory.__all__)
    namespace: dict[str, object] = {}
    exec("from agentx_memory import *", namespace)
    assert {name for name in namespace if not name.startswith("__")} == set(agentx_memory.__all__)
    from agentx_memory import AgentMemory, Turn
    from agentx_memory.memory import AgentMemory as Defined
    from agentx_memory.models import Turn as DefinedTurn
    assert AgentMemory is Defined and Turn is DefinedTurn


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        agentx_memory.NoSuchThing  # noqa: B018
    with pytest.raises(ImportError):
        exec("from agentx_memory import NoSuchThing", {})

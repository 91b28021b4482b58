"""docs/configuration.md lists every setting of the model, as scripts/gen_config_doc.py renders it."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import Field, create_model

from agentx_memory.settings import Settings, not_used_yet, planned_in

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "configuration.md"
SCRIPT = REPO / "scripts" / "gen_config_doc.py"


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("gen_config_doc", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _every_setting():
    for section, field in Settings.model_fields.items():
        for name, sub in field.annotation.model_fields.items():
            yield section, name, sub


def test_configuration_doc_is_up_to_date(gen):
    text = DOC.read_text(encoding="utf-8")
    assert gen.update(text) == text, "docs/configuration.md is out of date: run `python scripts/gen_config_doc.py`"


def test_every_setting_has_a_row_with_its_env_var_and_default(gen):
    rows = {line.split("|")[1].strip(): line for line in DOC.read_text(encoding="utf-8").splitlines()
            if line.startswith("| `")}
    for section, name, field in _every_setting():
        row = rows.get(f"`{section}.{name}`")
        assert row, f"{section}.{name} is missing from docs/configuration.md"
        assert f"`AGENTX_{section.upper()}__{name.upper()}`" in row
        assert field.description and field.description.split()[0] in row, f"{section}.{name} needs a description"


def test_rows_show_defaults_and_ranges(gen):
    text = gen.render_settings()
    assert "| `retrieval.episodic_weight` | `AGENTX_RETRIEVAL__EPISODIC_WEIGHT` | `0.3` | number in [0, 1] |" in text
    assert "| `decay.rate` | `AGENTX_DECAY__RATE` | `0.95` | number in (0, 1) |" in text
    assert "| `working.ttl_seconds` | `AGENTX_WORKING__TTL_SECONDS` | `3600` | integer in [1, 2592000] |" in text
    assert "| `audit.level` | `AGENTX_AUDIT__LEVEL` | `writes` | one of `off`, `writes`, `reads`, `verbose` |" in text
    assert "| `embedded.home` | `AGENTX_EMBEDDED__HOME` | `.agentx` | path |" in text
    assert "| `llm.allow_paid_calls` | `AGENTX_LLM__ALLOW_PAID_CALLS` | `true` | `true` or `false` |" in text


def test_allowed_values_of_odd_fields(gen):
    model = create_model(
        "Odd",
        above=(float, Field(1.0, gt=0)),
        below=(int, Field(1, lt=10)),
        short=(str, Field("x", max_length=3)),
        piped=(str, Field("a|b", description="one | two")),
    )
    f = model.model_fields
    assert gen.allowed(f["above"]) == "number in (0, ∞)"
    assert gen.allowed(f["below"]) == "integer in (-∞, 10)"
    assert gen.allowed(f["short"]) == "string, at most 3 characters"
    assert gen._cell("one | two") == "one \\| two"


def test_the_doc_explains_home_dotenv_and_service_uris():
    text = DOC.read_text(encoding="utf-8")
    for needle in (
        "AGENTX_HOME",
        ".env",
        "AGENTX_GRAPH__URI",
        "AGENTX_POSTGRES__DSN",
        "AGENTX_REDIS__URL",
        "bolt://",
        "neo4j://",
        "falkor://",
        "redis://",
        "EmbeddingDimensionMismatchError",
        "ConfigurationError",
    ):
        assert needle in text, needle


def test_check_mode_fails_on_a_stale_doc(tmp_path, gen, monkeypatch):
    stale = tmp_path / "configuration.md"
    stale.write_text(DOC.read_text(encoding="utf-8").replace("`0.95`", "`0.5`"), encoding="utf-8")
    monkeypatch.setattr(gen, "DOC", stale)
    monkeypatch.setattr(gen, "REPO", tmp_path)
    assert gen.main(["--check"]) == 1
    assert gen.main([]) == 0  # rewrites it
    assert gen.main(["--check"]) == 0
    assert stale.read_text(encoding="utf-8") == DOC.read_text(encoding="utf-8")


def test_script_runs_as_a_command():
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr


def _names_the_code_reads() -> set[str]:
    """Attribute names and string constants in the engine and worker code (the benchmarks aside); in settings.py only
    what its methods read from ``self`` (a derived value such as ``candidate_pool`` reads a setting there)."""
    names: set[str] = set()
    for root in (REPO / "agentx_memory", REPO / "workers"):
        for path in root.rglob("*.py"):
            if "bench" in path.relative_to(REPO).parts:
                continue
            in_settings = path.name == "settings.py"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute):
                    if not in_settings or (isinstance(node.value, ast.Name) and node.value.id == "self"):
                        names.add(node.attr)
                elif isinstance(node, ast.Constant) and isinstance(node.value, str) and not in_settings:
                    names.add(node.value)
    return names


def test_a_setting_documented_as_working_is_read_by_the_code():
    read = _names_the_code_reads()
    unread = [f"{s}.{n}" for s, n, field in _every_setting() if planned_in(field) is None and n not in read]
    assert not unread, f"read by no code, yet documented as working (mark them not_used_yet(issue)): {unread}"


def test_a_setting_marked_not_used_yet_is_not_read_yet():
    read = _names_the_code_reads()
    used = [f"{s}.{n}" for s, n, field in _every_setting() if planned_in(field) is not None and n in read]
    assert not used, f"marked not_used_yet but read by the code now (remove the mark, update the docs): {used}"


def test_a_setting_not_used_yet_says_so_in_the_docs(gen, monkeypatch):
    planned = create_model("Planned", later=(int, Field(1, description="a later knob",
                                                        json_schema_extra=not_used_yet(99))))
    monkeypatch.setattr(gen, "sections", lambda: [("future", planned)])
    row = next(line for line in gen.render_settings().splitlines() if line.startswith("| `future.later` |"))
    assert "**Not used yet** (lands with issue 99): a later knob" in row

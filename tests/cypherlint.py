"""Lint Cypher with Neo4j's own Cypher front end (npm ``@neo4j-cypher/language-support``), without a Neo4j server.

``lint_statements(statements)`` runs ``node tests/cypher_lint/lint.mjs`` once for the whole batch and returns, per
statement, the linter's diagnostics as dicts ``{"severity", "message", "offsets": {"start", "end"}, "line",
"column"}`` (severity is ``"error"``, ``"warning"``, ``"information"`` or ``"hint"``; line/column are 1-based).
``errors_of(diagnostics)`` keeps the real errors: every ``"error"`` except the linter's notice for parameters that
are not declared to it (``Parameter $name is not defined.``), since our statements' parameters are sent by the driver.

The catalogue is the package's Neo4j 5 procedure/function catalogue without plugins (no APOC, no GDS); statements
without a ``CYPHER`` prefix are analysed as Cypher 5. Needs ``node`` (>= 20) and ``npm ci --prefix tests/cypher_lint``.

    from tests.cypherlint import lint_statements, errors_of
    for statement, diagnostics in zip(statements, lint_statements(statements)):
        assert not errors_of(diagnostics), (statement, errors_of(diagnostics))
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "PARAMETER_NOT_DEFINED",
    "CypherLintUnavailable",
    "errors_of",
    "is_parameter_notice",
    "lint_statements",
    "lint_unavailable_reason",
]

LINT_DIR = Path(__file__).resolve().parent / "cypher_lint"
SCRIPT = LINT_DIR / "lint.mjs"
PACKAGE = LINT_DIR / "node_modules" / "@neo4j-cypher" / "language-support" / "package.json"
INSTALL_HINT = "run `npm ci --prefix tests/cypher_lint` (from the repository root; needs node >= 20 and npm)"

#: The linter's message for a ``$param`` it was not told about (from ``errorOnUndeclaredParameters``); the only
#: error :func:`errors_of` drops. Matches ``Parameter $user_id is not defined.`` and
#: ``Parameter $`a b` is not defined.``
PARAMETER_NOT_DEFINED = re.compile(r"\AParameter \$.+ is not defined\.\Z", re.DOTALL)

# statement text -> diagnostics, so statements linted by several tests go through node once per test session.
_cache: dict[str, list[dict[str, Any]]] = {}


class CypherLintUnavailable(RuntimeError):
    """node or the npm package is missing, or the linter process failed."""


def _node() -> str | None:
    return os.environ.get("CYPHER_LINT_NODE") or shutil.which("node")


def lint_unavailable_reason() -> str | None:
    """Why the linter cannot run here (``None`` when it can)."""
    if _node() is None:
        return f"`node` is not on PATH: install Node.js (>= 20), then {INSTALL_HINT}"
    if not PACKAGE.is_file():
        return f"the npm package @neo4j-cypher/language-support is not installed in {LINT_DIR}: {INSTALL_HINT}"
    return None


def lint_statements(statements: Iterable[str], *, timeout: float | None = None) -> list[list[dict[str, Any]]]:
    """Lint each statement with Neo4j's Cypher front end; one list of diagnostics per statement, in order.

    One ``node`` process lints every statement not linted before in this Python process. Raises
    :class:`CypherLintUnavailable` when node or the npm package is missing or the linter fails.
    """
    statements = list(statements)
    for s in statements:
        if not isinstance(s, str):
            raise TypeError(f"a Cypher statement must be a str, not {type(s).__name__}: {s!r}")
    todo = list(dict.fromkeys(s for s in statements if s not in _cache))
    if todo:
        reason = lint_unavailable_reason()
        if reason:
            raise CypherLintUnavailable(reason)
        if timeout is None:
            timeout = 120.0 + 1.0 * len(todo)  # ~0.1 s per statement on an idle core; generous for a busy CI
        try:
            proc = subprocess.run(
                [_node(), str(SCRIPT)],
                input=json.dumps(todo),
                capture_output=True,
                text=True,
                encoding="utf-8",
                cwd=LINT_DIR,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise CypherLintUnavailable(
                f"the Cypher linter took more than {timeout:.0f} s for {len(todo)} statements"
            ) from exc
        if proc.returncode != 0:
            raise CypherLintUnavailable(
                f"the Cypher linter exited with {proc.returncode}: {proc.stderr.strip()[-2000:]}"
                + ("\n(" + INSTALL_HINT + ")" if "ERR_MODULE_NOT_FOUND" in proc.stderr else "")
            )
        try:
            results = json.loads(proc.stdout)
        except json.JSONDecodeError as exc:
            raise CypherLintUnavailable(
                f"the Cypher linter printed no JSON: {proc.stdout[:500]!r} {proc.stderr[-1000:]!r}"
            ) from exc
        if not isinstance(results, list) or len(results) != len(todo):
            raise CypherLintUnavailable(f"the Cypher linter returned {len(results)} results for {len(todo)} statements")
        _cache.update(zip(todo, results, strict=True))
    return [[dict(d) for d in _cache[s]] for s in statements]


def is_parameter_notice(diagnostic: dict[str, Any]) -> bool:
    """True for the linter's 'Parameter $x is not defined.' error (parameters are not declared to the linter)."""
    return bool(PARAMETER_NOT_DEFINED.match(diagnostic.get("message", "")))


def errors_of(diagnostics: Iterable[dict[str, Any]]) -> list[str]:
    """The real errors among one statement's diagnostics, as ``"line L, column C: message"`` strings.

    Keeps every diagnostic of severity ``"error"`` except the parameter-not-defined notices; warnings (deprecations,
    cartesian products, ...) are dropped.
    """
    return [
        f"line {d.get('line')}, column {d.get('column')}: {d.get('message')}"
        for d in diagnostics
        if d.get("severity") == "error" and not is_parameter_notice(d)
    ]

#!/usr/bin/env python3
"""Generate the blocking twins of the async API in ``agentx_memory/memory.py``.

The sync classes are written by hand except for one region each, between two markers::

    # BEGIN GENERATED from AsyncAgentMemory by scripts/gen_sync_facade.py: do not edit, rerun the script
    ...
    # END GENERATED from AsyncAgentMemory

For every public ``async def`` of the source class (read from its source file with :mod:`ast`, nothing is imported)
the region gets one method with the same parameters, defaults, annotations and docstring, whose body runs the
coroutine on the facade's portal::

    def store_turn(self, turn: Turn, channel: str | None = None) -> Turn:
        \"\"\"Store one conversation turn: ...\"\"\"
        return self._portal.run(self._core.store_turn(turn, channel))

Lines are wrapped at 120 characters, continuation lines aligned with the opening parenthesis. Methods the sync class
writes by hand (``open``, ``close``) and non-coroutine methods (``working``) are left out. A public coroutine
without annotations or a docstring is an error: the twin would be untyped or undocumented. psycopg
(``tools/async_to_sync.py``) and the neo4j driver (unasync) generate their sync code the same way.

Usage::

    python scripts/gen_sync_facade.py           # rewrite the generated regions of agentx_memory/memory.py
    python scripts/gen_sync_facade.py --check   # exit 1 when a region is stale (tests/unit/test_sync_facade.py)
"""

from __future__ import annotations

import argparse
import ast
import builtins
import difflib
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "agentx_memory"
TARGET = PACKAGE / "memory.py"
WIDTH = 120
METHOD_INDENT = " " * 4
BODY_INDENT = " " * 8


@dataclass(frozen=True)
class Twin:
    """One generated region: the sync twins of ``source_class``'s coroutines inside ``target_class``."""

    source: Path  # the file defining source_class
    source_class: str
    target_class: str  # a class of TARGET holding the region
    core: str  # the expression the twins call the coroutines on
    hand_written: frozenset[str] = frozenset()  # public coroutines the target class implements by hand

    @property
    def begin(self) -> str:
        """The line opening the region."""
        return (f"{METHOD_INDENT}# BEGIN GENERATED from {self.source_class} by scripts/gen_sync_facade.py:"
                " do not edit, rerun the script")

    @property
    def end(self) -> str:
        """The line closing the region."""
        return f"{METHOD_INDENT}# END GENERATED from {self.source_class}"


TWINS = (
    Twin(PACKAGE / "working.py", "WorkingMemory", "SyncWorkingMemory", "self._core"),
    Twin(PACKAGE / "context_window.py", "ContextWindow", "SyncContextWindow", "self._core"),
    Twin(PACKAGE / "router.py", "MemoryRouter", "SyncMemoryRouter", "self._core"),
    Twin(PACKAGE / "memory.py", "AsyncAgentMemory", "AgentMemory", "self._core",
         hand_written=frozenset({"open", "close"})),
)


class GenerationError(Exception):
    """The source cannot be turned into typed, documented twins."""


def _class(tree: ast.Module, name: str, path: Path) -> ast.ClassDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise GenerationError(f"{path.name}: no class {name}")


def public_coroutines(twin: Twin) -> list[ast.AsyncFunctionDef]:
    """The source class's public ``async def`` methods that get a generated twin, in source order."""
    tree = ast.parse(twin.source.read_text(encoding="utf-8"))
    cls = _class(tree, twin.source_class, twin.source)
    return [node for node in cls.body
            if isinstance(node, ast.AsyncFunctionDef) and not node.name.startswith("_")
            and node.name not in twin.hand_written]


def _wrap(prefix: str, items: list[str], suffix: str, where: str) -> list[str]:
    """``prefix`` + the comma-separated ``items`` + ``suffix``, wrapped at WIDTH with continuation lines aligned
    after ``prefix`` (which ends with the opening parenthesis)."""
    lines: list[str] = []
    line = prefix
    for i, item in enumerate(items):
        last = i == len(items) - 1
        piece = item if last else item + ","
        joined = line + piece if line.endswith("(") else line + " " + piece
        if len(joined) + (len(suffix) if last else 0) <= WIDTH or line.endswith("("):
            line = joined
        else:
            lines.append(line)
            line = " " * len(prefix) + piece
    lines.append(line + suffix)
    too_long = [text for text in lines if len(text) > WIDTH]
    if too_long:
        raise GenerationError(f"{where}: cannot wrap within {WIDTH} characters: {too_long[0]!r}")
    return lines


def _text(node: ast.expr, source: str) -> str:
    """An expression as the source writes it (``ast.unparse`` would turn ``""`` into ``''``), or unparsed when it
    spans lines."""
    segment = ast.get_source_segment(source, node)
    return segment if segment is not None and "\n" not in segment else ast.unparse(node)


def _parameter(arg: ast.arg, default: ast.expr | None, source: str, where: str) -> str:
    if arg.annotation is None:
        raise GenerationError(f"{where}: parameter {arg.arg!r} has no annotation")
    text = f"{arg.arg}: {_text(arg.annotation, source)}"
    return text if default is None else f"{text} = {_text(default, source)}"


def _signature_and_call(func: ast.AsyncFunctionDef, source: str, where: str) -> tuple[list[str], list[str]]:
    """The twin's parameter list (as written in its ``def``) and the arguments that pass them on."""
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    if not positional or positional[0].arg != "self":
        raise GenerationError(f"{where}: not an instance method")
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params, call = ["self"], []
    for i, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        if i == 0:
            continue
        params.append(_parameter(arg, default, source, where))
        call.append(arg.arg)
        if args.posonlyargs and arg is args.posonlyargs[-1]:
            params.append("/")
    if args.vararg is not None:
        params.append("*" + _parameter(args.vararg, None, source, where))
        call.append("*" + args.vararg.arg)
    elif args.kwonlyargs:
        params.append("*")
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        params.append(_parameter(arg, kw_default, source, where))
        call.append(f"{arg.arg}={arg.arg}")
    if args.kwarg is not None:
        params.append("**" + _parameter(args.kwarg, None, source, where))
        call.append("**" + args.kwarg.arg)
    return params, call


def _docstring(func: ast.AsyncFunctionDef, source: str, where: str) -> list[str]:
    first = func.body[0] if func.body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str) and first.value.value.strip()):
        raise GenerationError(f"{where}: no docstring")
    if first.col_offset != len(BODY_INDENT):
        raise GenerationError(f"{where}: the docstring is not indented by {len(BODY_INDENT)} spaces")
    segment = ast.get_source_segment(source, first.value)
    assert segment is not None
    return (BODY_INDENT + segment).splitlines()


def render_method(func: ast.AsyncFunctionDef, source: str, twin: Twin) -> list[str]:
    """The lines of one blocking twin."""
    where = f"{twin.source.name}: {twin.source_class}.{func.name}"
    if func.decorator_list:
        raise GenerationError(f"{where}: decorated coroutines are not supported; list it in hand_written")
    if func.returns is None:
        raise GenerationError(f"{where}: no return annotation")
    returns = _text(func.returns, source)
    params, call = _signature_and_call(func, source, where)
    lines = _wrap(f"{METHOD_INDENT}def {func.name}(", params, f") -> {returns}:", where)
    lines += _docstring(func, source, where)
    run = "" if returns == "None" else "return "
    lines += _wrap(f"{BODY_INDENT}{run}self._portal.run({twin.core}.{func.name}(", call, "))", where)
    return lines


def _module_names(tree: ast.Module) -> set[str]:
    """Names bound at the top level of a module (imports, definitions, assignments)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def render_region(twin: Twin, target_names: set[str]) -> list[str]:
    """Every twin of one source class, separated by blank lines, between the region's markers."""
    source = twin.source.read_text(encoding="utf-8")
    lines = [twin.begin]
    for func in public_coroutines(twin):
        signature = [func.args, *([func.returns] if func.returns else [])]
        used = {node.id for part in signature for node in ast.walk(part) if isinstance(node, ast.Name)}
        missing = sorted(used - target_names - set(dir(builtins)))
        if missing:
            raise GenerationError(f"{twin.source_class}.{func.name} uses names {TARGET.name} does not import:"
                                  f" {', '.join(missing)}")
        lines += ["", *render_method(func, source, twin)]
    lines.append(twin.end)
    return lines


def update(text: str) -> str:
    """``text`` (the target module) with every generated region rendered afresh."""
    target_names = _module_names(ast.parse(text))
    lines = text.splitlines()
    for twin in TWINS:
        try:
            start = lines.index(twin.begin)
            stop = lines.index(twin.end, start)
        except ValueError:
            raise GenerationError(f"{TARGET.name}: the markers of the {twin.target_class} region are missing:\n"
                                  f"{twin.begin}\n{twin.end}") from None
        lines[start:stop + 1] = render_region(twin, target_names)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Rewrite the generated regions, or with ``--check`` report whether they are stale."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated region is out of date")
    args = parser.parse_args(argv)
    current = TARGET.read_text(encoding="utf-8")
    try:
        wanted = update(current)
    except GenerationError as exc:
        print(f"gen_sync_facade: {exc}", file=sys.stderr)
        return 2
    name = str(TARGET.relative_to(REPO))
    if args.check:
        if current != wanted:
            diff = difflib.unified_diff(current.splitlines(keepends=True), wanted.splitlines(keepends=True),
                                        f"{name} (as is)", f"{name} (as generated)")
            sys.stderr.writelines(diff)
            print(f"{name} is out of date: run python scripts/gen_sync_facade.py", file=sys.stderr)
            return 1
        return 0
    if current != wanted:
        TARGET.write_text(wanted, encoding="utf-8")
        print(f"updated {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The public surface: __all__ is complete and every public name says what it does."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import agentx_memory

CONTRACT = {  # names that scripts, benchmarks and users call (issue 3 / issue 4)
    "AgentMemory", "AsyncAgentMemory", "Turn", "Entity", "Fact", "Goal", "Strategy", "ToolInvocation",
    "MemoryBundle", "Settings", "load_settings", "ValidationError", "NotFoundError", "ConflictError", "StorageError",
}
FACADE_METHODS = {
    "store_turn", "store_turns", "get_conversation", "get_recent_turns", "reconcile", "upsert_entity", "learn_fact",
    "store_fact", "create_relationship", "get_entity_graph", "promote_to_global", "record_invocation",
    "learn_strategy", "find_strategies", "reinforce_strategy", "get_tool_stats", "add_goal", "get_goal",
    "complete_goal", "list_goals", "working", "get_profile", "update_profile", "remember", "maintain_audit_partitions",
}
WORKERS = Path(__file__).resolve().parents[2] / "workers"


def test_all_lists_every_public_name_of_the_package():
    # dir(), not vars(): the package loads its names on first access, so vars() holds only those used so far.
    public = {name for name in dir(agentx_memory) if not name.startswith("_")}
    modules = {name for name in public if inspect.ismodule(getattr(agentx_memory, name))}
    assert public - modules - {"annotations"} == set(agentx_memory.__all__)
    assert set(agentx_memory.__all__) >= CONTRACT


def test_sync_and_async_facades_offer_the_same_methods():
    for name in FACADE_METHODS:
        assert hasattr(agentx_memory.AsyncAgentMemory, name), name
        assert hasattr(agentx_memory.AgentMemory, name), name


def _public_members():
    for info in pkgutil.walk_packages(agentx_memory.__path__, "agentx_memory."):
        module = importlib.import_module(info.name)
        yield info.name, module
        for name, value in vars(module).items():
            if name.startswith("_") or getattr(value, "__module__", None) != module.__name__:
                continue
            if inspect.isclass(value) or inspect.isfunction(value):
                yield f"{info.name}.{name}", value
                if inspect.isclass(value):
                    for attr, member in vars(value).items():
                        if not attr.startswith("_") and (inspect.isfunction(member) or isinstance(member, property)):
                            yield f"{info.name}.{name}.{attr}", member


def test_every_public_module_class_and_function_has_a_docstring():
    missing = [name for name, obj in _public_members() if not (inspect.getdoc(obj) or "").strip()]
    assert not missing, "public names without a docstring:\n" + "\n".join(missing)


def test_worker_jobs_use_the_public_api_only():
    """workers/ imports only the package root and touches only public methods (and ``settings``) of the memory:
    ``memory.ctx``, ``memory.episodic`` and the like are internals a job must not reach into."""
    api = {name for name, member in vars(agentx_memory.AsyncAgentMemory).items()
           if not name.startswith("_") and callable(getattr(member, "__func__", member))} | {"settings"}
    offences = []
    for path in sorted(WORKERS.rglob("*.py")):
        where = path.relative_to(WORKERS.parent)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("agentx_memory"):
                if node.module != "agentx_memory":
                    offences.append(f"{where}:{node.lineno}: imports {node.module}")
            elif isinstance(node, ast.Import):
                offences += [f"{where}:{node.lineno}: imports {alias.name}" for alias in node.names
                             if alias.name.startswith("agentx_memory")]
            elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "memory"
                  and node.attr not in api):
                offences.append(f"{where}:{node.lineno}: memory.{node.attr}")
    assert "reconcile" in api and "ctx" not in api
    assert not offences, "workers/ reaches past the public API:\n" + "\n".join(offences)


def test_rate_limited_error_is_exported_and_in_the_error_tree():
    """Issue 19: remember()'s rate limit raises our own 429 error, importable from the package."""
    from agentx_memory import errors

    err = agentx_memory.RateLimitedError("remember", user_id="u", agent_id=None, limit=2, window_seconds=60,
                                         retry_after=1.5)
    assert isinstance(err, errors.AgentXMemoryError) and err.status == 429 and err.retry_after == 1.5
    assert "RateLimitedError" in errors.__all__ and "RateLimitedError" in (errors.__doc__ or "")

"""Import a script of ``scripts/`` (not a package) as a module, for the tests of what it computes."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["load_script"]


def load_script(path: Path) -> ModuleType:
    """The script at ``path`` as a module named after its file, registered in ``sys.modules`` (dataclasses look
    their module up while a class is created)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module

"""Import a script of ``scripts/`` as a module, for tests of its helpers."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def loaded_script(name: str) -> Iterator[ModuleType]:
    """``scripts/<name>.py`` as module ``name`` while the generator is open (a fixture's body)."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(name, None)

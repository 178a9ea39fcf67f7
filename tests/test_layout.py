"""The code's shape, checked: layers, no import circle, no function over 60 lines.

The layer table below is the one DESIGN.md states: a module imports only from its
own floor or below (imports inside functions and under ``TYPE_CHECKING`` count).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mcunas

ROOT = Path(mcunas.__file__).resolve().parent
MAX_FUNCTION_LINES = 60


def _modules() -> dict[str, Path]:
    mods = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = path
    return mods


def _imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every mcunas module ``name`` imports, anywhere in the file (functions too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in found if m in known and m != name}


# Floors, lowest first: (floor, module prefixes). The longest prefix decides a module's floor.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundation",
        (
            "mcunas",
            "mcunas.errors",
            "mcunas.figures",
            "mcunas.files",
            "mcunas.inputs",
            "mcunas.limits",
            "mcunas.paths",
            "mcunas.jsontext",
            "mcunas.quiet",
        ),
    ),
    (
        "models and boards",
        ("mcunas.boards", "mcunas.tflite", "mcunas.deploy", "mcunas.data", "mcunas.frontend"),
    ),
    ("cost", ("mcunas.cost",)),
    ("measure", ("mcunas.measure",)),
    # test devices: registered by name (a string), imported by no product module below
    ("testing", ("mcunas.testing",)),
    ("space", ("mcunas.space",)),
    ("search", ("mcunas.search",)),
    ("supernet", ("mcunas.supernet",)),
    ("distributed", ("mcunas.distributed",)),
    # the top floor of the library: the registry that picks a strategy and an executor
    # by name, the one place below the CLI that may import supernet/ and distributed/
    ("registry", ("mcunas.engine",)),
    ("commands", ("mcunas.commands", "mcunas.__main__")),
)
# Upward imports that exist today (the search/ split into a run, a strategy and an
# executor removed the last ones); none may be added.
KNOWN_UPWARD: frozenset[tuple[str, str]] = frozenset()


def _floor(module: str) -> int:
    """The index in :data:`LAYERS` of the floor ``module`` is on."""
    best, found = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            inside = module.startswith(prefix + ".") and prefix != "mcunas"  # the root: itself
            if (module == prefix or inside) and len(prefix) > best:
                best, found = len(prefix), i
    assert found >= 0, f"{module} is on no floor of LAYERS: add it"
    return found


def _upward() -> set[tuple[str, str]]:
    mods = _modules()
    return {
        (name, dep)
        for name, path in mods.items()
        for dep in _imported(name, path, mods)
        if _floor(dep) > _floor(name)
    }


def test_no_module_imports_from_a_higher_floor() -> None:
    found = _upward()
    assert found - KNOWN_UPWARD == set(), "upward imports (see LAYERS)"
    assert KNOWN_UPWARD - found == set(), "gone: remove them from KNOWN_UPWARD"


def test_the_floor_finder_takes_the_longest_prefix() -> None:
    assert LAYERS[_floor("mcunas.engine")][0] == "registry"
    assert LAYERS[_floor("mcunas.search.tuner.tuner")][0] == "search"
    assert LAYERS[_floor("mcunas.errors")][0] == "foundation"
    assert LAYERS[_floor("mcunas.tflite.reader")][0] == "models and boards"
    with pytest.raises(AssertionError, match="on no floor"):
        _floor("mcunas.new_module")  # a new top-level module must be given a floor


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_circle() -> None:
    mods = _modules()
    graph = {name: _imported(name, path, mods) for name, path in mods.items()}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_function_over_60_lines() -> None:
    long = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(
                        f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name} {lines}"
                    )
    assert long == []

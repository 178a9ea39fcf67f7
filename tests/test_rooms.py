"""The house's rooms, checked: no two rooms import each other, and each room keeps its size.

A *room* is a package of ``mcunas`` two levels deep (``mcunas.search``,
``mcunas.search.finish``), or a loose module of the top level. The budgets below
are design limits, set with room to grow; a room that outgrows its budget is a
room to split, not a budget to raise in passing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.test_layout import ROOT, _cycles, _imported, _modules

# Lines of Python a room may hold (its modules, sub-rooms not counted).
ROOM_LINES: dict[str, int] = {
    "mcunas": 100,
    "mcunas.__main__": 100,
    "mcunas.engine": 250,
    "mcunas.errors": 200,
    "mcunas.figures": 250,
    "mcunas.files": 700,
    "mcunas.jsontext": 100,
    "mcunas.limits": 250,
    "mcunas.paths": 150,
    "mcunas.quiet": 250,
    "mcunas.boards": 1000,
    "mcunas.commands": 2800,
    "mcunas.cost": 3200,
    "mcunas.cost.fit": 2400,
    "mcunas.data": 1400,
    "mcunas.deploy": 1000,
    "mcunas.distributed": 2800,
    "mcunas.frontend": 1000,
    "mcunas.frontend.kernels": 700,
    "mcunas.inputs": 900,
    "mcunas.measure": 3600,
    "mcunas.measure.power": 600,
    "mcunas.search": 1400,
    "mcunas.search.finish": 2700,
    "mcunas.search.frontends": 400,
    "mcunas.search.report": 900,
    "mcunas.search.results": 1400,
    "mcunas.search.settings": 750,
    "mcunas.search.training": 600,
    "mcunas.search.trial": 1500,
    "mcunas.search.tuner": 1600,
    "mcunas.space": 1400,
    "mcunas.supernet": 2600,
    "mcunas.testing": 50,
    "mcunas.testing.virtual_board": 1200,
    "mcunas.tflite": 2300,
}
MAX_TOP_LEVEL_MODULES = 10
MAX_SEARCH_MODULES = 15
MAX_PROBES = 3  # hasattr(...) and inspect.signature(...) in all of mcunas/
MAX_ANY_PER_1000_LINES_IN_SEARCH = 15


def _room(module: str) -> str:
    """The room of a module: its package, at most two levels below ``mcunas``."""
    path = _modules()[module]
    parts = module.split(".")
    package = parts if path.name == "__init__.py" else parts[:-1]
    if len(package) == 1:  # a loose module of the top level is a room of its own
        return module
    return ".".join(package[:3])


def _room_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        here = _room(name)
        graph.setdefault(here, set())
        for dep in _imported(name, path, mods):
            if _room(dep) != here:
                graph[here].add(_room(dep))
    return graph


def test_no_two_rooms_import_each_other() -> None:
    graph = _room_graph()
    for room in graph:
        for other in list(graph[room]):
            graph.setdefault(other, set())
    assert _cycles(graph) == [], "rooms in a loop: move the shared part down a floor"


def test_the_room_finder_reads_packages_two_levels_deep() -> None:
    assert _room("mcunas.search.finish.refit") == "mcunas.search.finish"
    assert _room("mcunas.search.run") == "mcunas.search"
    assert _room("mcunas.errors") == "mcunas.errors"
    assert _room("mcunas.testing.virtual_board.device") == "mcunas.testing.virtual_board"


def test_each_room_keeps_its_size() -> None:
    sizes: dict[str, int] = {}
    for name, path in _modules().items():
        sizes[_room(name)] = sizes.get(_room(name), 0) + len(path.read_text().splitlines())
    assert set(sizes) <= set(ROOM_LINES), f"rooms without a budget: {set(sizes) - set(ROOM_LINES)}"
    over = {room: lines for room, lines in sizes.items() if lines > ROOM_LINES[room]}
    assert over == {}, "rooms over their budget (lines): split them"


def test_top_level_and_search_stay_small() -> None:
    top = [p for p in ROOT.glob("*.py")]
    assert len(top) <= MAX_TOP_LEVEL_MODULES, sorted(p.name for p in top)
    search = list((ROOT / "search").glob("*.py"))
    assert len(search) <= MAX_SEARCH_MODULES, sorted(p.name for p in search)


def _calls(name: str) -> int:
    count = 0
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                count += called == name
    return count


def test_interfaces_take_parameters_not_probes() -> None:
    assert _calls("hasattr") + _calls("signature") <= MAX_PROBES


def test_one_run_search() -> None:
    defs = [
        path
        for path in ROOT.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and node.name == "run_search"
    ]
    assert len(defs) == 1, defs


def test_search_names_its_types() -> None:
    lines = anys = 0
    for path in (ROOT / "search").rglob("*.py"):
        text = path.read_text()
        lines += len(text.splitlines())
        anys += len(re.findall(r"\bAny\b", text))
    assert anys * 1000 <= MAX_ANY_PER_1000_LINES_IN_SEARCH * lines, (anys, lines)


def test_tests_mirror_the_packages() -> None:
    tests = Path(__file__).resolve().parent
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    mirrored = {p.name for p in tests.iterdir() if p.is_dir() and p.name in packages}
    assert len(mirrored) >= 5, mirrored

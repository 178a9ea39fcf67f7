"""The README stays short and true to pyproject.toml; nothing in the repository points outside it.

DESIGN.md states the design (its history is CHANGELOG.md), and the product's code names
no benchmark dataset: results live in docs/benchmarks/.

`mkdocs build --strict` (in scripts/test) checks the site's links and pages.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Paths of a workspace around the repository (spelt in two parts, so this file is clean).
OUTSIDE = re.compile("|".join([r"\.\./" + "shared/", r"\bshared/" + "calibration"]))


def _tracked_text_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout
    paths = [ROOT / p for p in out.splitlines()] or [
        p for p in ROOT.rglob("*") if not {".git", ".venv"} & set(p.parts)
    ]
    return [p for p in paths if p.is_file() and p.suffix not in {".tflite", ".png", ".sqlite"}]


def test_readme_is_short() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) < 200


def test_readme_states_the_python_versions_pyproject_allows() -> None:
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert f"`{spec}`" in (ROOT / "README.md").read_text(), (
        f"README.md's Requirements must quote requires-python ({spec}) and name the versions"
    )


def test_nothing_points_outside_the_repository() -> None:
    found = []
    for path in _tracked_text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in OUTSIDE.finditer(text)]
    assert found == []


def test_the_site_renders_design_md_without_a_copy() -> None:
    config = (ROOT / "mkdocs.yml").read_text()
    assert "docs_dir: docs" in config and "pymdownx.snippets" in config
    assert '--8<-- "DESIGN.md"' in (ROOT / "docs" / "design.md").read_text()  # not a copy


def test_design_md_states_the_design_not_its_history() -> None:
    """DESIGN.md is the structure and its reasons; dated entries go to CHANGELOG.md."""
    design = (ROOT / "DESIGN.md").read_text()
    assert len(design.splitlines()) <= 500
    assert not re.search(r"\*\*(Added|Changed)\b", design), "history belongs in CHANGELOG.md"
    assert re.search(r"^### \d{4}-\d{2}-\d{2}$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert '--8<-- "CHANGELOG.md"' in (ROOT / "docs" / "changelog.md").read_text()


# Benchmark datasets and baselines: their results live in docs/benchmarks/, not in the product.
BENCH_NAMES = re.compile(
    r"JapaneseVowels|OSULeaf|ArrowHead|GunPoint|BasicMotions|ACSF1|\bUCR\b|\bUEA\b|MNIST"
    r"|spoken digits|MiniRocket|Speech Commands",
    re.IGNORECASE,
)


def test_the_product_names_no_benchmark_dataset() -> None:
    found = []
    for path in sorted((ROOT / "mcunas").rglob("*.py")):
        if "bundled" in path.parts:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if BENCH_NAMES.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == [], "link docs/benchmarks/ instead:\n" + "\n".join(found)

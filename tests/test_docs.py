"""The README stays short and true to pyproject.toml; nothing in the repository points outside it.

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

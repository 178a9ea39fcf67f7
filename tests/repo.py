"""Where the tests find the repository's own files, from any folder of ``tests/``."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

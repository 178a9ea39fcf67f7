"""A stand-in for ``PioProject`` that "flashes" a virtual board.

``BoardMeasurer(board, port=vb.port, project_factory=VirtualProject)`` runs the
whole bench flow (generate, build, upload, read the serial lines) against a
:class:`mcunas.testing.virtual_board.device.VirtualBoard`, with no PlatformIO.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from mcunas.boards.catalog import BoardProfile
from mcunas.errors import MeasurementError
from mcunas.files import write_file
from mcunas.testing.virtual_board.device import board_at

__all__ = ["VirtualBuild", "VirtualProject"]


@dataclass(frozen=True)
class VirtualBuild:
    """What a virtual build reports (the shape of ``pio.BuildInfo``; there is no ELF)."""

    elf_path: Path | None
    static_ram_bytes: int
    flash_bytes: int


class VirtualProject:
    """Stands in for ``PioProject``: "uploading" loads the model into the virtual board.

    Args:
        board: BoardProfile.
        work_dir: Path where ``generate`` writes the model.
        pio: str, ignored (same signature as ``PioProject``).
        upload_s: float, time an upload takes (default 0).
    """

    def __init__(
        self, board: BoardProfile, work_dir: Path, pio: str = "pio", *, upload_s: float = 0.0
    ) -> None:
        self.board = board
        self.work_dir = Path(work_dir)
        self.upload_s = upload_s
        self._model: bytes | None = None
        self._frontend: bytes | None = None

    def generate(self, model_bytes: bytes, frontend: bytes | None = None) -> Path:
        """Write the model (and the front end) where the firmware sources would go."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        path = self.work_dir / "model.tflite"
        write_file(path, model_bytes, "virtual board model", inside=self.work_dir)
        if frontend is not None:
            front = self.work_dir / "frontend.tflite"
            write_file(front, frontend, "virtual board front end", inside=self.work_dir)
        self._model, self._frontend = model_bytes, frontend
        return path

    def build(self) -> VirtualBuild:
        """Report the firmware baseline plus the model as the "built" image."""
        if self._model is None:
            raise MeasurementError("virtual build: generate() was not called")
        return VirtualBuild(
            elf_path=None,
            static_ram_bytes=self.board.firmware_ram_bytes,
            flash_bytes=self.board.firmware_flash_bytes
            + len(self._model)
            + len(self._frontend or b""),
        )

    def upload(self, port: str) -> None:
        """Flash the virtual board listening on ``port``."""
        target = board_at(port)
        if target is None or self._model is None:
            raise MeasurementError(f"upload failed: no virtual board on {port}; check --port")
        time.sleep(self.upload_s)
        target.flash(self._model, self._frontend)

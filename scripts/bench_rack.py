"""Wall time of one virtual-board measurement, and a 4-board virtual rack vs 1 board.

scripts/bench rack                        # esp32s3, 20 models, time scale 20
scripts/bench rack --boards 4 --models 20 --time-scale 10 --board nucleo_f746zg

Each virtual board takes a realistic time per measurement, divided by the time
scale so the bench is short: the upload sleeps (firmware baseline + model bytes)
/ UPLOAD_BYTES_PER_S, and the run sleeps the simulator's latency estimate x
(20 timed + 6 warm-up/profiler invokes). Builds are not simulated (a real rack
builds on the host's CPU cores; see the note printed at the end). The 20 models
are the 5 calibration models, each 4 times. Goal: close to 4 times faster on 4 boards.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcunas.boards.catalog import load_board  # noqa: E402
from mcunas.measure.board import BoardMeasurer  # noqa: E402
from mcunas.measure.rack import Rack, RackBoard, RackMeasurer  # noqa: E402
from mcunas.testing.virtual_board.device import VirtualBoard  # noqa: E402
from mcunas.testing.virtual_board.flasher import VirtualProject  # noqa: E402

MODELS = sorted((ROOT / "mcunas" / "calibration" / "models").glob("*.tflite"))
# esptool at 460800 baud with compression writes roughly 50 KB/s of image (assumption).
UPLOAD_BYTES_PER_S = 50_000


def project_factory(scale: float):
    """A VirtualProject whose upload takes the (scaled) time of a real one."""

    class TimedUpload(VirtualProject):
        def upload(self, port: str) -> None:
            size = self.board.firmware_flash_bytes + len(self._model or b"")
            self.upload_s = size / UPLOAD_BYTES_PER_S / scale
            super().upload(port)

    return TimedUpload


def rack_time(board, models: list[bytes], n_boards: int, scale: float, work: Path) -> float:
    vboards = [VirtualBoard(board, None, time_scale=scale) for _ in range(n_boards)]
    ports = [vb.start() for vb in vboards]
    try:
        rack = Rack(
            work / "rack.toml", tuple(RackBoard(f"v{i}", board, p) for i, p in enumerate(ports))
        )
        start = time.perf_counter()
        with RackMeasurer(
            board, rack, project_factory=project_factory(scale), work_dir=None, timeout_s=30
        ) as rm:
            outcomes = rm.measure_many(models)
        elapsed = time.perf_counter() - start
        failed = [o.error for o in outcomes if not o.ok]
        if failed:
            raise SystemExit(f"bench_rack: {len(failed)} measurement(s) failed: {failed[0]}")
        per_board = [s.measured for s in rm.status()]
        print(
            f"  {n_boards} board(s): {len(models)} models in {elapsed:6.2f} s "
            f"(per board: {per_board})"
        )
        return elapsed
    finally:
        for vb in vboards:
            vb.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--board", default="esp32s3")
    parser.add_argument("--boards", type=int, default=4, help="boards in the big rack")
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument(
        "--time-scale", type=float, default=20.0, help="virtual time = realistic time / this"
    )
    args = parser.parse_args()
    board = load_board(args.board)
    blobs = [p.read_bytes() for p in MODELS]
    models = [blobs[i % len(blobs)] for i in range(args.models)]
    scale = args.time_scale
    print(f"board {board.name}, time scale 1/{scale:g}, {len(MODELS)} calibration models")

    with tempfile.TemporaryDirectory() as tmp, VirtualBoard(board, None, time_scale=scale) as vb:
        person = next(b for p, b in zip(MODELS, blobs, strict=True) if "person" in p.name)
        measurer = BoardMeasurer(
            board,
            port=vb.port,
            project_factory=project_factory(scale),
            work_dir=Path(tmp),
            timeout_s=30,
        )
        measurer.measure(person)  # warm the simulator's caches
        start = time.perf_counter()
        m = measurer.measure(person)
        one = time.perf_counter() - start
        print(
            f"one virtual-board measurement (person_detect, flash + read): {one:.3f} s wall "
            f"= {one * scale:.1f} s at real speed; stages {m.details['stage_s']}"
        )

    with tempfile.TemporaryDirectory() as tmp:
        t1 = rack_time(board, models, 1, scale, Path(tmp))
        tn = rack_time(board, models, args.boards, scale, Path(tmp))
    print(
        f"speed-up of {args.boards} boards over 1: {t1 / tn:.2f}x "
        f"(ideal {min(args.boards, args.models)}x)"
    )
    print(
        "note: builds are not simulated; a real rack also compiles each candidate on the "
        "host, and parallel builds share the host's CPU cores."
    )


if __name__ == "__main__":
    main()

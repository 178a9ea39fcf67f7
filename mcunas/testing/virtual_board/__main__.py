"""``python -m mcunas.testing.virtual_board``: serve a virtual board on a pseudo-terminal.

Demo::

    python -m mcunas.testing.virtual_board --board esp32s3 --model m.tflite [--fault reset]
    # prints the pty path; then: mcunas bench m.tflite --board esp32s3 --port PATH --no-flash
    python -m mcunas.testing.virtual_board --board esp32s3 --model out/best/model.tflite \
        --frontend out/best/frontend.tflite
    # then: mcunas bench out/best --board esp32s3 --port PATH --no-flash
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path

from mcunas.testing.virtual_board.device import FAULTS, VirtualBoard
from mcunas.testing.virtual_board.figures import fixed_figures, simulator_figures
from mcunas.testing.virtual_board.truth import truth_figures


def main(argv: list[str] | None = None) -> int:
    """Serve a virtual board until interrupted; print its port path first."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--board", required=True, help="board profile name or .toml path")
    parser.add_argument("--model", required=True, help=".tflite the board pretends to run")
    parser.add_argument("--frontend", help="frontend.tflite it runs before the model")
    parser.add_argument("--fault", choices=FAULTS, default=None)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--time-scale", type=float, default=1.0, help="speed-up of run time")
    parser.add_argument("--latency-ms", type=float, help="fixed latency instead of the simulator")
    parser.add_argument("--arena-bytes", type=int, default=50_000, help="with --latency-ms")
    parser.add_argument(
        "--truth",
        type=int,
        default=None,
        metavar="SEED",
        help="report a hidden ground truth's latencies (mcunas.testing.virtual_board.truth)",
    )
    args = parser.parse_args(argv)
    from mcunas.boards.catalog import load_board

    board = load_board(args.board)
    figures = (
        fixed_figures(args.latency_ms, args.arena_bytes)
        if args.latency_ms is not None
        else simulator_figures
    )
    if args.truth is not None:
        figures = truth_figures(args.truth)
    vb = VirtualBoard(
        board,
        Path(args.model).read_bytes(),
        figures=figures,
        fault=args.fault,
        runs=args.runs,
        time_scale=args.time_scale,
    )
    if args.frontend:
        vb.flash(Path(args.model).read_bytes(), Path(args.frontend).read_bytes())
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    with vb:
        print(vb.port, flush=True)
        try:
            done.wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

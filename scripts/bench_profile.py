"""Time `mcunas profile` on the five calibration models, and `mcunas --help` start-up.

scripts/bench profile                         # boards nucleo_f746zg and esp32s3
scripts/bench profile --boards rp2040 --runs 5

Goals: under 1 s per model once the process has started (the first call pays
for importing the TFLM runtime and the latency tables, shown separately), and
under 0.5 s for `mcunas --help` in a fresh process.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

import mcunas.cost.memory as memory  # noqa: E402
from mcunas.commands.cli import cli  # noqa: E402

MODELS = ROOT / "mcunas" / "calibration" / "models"
NAMES = (
    "kws_ref_model",
    "vww_96_int8",
    "pretrainedResnet_quant",
    "ad01_int8",
    "person_detect_int8",
)


def _count_interpreters() -> list[int]:
    """Wrap the memory model's interpreter factory to count constructions."""
    counter = [0]
    real = memory.create_interpreter

    def counting(model_bytes: bytes, arena_size: int):  # type: ignore[no-untyped-def]
        counter[0] += 1
        return real(model_bytes, arena_size)

    memory.create_interpreter = counting
    return counter


def _profile_once(runner: CliRunner, model: Path, board: str) -> float:
    start = time.perf_counter()
    result = runner.invoke(cli, ["profile", str(model), "--board", board, "--json"])
    elapsed = time.perf_counter() - start
    if result.exit_code != 0:
        raise SystemExit(f"mcunas profile {model.name} --board {board} failed: {result.output}")
    return elapsed


def _startup(runs: int) -> tuple[float, float, bool]:
    def timed(args: list[str]) -> float:
        start = time.perf_counter()
        subprocess.run(args, capture_output=True, check=True, cwd=ROOT)
        return time.perf_counter() - start

    helps = [timed([sys.executable, "-m", "mcunas", "--help"]) for _ in range(runs)]
    bare = [timed([sys.executable, "-c", "pass"]) for _ in range(runs)]
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from mcunas.commands.cli import main\n"
            "try: main(['--help'])\nexcept SystemExit: pass\n"
            "print('tensorflow' in sys.modules, file=sys.stderr)",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    return statistics.median(helps), statistics.median(bare), "True" in probe.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--boards", default="nucleo_f746zg,esp32s3")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per model (median)")
    args = parser.parse_args()
    runner = CliRunner()
    counter = _count_interpreters()
    first = _profile_once(runner, MODELS / f"{NAMES[0]}.tflite", args.boards.split(",")[0])
    print(f"first profile in this process (imports TFLM runtime, latency tables): {first:.3f} s")
    print(f"\n{'model':<24} {'board':<15} {'s/model':>8} {'max s':>7} {'interpreters':>13}")
    worst = 0.0
    for board in args.boards.split(","):
        for name in NAMES:
            counter[0] = 0
            times = [
                _profile_once(runner, MODELS / f"{name}.tflite", board) for _ in range(args.runs)
            ]
            worst = max(worst, max(times))
            per_run = counter[0] // args.runs
            print(
                f"{name:<24} {board:<15} {statistics.median(times):8.3f} {max(times):7.3f} "
                f"{per_run:>13}"
            )
    help_s, bare_s, tf_loaded = _startup(5)
    print(f"\nworst profile: {worst:.3f} s (goal < 1 s)  {'OK' if worst < 1 else 'SLOW'}")
    print(
        f"`mcunas --help` start-up: {help_s:.3f} s median of 5 (bare python {bare_s:.3f} s; "
        f"goal < 0.5 s) {'OK' if help_s < 0.5 else 'SLOW'}; TensorFlow imported: {tf_loaded}"
    )
    return 0 if worst < 1 and help_s < 0.5 and not tf_loaded else 1


if __name__ == "__main__":
    sys.exit(main())

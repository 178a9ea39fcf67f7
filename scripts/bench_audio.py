"""The audio bench: a keyword spotter searched on spoken words made offline, run as the board would.

1. ``mcunas make-dataset spoken-words`` writes the dataset (espeak-ng voices +
   noise, speaker-disjoint train/test split) under ``OUT/data``.
2. Each arm is one ``mcunas search`` on ``OUT/data/train`` with
   ``--frontend tflm``, on the same board, budgets, seed and wall time:
   ``fixed`` keeps today's 30/20 ms, 40-band log-mel front end; ``searched``
   adds the arguments that make the front end's parameters searched (given
   by ``--searched-args``, default ``--frontend-space search``; the arm is
   skipped, with the reason, when this mcunas's ``search --help`` does not
   offer them). Arms run one after the other; two runs of this script with
   ``--arms fixed`` and ``--arms searched`` on one OUT (its data made first)
   run them side by side, and ``--reuse`` then scores both in one table.
3. The raw test clips go through ``best/frontend.tflite`` then
   ``best/model.tflite`` in the host TFLite Micro runtime (``mcunas predict
   OUT/ARM OUT/data/test --json``), and the same clips' features, made by the
   search's own feature path (``read_folder`` with the front end), are scored
   by the search's INT8 evaluation (``int8_accuracy``): the two must agree.
4. The front end's share of latency (per 1 s inference window: one invoke per
   hop) and of SRAM (its arena and the int16 audio window beside the model's
   peak), estimates for the board: the search's own split when it costs the
   front end (``frontend_latency_ms``, ``frontend_sram_bytes`` of the trial),
   else the front end's estimate beside the model's figures.

    scripts/bench audio [--out runs/bench-audio] [--board esp32s3] [--per-class 60]
                        [--time-budget 900] [--max-trials 12] [--epochs 15]
                        [--max-latency-ms 100] [--max-sram-kb 160] [--arms fixed,searched]
                        [--reuse]   # score finished searches again, no new search
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
SEARCHED_ARGS = "--frontend-space search"  # what makes the front end searched


def run(cmd: list[str], log: Path) -> subprocess.CompletedProcess:
    """Run a command, its output appended to ``log``; echo the command on stderr."""
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    with log.open("a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=False)


def search_cmd(args: argparse.Namespace, out: Path, extra: list[str]) -> list[str]:
    """The ``mcunas search`` command line of one arm."""
    return [
        "mcunas", "search", "--board", args.board, "--dataset", str(args.out / "data" / "train"),
        "--frontend", "tflm", "--out", str(out), "--seed", str(args.seed),
        "--max-trials", str(args.max_trials), "--epochs", str(args.epochs),
        "--time-budget", str(args.time_budget), "--max-latency-ms", str(args.max_latency_ms),
        "--max-sram-kb", str(args.max_sram_kb), "--finalists", "0", *extra,
    ]  # fmt: skip


def offers(flag: str) -> bool:
    """Whether this mcunas's ``search --help`` names ``flag``."""
    text = subprocess.run(["mcunas", "search", "--help"], capture_output=True, text=True).stdout
    return flag.split("=")[0] in text


def search_path_accuracy(best: Path, test: Path) -> tuple[float, int]:
    """INT8 accuracy of the test clips by the search's own path: read_folder + int8_accuracy."""
    import numpy as np

    from mcunas.data.folder import read_folder
    from mcunas.frontend.graph import config_of_model
    from mcunas.tflite.evaluate import int8_accuracy

    cfg = config_of_model((best / "frontend.tflite").read_bytes())
    data = read_folder(test, frontend=cfg, cache_dir=best.parent / "cache")
    info = json.loads((best / "best.json").read_text())
    names = list(info.get("class_names") or data.class_names)
    y = np.array([names.index(data.class_names[i]) for i in data.y], np.int32)
    x = data.x.reshape(len(data.x), *read_shape(best))
    return int8_accuracy((best / "model.tflite").read_bytes(), x, y), len(y)


def read_shape(best: Path) -> tuple[int, ...]:
    """The model's input shape without the batch axis."""
    from mcunas.tflite.reader import read_graph

    graph = read_graph((best / "model.tflite").read_bytes())
    return tuple(int(d) for d in graph.inputs[0].shape[1:])


def shares(best: Path, board_name: str) -> dict:
    """Front end and model latency per inference window and SRAM, both estimated on the board."""
    from mcunas.boards.catalog import load_board
    from mcunas.cost.frontend import estimate_frontend
    from mcunas.frontend.build import frontend_build

    board = load_board(board_name)
    front = (best / "frontend.tflite").read_bytes()
    est = estimate_frontend(front, board)
    frames = read_shape(best)[0]
    trial = json.loads((best / "best.json").read_text())["trial"]
    fe_ms, model_ms = est.frame_ms * frames, float(trial["latency_ms"])
    model_sram = int(trial.get("peak_sram_bytes") or trial.get("arena_bytes") or 0)
    window = 2 * frontend_build(front, (best / "model.tflite").read_bytes()).window_samples()
    fe_sram = est.arena_bytes + window  # the front end's arena and the int16 audio window
    if trial.get("frontend_latency_ms") is not None:  # a search that costs the front end:
        fe_ms = float(trial["frontend_latency_ms"])  # its figures are totals, with the split
        model_ms -= fe_ms
        fe_sram = int(trial["frontend_sram_bytes"])
        model_sram -= fe_sram
    return {
        "frontend_ms": fe_ms, "model_ms": model_ms, "frames": frames,
        "latency_share": fe_ms / (fe_ms + model_ms),
        "frontend_arena_bytes": est.arena_bytes, "window_bytes": window,
        "frontend_sram_bytes": fe_sram, "model_peak_sram_bytes": model_sram,
        "sram_share": fe_sram / (fe_sram + model_sram),
        "frontend_source": trial.get("frontend_source") or est.source,
        "frontend_flash_bytes": est.flash_bytes, "frontend": est.config.to_dict(),
    }  # fmt: skip


def arm(args: argparse.Namespace, name: str, extra: list[str], log: Path) -> dict:
    """One search (or with ``--reuse`` the one in OUT/ARM), its test accuracy both ways, shares."""
    out = args.out / name
    start = time.monotonic()
    if args.reuse and (out / "best" / "frontend.tflite").is_file():
        code, wall = 0, previous_wall(args.out, name)
    else:
        code = run(search_cmd(args, out, extra), log).returncode
        wall = time.monotonic() - start
    if code != 0 or not (out / "best" / "frontend.tflite").is_file():
        return {"arm": name, "error": f"search exited {code}; see {log}"}
    pred = subprocess.run(
        ["mcunas", "predict", str(out), str(args.out / "data" / "test"), "--json"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    predicted = json.loads(pred)
    int8, n = search_path_accuracy(out / "best", args.out / "data" / "test")
    trial = json.loads((out / "best" / "best.json").read_text())["trial"]
    (out / "bench_arm.json").write_text(json.dumps({"wall_s": wall}) + "\n")
    return {
        "arm": name, "wall_s": wall, "val_int8_accuracy": trial.get("int8_accuracy"),
        "test_predict_accuracy": predicted["accuracy"], "test_search_int8_accuracy": int8,
        "test_clips": n, "equal": predicted["accuracy"] == int8,
        **shares(out / "best", args.board),
    }  # fmt: skip


def previous_wall(out: Path, name: str) -> float | None:
    """The wall time an earlier run of this bench recorded for the arm, if any."""
    try:
        return json.loads((out / name / "bench_arm.json").read_text()).get("wall_s")
    except (OSError, ValueError):
        return None


def table(rows: list[dict]) -> str:
    """The Markdown table of docs/benchmarks/audio.md."""
    head = (
        "| arm | front end | test acc. (predict) | test acc. (search's INT8) | val INT8 acc. "
        "| front end ms / window | model ms | front-end share of latency "
        "| front-end SRAM | model peak SRAM | front-end share of SRAM |\n" + "|---" * 11 + "|"
    )
    lines = [head]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['arm']} | {r['error']} |" + " |" * 9)
            continue
        fe = r["frontend"]
        desc = f"{fe['frame_ms']:g}/{fe['hop_ms']:g} ms, {fe['mel_bands']} bands" + (
            ", PCAN" if fe.get("pcan") else ""
        )
        lines.append(
            f"| {r['arm']} | {desc} | {r['test_predict_accuracy']:.1%} "
            f"| {r['test_search_int8_accuracy']:.1%} | {r['val_int8_accuracy']:.1%} "
            f"| {r['frontend_ms']:.2f} (est.) | {r['model_ms']:.2f} (est.) "
            f"| {r['latency_share']:.0%} | {r['frontend_sram_bytes'] / 1024:.1f} KiB "
            f"| {r['model_peak_sram_bytes'] / 1024:.1f} KiB | {r['sram_share']:.0%} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module's docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("runs/bench-audio"))
    p.add_argument("--board", default="esp32s3")
    p.add_argument("--per-class", type=int, default=60)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--time-budget", type=float, default=900.0)
    p.add_argument("--max-trials", type=int, default=12)
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--max-latency-ms", type=float, default=100.0)
    p.add_argument("--max-sram-kb", type=float, default=160.0)
    p.add_argument("--arms", default="fixed,searched")
    p.add_argument("--searched-args", default=SEARCHED_ARGS)
    p.add_argument("--reuse", action="store_true", help="score the arms' finished searches again")
    a = p.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    log = a.out / "bench.log"
    if not (a.out / "data" / "manifest.json").is_file():
        made = run(["mcunas", "make-dataset", "spoken-words", str(a.out / "data"),
                    "--per-class", str(a.per_class), "--seed", str(a.seed)], log)  # fmt: skip
        if made.returncode != 0:
            print(f"bench audio: the dataset could not be made; see {log}", file=sys.stderr)
            return 2
    rows = []
    for name in a.arms.split(","):
        extra = a.searched_args.split() if name == "searched" else []
        if extra and not offers(extra[0]):
            rows.append({"arm": name, "error": f"this mcunas has no {extra[0]}: not run"})
            continue
        rows.append(arm(a, name, extra, log))
        (a.out / "bench_audio.json").write_text(json.dumps(rows, indent=1) + "\n")
    (a.out / "bench_audio.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``mcunas calibrate``: measure the calibration suite on a board, fit its latency model."""

from __future__ import annotations

from typing import Any

import click
from click.core import ParameterSource

from mcunas.commands import SECONDS, Ranged, ranged_help
from mcunas.errors import UserError
from mcunas.jsontext import dumps


def _pct(stats: dict[str, float]) -> str:
    return (
        f"median |error| {stats['median_abs_pct']:.1f}%, within 10%: {stats['within_10']:.0%}, "
        f"within 25%: {stats['within_25']:.0%} (n={stats['n']})"
    )


def _check_options(ctx: click.Context, timeout_s: float | None) -> None:
    """Refuse option combinations that cannot work, before anything is opened."""

    def given(name: str) -> bool:
        return ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)

    p = ctx.params
    targets = [
        f"--{n}"
        for n, on in (("port", given("port")), ("rack", p["rack_path"]), ("virtual", p["virtual"]))
        if on
    ]
    if len(targets) > 1:
        raise UserError(f"give one of --port, --rack and --virtual, not {' and '.join(targets)}")
    if given("truth_seed") and not p["virtual"]:
        raise UserError("--truth-seed only applies with --virtual")
    if p["quick"] and given("suite_size") and p["suite_size"] != "quick":
        raise UserError(f"--quick measures the quick suite; drop --suite {p['suite_size']}")
    if p["virtual"] and p["no_flash"]:
        raise UserError("--no-flash cannot measure a suite on the virtual board")


@click.command(
    epilog="""\b
Examples:
  mcunas calibrate --board esp32s3                    # board on the auto-detected port
  mcunas calibrate --board nucleo_f746zg --port /dev/ttyACM0 --suite full
  mcunas calibrate --board esp32s3 --rack rack.toml   # every esp32s3 of the rack in parallel
  mcunas calibrate --board esp32s3 --virtual          # end to end on the virtual test device
  mcunas calibrate --board nucleo_f746zg --quick      # few-shot: 3 models
The fitted profile goes to $MCUNAS_HOME/boards/NAME.toml; profile, search and the
simulator use it from then on. Every measurement is kept in $MCUNAS_HOME/predictor.sqlite."""
)
@click.option("--board", "board_name", required=True, help="Board profile name or .toml path.")
@click.option("--port", default="auto", show_default=True, help="Serial port, or auto (USB ids).")
@click.option("--rack", "rack_path", type=click.Path(dir_okay=False), help="Measure on a rack.")
@click.option("--virtual", is_flag=True, help="Measure the virtual board (a test device).")
@click.option(
    "--truth-seed",
    type=Ranged("truth_seed"),
    default=0,
    show_default=True,
    help=ranged_help(
        "truth_seed",
        "With --virtual: seed of its hidden ground-truth costs (-1: the simulator's own).",
    ),
)
@click.option("--no-flash", is_flag=True, help="Do not flash (the board already runs the model).")
@click.option(
    "--suite",
    "suite_size",
    type=click.Choice(["small", "full", "quick"]),
    default="small",
    show_default=True,
    help="Calibration suite: small (~45 models), full (~70) or quick (3 chains).",
)
@click.option("--quick", is_flag=True, help="Few-shot: the 3-model suite (--suite quick).")
@click.option(
    "--timeout",
    "timeout_s",
    type=SECONDS,
    default=None,
    help=ranged_help("timeout_s", "Seconds per model read."),
)
@click.option("--store", default=None, help="Measurements database (default in MCUNAS_HOME).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def cli(
    board_name: str,
    port: str,
    rack_path: str | None,
    virtual: bool,
    truth_seed: int,
    no_flash: bool,
    suite_size: str,
    quick: bool,
    timeout_s: float | None,
    store: str | None,
    as_json: bool,
) -> None:
    """Measure the calibration suite on a board, fit its latency model, write the profile."""
    from pathlib import Path

    from mcunas.boards.catalog import load_board
    from mcunas.cost.fit.records import RecordStore
    from mcunas.cost.fit.suite import load_suite
    from mcunas.measure.calibrate import calibrate, calibration_board
    from mcunas.measure.opener import open_measurer

    _check_options(click.get_current_context(), timeout_s)
    if no_flash:
        click.echo(
            "warning: --no-flash measures whatever the board runs; the CRC check will "
            "fail for every suite model it does not run",
            err=True,
        )
    board = calibration_board(load_board(board_name), virtual)
    kind = "virtual" if virtual else ("rack" if rack_path else "board")
    if kind == "board" and port in ("auto", ""):
        from mcunas.measure.ports import detect_port

        port = detect_port(board)  # no board: its one-line error before any header or store
    suite_size = "quick" if quick else suite_size
    suite = load_suite(suite_size)
    db = RecordStore(Path(store) if store else None)
    if not as_json:
        where = "the virtual board" if virtual else (rack_path or f"port {port}")
        click.echo(f"Calibrating {board.name} on {where}: {len(suite)} models ({suite_size} suite)")
    options = {"port": port, "rack": rack_path, "flash": not no_flash, "timeout_s": timeout_s}
    seed = None if truth_seed < 0 else truth_seed
    with open_measurer(kind, board, truth_seed=seed, **options) as measurer:
        progress = None if as_json else _print_progress
        result = calibrate(board, measurer, suite, db, progress=progress)
    _print_result(result, as_json)
    if not as_json:
        _print_setup(board, result.setup)


def _print_setup(board: Any, reported: dict[str, Any]) -> None:
    """What the firmware says it was built with, and where that contradicts the profile."""
    from mcunas.measure.setup_report import describe_setup, setup_differences

    click.echo(f"firmware setup:     {describe_setup(reported)}")
    for difference in setup_differences(board, reported):
        click.echo(
            f"  warning: {difference}; state the board's real setup in its profile", err=True
        )


def _print_progress(i: int, n: int, outcome: Any) -> None:
    """One line per measured suite model: its time and the prediction before calibration."""
    if outcome.ok:
        err = (outcome.predicted_ms / outcome.measured_ms - 1) * 100
        click.echo(
            f"[{i:>2}/{n}] {outcome.name:<24} {outcome.measured_ms:9.3f} ms  "
            f"(predicted before {outcome.predicted_ms:9.3f} ms, {err:+6.1f}%)  "
            f"{outcome.ops} op(s)"
        )
    else:
        click.echo(f"[{i:>2}/{n}] {outcome.name:<24} FAILED, skipped: {outcome.error}")


def _print_result(result: Any, as_json: bool) -> None:
    """The calibration's summary (or JSON); no profile written is an error."""
    if as_json:
        click.echo(dumps(result.to_dict()))
        return
    failed = [o for o in result.outcomes if not o.ok]
    click.echo(
        f"measured {len(result.outcomes) - len(failed)}/{len(result.outcomes)} models"
        + (f", {len(failed)} failed and skipped" if failed else "")
    )
    click.echo(f"before calibration: {_pct(result.before)}")
    folds = min(5, int(result.after.get("n", 5)))  # calibrate.CV_FOLDS, or one per model
    click.echo(f"after calibration:  {_pct(result.after)} [{folds}-fold cross-validation]")
    if folds < 5:
        click.echo(
            f"  (only {folds} models: this error is a weak check; the band a quick calibration "
            "leaves on other models is in docs/benchmarks/latency.md)"
        )
    if result.profile_path is None:
        raise UserError("calibration produced no profile")
    click.echo(f"profile written: {result.profile_path}")

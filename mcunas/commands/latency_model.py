"""``mcunas latency-model``: import measurements, fit boards' latency models, report the error.

``mcunas predictor`` is its former name, kept as a hidden alias for one release.
"""

from __future__ import annotations

import io
from pathlib import Path

import click

from mcunas.errors import UserError
from mcunas.paths import predictor_store_path


def _store(path: str | None, create: bool = False):  # noqa: ANN202
    """Open the store; only ``import`` creates one (a mistyped --store must not)."""
    from mcunas.cost.fit.records import RecordStore

    where = Path(path) if path else predictor_store_path()
    if not create and not where.is_file():
        raise UserError(
            f"No measurements store at {where}: run `mcunas latency-model import CSV` "
            "or `mcunas calibrate` first, or check --store"
        )
    return RecordStore(where)


_STORE = click.option(
    "--store", default=None, help="Measurements database (default: $MCUNAS_HOME/predictor.sqlite)."
)


@click.group(
    epilog="""\b
Examples:
  mcunas latency-model import mcunas/calibration/measurements.csv
  mcunas latency-model fit --board esp32s3
  mcunas latency-model report --board nucleo_l4r5zi --plot l4r5.png
  mcunas latency-model list
  mcunas latency-model forget --board esp32s3 --source board:/dev/ttyUSB0
\b
CSV columns: id, model_file, core, clock_mhz, kernels, latency_ms (board,
runtime, source optional); model_file is looked up in models/ beside the CSV.""",
)
def cli() -> None:
    """Fit, import and report the latency model."""


@cli.command(
    "import", epilog="Example: mcunas latency-model import my_boards.csv --store lab.sqlite"
)
@click.argument("csv_path", type=click.Path(dir_okay=False))
@_STORE
def import_cmd(csv_path: str, store: str | None) -> None:
    """Import published whole-model figures (columns of calibration/measurements.csv)."""
    db = _store(store, create=True)
    count = db.import_csv(Path(csv_path))
    click.echo(f"Imported {count} measurement(s) into {db.path}")


@cli.command("list", epilog="Example: mcunas latency-model list --store lab.sqlite")
@_STORE
def list_cmd(store: str | None) -> None:
    """What the store holds: measurements per board, kernel library and source."""
    if store is None and not predictor_store_path().is_file():
        click.echo(f"No measurements yet ({predictor_store_path()} does not exist)")
        return
    db = _store(store)
    groups = db.summary()
    if not groups:
        click.echo(f"No measurements in {db.path}")
        return
    click.echo(f"{db.path}:")
    width = max(22, *(len(g[0]) for g in groups))
    click.echo(f"  {'board':<{width}} {'kernels':<10} {'models':>6} {'ops':>6}  source")
    for board, kernels, source, models, ops in groups:
        click.echo(f"  {board:<{width}} {kernels:<10} {models:>6} {ops:>6}  {source}")


@cli.command(
    "forget",
    epilog="""\b
Examples:
  mcunas latency-model forget --board esp32s3 --yes
  mcunas latency-model forget --board esp32s3 --source board:/dev/ttyUSB0
Then `mcunas latency-model fit --board NAME` fits again from what is left.""",
)
@click.option("--board", "board_name", required=True, help="Board whose measurements to delete.")
@click.option("--source", default=None, help="Only this source (as `latency-model list` shows it).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@_STORE
def forget_cmd(board_name: str, source: str | None, yes: bool, store: str | None) -> None:
    """Delete a board's measurements from the store (a bad run, a changed firmware)."""
    db = _store(store)
    groups = [g for g in db.summary() if g[0] == board_name and source in (None, g[2])]
    if not groups:
        what = f" from source {source!r}" if source else ""
        raise UserError(
            f"No measurements for board '{board_name}'{what} in {db.path} "
            "(see `mcunas latency-model list`)"
        )
    total = sum(g[3] + g[4] for g in groups)
    if not yes:
        click.confirm(f"Delete {total} measurement(s) of {board_name}?", abort=True)
    count = db.forget(board_name, source)
    click.echo(f"Deleted {count} measurement(s) of {board_name} from {db.path}")


@cli.command("fit", epilog="Example: mcunas latency-model fit --board esp32s3")
@click.option(
    "--board", "board_name", default=None, help="Fit one board (default: all in the store)."
)
@_STORE
def fit_cmd(board_name: str | None, store: str | None) -> None:
    """Fit boards to the store's measurements; write them into the user boards folder."""
    from mcunas.boards.catalog import load_board
    from mcunas.cost.fit.board import write_user_board
    from mcunas.cost.fit.store import fit_store
    from mcunas.errors import UnknownBoard

    db = _store(store)
    names = [board_name] if board_name else db.boards()
    if not names:
        raise UserError(
            f"No measurements in {db.path}: run `mcunas latency-model import CSV` first."
        )
    fitted = 0
    for name in names:
        try:
            board = load_board(name)
        except UnknownBoard:
            if board_name:
                raise
            click.echo(
                f"{name}: skipped, no board profile by that name (write one, "
                "e.g. from `mcunas boards show`, to fit it)"
            )
            continue
        fitted += 1
        fit = fit_store(board, db)
        out = write_user_board(board, fit.table)
        libs = ", ".join(lib.text() for lib in fit.libraries)
        click.echo(f"{name}: {libs} -> {out}")
    if not fitted:
        raise UserError(f"None of the boards in {db.path} has a profile to fit.")


@cli.command("report", epilog="Example: mcunas latency-model report --board esp32s3 --plot s3.png")
@click.option("--board", "board_name", required=True, help="Board profile name or path.")
@click.option(
    "--plot", type=click.Path(dir_okay=False), default=None, help="Predicted-vs-measured PNG."
)
@_STORE
def report_cmd(board_name: str, plot: str | None, store: str | None) -> None:
    """Leave-one-out error on every measurement of a board (store + calibration data)."""
    from mcunas.boards.catalog import load_board
    from mcunas.cost.fit.board import report_loo
    from mcunas.cost.fit.records import board_for_row
    from mcunas.cost.fit.scale import load_calibration, summarize
    from mcunas.cost.fit.store import store_graphs

    board = load_board(board_name)
    if plot:
        from mcunas.files import output_path

        output_path(plot, "plot")  # a folder, device, pipe or socket: refused before the work
    if plot and not Path(plot).expanduser().absolute().parent.is_dir():
        raise UserError(f"Cannot write the plot {plot}: its folder does not exist")
    rows = {r.id: r for r in load_calibration() if board_for_row(r) == board.name}
    db = None
    if store is not None or predictor_store_path().is_file():  # the published rows need none
        db = _store(store)
        rows.update({r.id: r for r in db.model_rows(board.name)})
    if not rows:
        raise UserError(f"No whole-model measurements for board '{board.name}'.")
    ops = db.op_records(board.name) if db is not None else []
    graph_of = store_graphs(db) if db is not None else None
    results = report_loo(board, list(rows.values()), ops, graph_of)
    stats = summarize(results)
    click.echo(
        f"{board.name}: leave-one-out on {stats['n']} measurement(s)"
        + (" (models measured op by op: per-op tables fitted without each model)" if ops else "")
    )
    for r in sorted(results, key=lambda r: -abs(r.error_pct)):
        click.echo(
            f"  {r.row.id:<28} {r.row.kernels:<9} measured {r.row.latency_ms:9.2f} ms  "
            f"predicted {r.predicted_ms:9.2f} ms  {r.error_pct:+6.1f}%"
        )
    click.echo(
        f"median |error| {stats['median_abs_pct']:.1f}%, within 10%: "
        f"{stats['within_10']:.0%}, within 25%: {stats['within_25']:.0%}"
    )
    if plot:
        _plot(results, Path(plot), board.name)
        click.echo(f"plot: {plot}")


def _plot(results, path: Path, title: str) -> None:  # noqa: ANN001
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 5))
    measured = [r.row.latency_ms for r in results]
    predicted = [r.predicted_ms for r in results]
    ax.loglog(measured, predicted, "o")
    lo, hi = min(measured + predicted) * 0.8, max(measured + predicted) * 1.25
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8, label="exact")
    ax.fill_between(
        [lo, hi], [lo * 0.75, hi * 0.75], [lo * 1.25, hi * 1.25], alpha=0.15, label="±25%"
    )
    ax.set(xlabel="measured ms", ylabel="predicted ms (leave-one-out)", title=title)
    ax.legend()
    fig.tight_layout()
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=100)
    finally:
        plt.close(fig)
    from mcunas.files import write_file

    write_file(path, buffer.getvalue(), "plot")

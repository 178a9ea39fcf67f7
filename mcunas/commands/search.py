"""``mcunas search``: find the most accurate INT8 model that fits a board."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import click

from mcunas.commands import debug_wanted
from mcunas.commands.search_options import search_options
from mcunas.errors import UserError
from mcunas.jsontext import dumps
from mcunas.search.settings.config import SearchConfig

EPILOG = """\b
Examples:
  mcunas search --board esp32s3
  mcunas search --board esp32s3 --max-latency-ms 20 --max-sram-kb 128 --out runs/kws
  mcunas search --board nucleo_f746zg --max-latency-ms 50 --safe-latency   # uncalibrated board
  mcunas search --board nucleo_f746zg --strategy bayesian --max-trials 30 --families dsconv,mbconv
  mcunas search --board esp32s3 --dataset data/gestures.npz --time-budget 1800
  mcunas search --board nano33ble --clock-mhz 32 --max-latency-ms 20   # a slowed-down core
  mcunas search --board nano33ble --max-energy-uj 500 --objectives accuracy,energy,sram
  mcunas search --board nano33ble --dataset data/kws --seed-arch kws-dscnn --max-latency-ms 50
  mcunas search --board nano33ble --dataset data/kws --strategy supernet --subnets 1000
  mcunas search --board nano33ble --dataset data/kws --frontend tflm --frontend-space search
  mcunas search --out runs/kws --resume            # continue an interrupted search
  mcunas search --board esp32s3 --out runs/kws --overwrite   # start over in the same folder
  mcunas search --board esp32s3 --measure board --port /dev/ttyUSB0
  mcunas search --board esp32s3 --out runs/big --serve 0.0.0.0:8470   # chief; then on
  mcunas worker --connect chief-host:8470                           # each worker machine
\b
Output folder: trials.sqlite (every trial), pareto.json, pareto.png, report.html,
best/ (model.tflite, model_data.cc/.h, model_ops.h, best.json). Figures marked ~
are simulator estimates."""


@click.command("search", epilog=EPILOG)
@search_options
@click.pass_context
def cli(ctx: click.Context, as_json: bool, overwrite: bool, **options: Any) -> None:
    """Search for the most accurate INT8 model that fits a board and its budgets."""
    if overwrite and options["resume"]:
        raise UserError("--overwrite starts over and --resume continues: give one of them.")
    config = _config(ctx, options)
    import os

    from mcunas.distributed.role import apply_role, role_from_env
    from mcunas.engine import run_search, run_worker

    if apply_role(role_from_env(os.environ), config, join=run_worker):
        return  # this process was a worker of a distributed search

    try:  # run_search checks the settings before TensorFlow loads or a folder exists
        with sigterm_as_interrupt():
            result = run_search(config, debug=debug_wanted(), overwrite=overwrite)
    except KeyboardInterrupt:
        if Path(config.out or "").is_dir():
            click.secho(
                f"Interrupted. Finished trials are kept; continue with: "
                f"mcunas search --out {config.out} --resume" + workers_wait(config),
                err=True,
                fg="yellow",
            )
        else:
            click.secho(
                "Interrupted before the first trial; nothing was kept"
                + (workers_wait(config) or "."),
                err=True,
                fg="yellow",
            )
        raise click.exceptions.Exit(130) from None  # the line above is the whole message
    if as_json:
        click.echo(dumps(result.to_dict()))
    else:
        click.echo(result.text())
    if result.best is None:
        raise UserError(result.message or "No feasible candidate.")


def workers_wait(config: SearchConfig) -> str:
    """A chief's workers wait for it: the words that say so (empty for a local search)."""
    if not config.serve:
        return ""
    from mcunas.distributed.worker import CHIEF_RESTART_WAIT_S

    return (
        f". Its workers wait up to {CHIEF_RESTART_WAIT_S / 60:g} min for the chief to come "
        "back and then stop (Ctrl-C stops one now)."
    )


def _config(ctx: click.Context, options: dict[str, Any]) -> SearchConfig:
    if options.pop("no_rescore"):
        finalists = ctx.get_parameter_source("finalists") != click.core.ParameterSource.DEFAULT
        if finalists and options["finalists"] != 0:
            raise UserError(
                f"--no-rescore is --finalists 0, and --finalists {options['finalists']} asks "
                "for re-scoring: give one of them."
            )
        options["finalists"] = 0
    options["objectives"] = tuple(o.strip() for o in options["objectives"].split(",") if o.strip())
    families = options.pop("families")
    if families is not None:
        options["families"] = tuple(f.strip() for f in families.split(",") if f.strip())
        if not options["families"]:
            raise UserError("--families lists no family: give e.g. --families dsconv,mbconv.")
    own = {f.name for f in fields(SearchConfig)}
    options["options"] = {k: options.pop(k) for k in list(options) if k not in own}
    if options["out"] is not None and not options["out"].strip():
        raise UserError("--out is empty: give a folder, or leave --out out for the default.")
    if not options["resume"]:
        if not options["board"]:
            raise UserError("Give --board (see `mcunas boards`), or --out DIR --resume.")
        return SearchConfig(**options)
    if not options["out"]:
        raise UserError("--resume needs --out: the folder of the search to continue.")
    given = {
        k: v
        for k, v in options.items()
        if k != "options" and ctx.get_parameter_source(k) != click.core.ParameterSource.DEFAULT
    }
    given["options"] = {
        k: v
        for k, v in options["options"].items()
        if ctx.get_parameter_source(k) != click.core.ParameterSource.DEFAULT
    }
    if options["finalists"] == 0:
        given["finalists"] = 0  # --no-rescore
    return SearchConfig.resumed(options["out"], given)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a batch system's stop, ``kill``) stops the search as Ctrl-C does.

    Both signals also leave a note (:mod:`mcunas.search.settings.stop`), so a stop whose
    exception Python lost (raised inside a ``__del__``) still ends the search
    after the trial it landed in. An ignored SIGINT (a background job) stays
    ignored.
    """
    from mcunas.search.settings.stop import ask, clear

    def interrupt(signum: int, frame: Any) -> None:
        ask()
        raise KeyboardInterrupt

    clear()
    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    ctrl_c = signal.getsignal(signal.SIGINT)
    if ctrl_c is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if ctrl_c is signal.default_int_handler:
            signal.signal(signal.SIGINT, ctrl_c)
        clear()  # the search is over: the note has done its work

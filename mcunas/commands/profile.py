"""``mcunas profile``: will this INT8 ``.tflite`` fit a board, and how fast will it run."""

from __future__ import annotations

from typing import Any

import click

from mcunas.commands import Ranged, ranged_help
from mcunas.jsontext import dumps

KIB = 1024
COIN_CELL_MAH = 225.0  # a CR2032's nominal capacity


@click.command(
    "profile",
    epilog="""\b
Examples:
  mcunas profile model.tflite --board nucleo_f746zg
  mcunas profile model.tflite --board esp32s3 --kernels reference
  mcunas profile model.tflite --board ./my_board.toml --json
  mcunas profile model.tflite --board nano33ble --clock-mhz 32   # run below its maximum
All figures are simulator estimates: the arena comes from the real TFLite Micro
planner (corrected to a 32-bit MCU), latency from the fitted latency model.""",
)
@click.argument("model", metavar="MODEL.tflite")
@click.option("--board", "board_name", required=True, help="Board name or profile .toml path.")
@click.option(
    "--kernels",
    type=click.Choice(["reference", "cmsis-nn", "esp-nn"]),
    default=None,
    help="Kernel library to assume instead of the board profile's.",
)
@click.option(
    "--clock-mhz",
    type=Ranged("clock_mhz"),
    default=None,
    help=ranged_help(
        "clock_mhz", "Core clock to assume, up to the profile's (above it needs --overclock)."
    ),
)
@click.option("--overclock", is_flag=True, help="Allow a --clock-mhz above the profile's clock.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
def cli(
    model: str,
    board_name: str,
    kernels: str | None,
    clock_mhz: float | None,
    overclock: bool,
    as_json: bool,
) -> None:
    """Estimate latency, arena, peak SRAM, flash and fit of MODEL.tflite on a board."""
    from mcunas.boards import load_board
    from mcunas.errors import ModelError
    from mcunas.profile import profile_model

    board = load_board(board_name)
    if clock_mhz is not None:
        board = board.at_clock(clock_mhz, above_profile=overclock)
    prof = profile_model(model, board, kernels=kernels)
    if not prof.runnable:
        raise ModelError(f"{model}: {'; '.join(prof.reasons[:1])}")
    if as_json:
        click.echo(dumps(prof.to_dict()))
        return
    _print_profile(model, prof)


def _shape(shape: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in shape) or "-"


def _print_profile(model: str, prof: Any) -> None:
    board, lat, mem, graph = prof.board, prof.latency, prof.memory, prof.graph
    place = f", memory: {board.memory}" if board.memory != "sram" else ""
    click.echo(
        f"{model} on {board.name} ({board.core}, {board.clock_hz / 1e6:.0f} MHz, "
        f"kernels: {board.kernels}{place}) - SIMULATOR ESTIMATES ({prof.source})"
    )
    est = {o.index: o for o in lat.ops}
    click.echo(f"{'#':>3}  {'op':<20} {'output':<14} {'MACs':>11} {'est. ms':>9} {'+/-':>4}  accel")
    for op in graph.ops:
        o = est.get(op.index)
        ms = f"{o.ms:9.3f} {o.error_pct:3.0f}%" if o else f"{'-':>9} {'':>4}"
        accel = "yes" if o and o.accelerated else "no"
        shape = _shape(op.output_shape)
        click.echo(f"{op.index:>3}  {op.name:<20} {shape:<14} {op.macs:>11,} {ms}  {accel}")
    click.echo("")
    basis = (
        "this board's fitted table"
        if board.latency_fitted
        else "family defaults, error measured on other boards; `mcunas calibrate` fits this one"
    )
    click.echo(
        f"latency (estimate)  {lat.ms:.2f} ms +/- {lat.error_pct:.0f}% "
        f"({basis}; error by op kind, 50%+ where no measurement covers the kind)"
    )
    click.echo(
        f"lower bound         {lat.lower_bound_ms:.2f} ms at {board.peak_macs_per_cycle:g} "
        f"MACs/cycle; MAC utilisation {lat.mac_utilisation:.1%} of {graph.total_macs:,} MACs"
    )
    click.echo(
        f"arena (estimate)    {mem.arena_bytes / KIB:.1f} KiB "
        f"(budget {board.model_sram_budget_bytes / KIB:.1f} KiB)"
    )
    click.echo(
        f"peak SRAM (est.)    {mem.peak_sram_bytes / KIB:.1f} KiB "
        f"of {board.usable_sram_bytes / KIB:.1f} KiB usable"
    )
    click.echo(
        f"flash (estimate)    {mem.flash_bytes / KIB:.1f} KiB "
        f"of {board.usable_flash_bytes / KIB:.1f} KiB usable "
        f"(model {mem.model_bytes / KIB:.1f} KiB)"
    )
    _print_energy(prof)
    for line in prof.audit.messages():
        click.echo(f"audit: {line}")
    if prof.fits:
        click.secho(f"fits {board.name}: yes", fg="green")
    else:
        click.secho(f"fits {board.name}: NO - " + "; ".join(prof.reasons), fg="red")


def _print_energy(prof: Any) -> None:
    """Energy per inference, and what it means for a battery at one inference a second."""
    from mcunas.predict.energy import board_power

    energy, power = prof.energy, board_power(prof.board)
    click.echo(
        f"energy (estimate)   {energy.uj:.1f} uJ +/- {energy.error_pct:.0f}% per inference "
        f"({energy.power_mw:.1f} mW: {power.supply_v:g} V x {power.active_ma:.2f} mA, "
        f"{energy.basis})"
    )
    if power.idle_ma is not None:
        avg_ma = energy.uj / power.supply_v / 1000.0 + power.idle_ma
        click.echo(
            f"at 1 inference/s    {avg_ma:.3f} mA average with {power.idle_ma:g} mA idle: "
            f"{COIN_CELL_MAH / avg_ma / 24:.0f} days on a {COIN_CELL_MAH:g} mAh CR2032"
        )

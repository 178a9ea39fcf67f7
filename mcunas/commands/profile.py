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
  mcunas profile model.tflite --board nano33ble --frontend frontend.tflite   # a search's best/
With --frontend the audio front end's cost per inference window (every frame of
the model's input) is added: front end + model latency, SRAM and flash, and the fit.
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
@click.option(
    "--frontend",
    "frontend_path",
    default=None,
    metavar="FRONTEND.tflite",
    help="An audio front end (a search's best/frontend.tflite) that feeds MODEL: print the total.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
def cli(
    model: str,
    board_name: str,
    kernels: str | None,
    clock_mhz: float | None,
    overclock: bool,
    frontend_path: str | None,
    as_json: bool,
) -> None:
    """Estimate latency, arena, peak SRAM, flash and fit of MODEL.tflite on a board."""
    from mcunas.boards.catalog import load_board
    from mcunas.cost.profile import profile_model
    from mcunas.errors import ModelError

    board = load_board(board_name)
    if clock_mhz is not None:
        board = board.at_clock(clock_mhz, above_profile=overclock)
    if frontend_path is None and _profile_frontend(model, board, as_json):
        return
    prof = profile_model(model, board, kernels=kernels)
    if not prof.runnable:
        raise ModelError(f"{model}: {'; '.join(prof.reasons[:1])}")
    total = _with_frontend(prof, frontend_path, board)
    if as_json:
        data = prof.to_dict()
        if total is not None:
            data["with_frontend"] = {
                **total.details["cost_split"]["frontend"],
                "total": _totals(total),
            }
        click.echo(dumps(data))
        return
    _print_profile(model, prof)
    if total is not None:
        _print_total(frontend_path or "", total)


def _with_frontend(prof: Any, frontend_path: str | None, board: Any) -> Any:
    """The model's figures with the front end's added (None without ``--frontend``).

    Raises:
        ModelError: the file is not an mcunas audio front end.
    """
    if frontend_path is None:
        return None
    from mcunas.cost.frontend import frontend_cost
    from mcunas.cost.profile import with_frontend
    from mcunas.tflite.reader import load_model_bytes

    shape = tuple(int(d) for d in prof.graph.inputs[0].shape[1:])
    front = frontend_cost(load_model_bytes(frontend_path), shape[0] if shape else 1, board)
    if len(shape) > 1 and shape[1] != front.config.mel_bands:
        click.echo(
            f"note: the model's input {'x'.join(map(str, shape))} does not have the front "
            f"end's {front.config.mel_bands} mel bands per frame",
            err=True,
        )
    return with_frontend(prof.figures(), front, board)


def _totals(total: Any) -> dict[str, Any]:
    return {
        "latency_ms": total.latency_ms,
        "latency_error_pct": total.latency_error_pct,
        "peak_sram_bytes": total.peak_sram_bytes,
        "flash_bytes": total.flash_bytes,
        "energy_uj": total.energy_uj,
        "fits": total.fits,
        "reasons": list(total.reasons),
    }


def _print_total(frontend_path: str, total: Any) -> None:
    """The front end's share and front end + model, per inference window."""
    fe, model = total.details["cost_split"]["frontend"], total.details["cost_split"]["model"]
    cfg = fe["config"]
    click.echo("")
    click.echo(
        f"with {frontend_path} ({cfg['frame_ms']:g} ms frame / {cfg['hop_ms']:g} ms hop, "
        f"{cfg['mel_bands']} mel bands, PCAN {'on' if cfg['pcan'] else 'off'}), "
        f"{fe['frames']} frames per inference - ESTIMATES"
    )
    click.echo(f"{'':<20} {'latency ms':>11} {'SRAM KiB':>9} {'flash KiB':>10}")
    rows = (
        ("front end", fe["latency_ms"], fe["sram_bytes"], fe["flash_bytes"]),
        ("model", model["latency_ms"], model["peak_sram_bytes"], model["flash_bytes"]),
        ("total", total.latency_ms, total.peak_sram_bytes, total.flash_bytes),
    )
    for name, ms, sram, flash in rows:
        click.echo(f"{name:<20} {ms:>11.2f} {sram / KIB:>9.1f} {flash / KIB:>10.1f}")
    click.echo(
        f"front-end SRAM: its own arena {fe['arena_bytes'] / KIB:.1f} KiB (a second "
        f"interpreter, added to the model's) + buffers {fe['buffer_bytes'] / KIB:.1f} KiB "
        "(one frame of samples, the window's feature rows); model SRAM is its peak "
        "(arena + firmware baseline)"
    )
    board = total.details.get("board", "the board")
    if total.fits:
        click.secho(f"front end + model fit {board}: yes", fg="green")
    else:
        click.secho(f"front end + model fit {board}: NO - " + "; ".join(total.reasons), fg="red")


def _profile_frontend(model: str, board: Any, as_json: bool) -> bool:
    """Print an audio front end's estimates; False when MODEL is no front end."""
    from mcunas.frontend.graph import config_of_model
    from mcunas.tflite.reader import load_model_bytes

    data = load_model_bytes(model)
    if config_of_model(data) is None:
        return False
    from mcunas.cost.frontend import estimate_frontend

    est = estimate_frontend(data, board)
    if as_json:
        click.echo(dumps(est.to_dict()))
        return True
    cfg = est.config
    click.echo(
        f"{model}: audio front end ({cfg.frame_ms:g} ms frame / {cfg.hop_ms:g} ms hop, "
        f"{cfg.mel_bands} mel bands, PCAN {'on' if cfg.pcan else 'off'}) on {board.name} "
        f"({board.clock_hz / 1e6:.0f} MHz) - ESTIMATES ({est.source})"
    )
    click.echo(f"{'op':<36} {'loop runs':>9} {'cycles':>9} {'est. ms':>8}")
    for row in est.rows:
        click.echo(f"{row.op:<36} {row.iterations:>9,} {row.cycles:>9,.0f} {row.ms:>8.3f}")
    click.echo(
        f"latency (estimate)  {est.frame_ms:.3f} ms per frame (with the invoke), "
        f"{est.per_second_ms:.1f} ms per second of audio ({est.per_second_ms / 10:.1f}% of a core)"
    )
    click.echo(f"arena (host planner) {est.arena_bytes / KIB:.1f} KiB")
    click.echo(f"flash (graph+tables) {est.flash_bytes / KIB:.1f} KiB, without the kernels' code")
    return True


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
    if not board.latency_fitted:
        from mcunas.cost.setup import band_breakdown

        click.echo(f"  band              {band_breakdown(board, lat.error_pct)}")
    from mcunas.cost.fit.basis import basis_summary

    click.echo(f"  basis             {basis_summary(board)} (setup priors widen the band only)")
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
    from mcunas.cost.energy import board_power

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

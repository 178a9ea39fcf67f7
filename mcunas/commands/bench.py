"""``mcunas bench``: build, flash and measure one model on a real board."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from mcunas.boards.catalog import load_board
from mcunas.commands import SECONDS, ranged_help
from mcunas.figures import Figures
from mcunas.jsontext import dumps
from mcunas.measure.board import DEFAULT_TIMEOUT_S
from mcunas.measure.opener import open_measurer
from mcunas.measure.ports import check_port
from mcunas.paths import user_path

# The firmware project builder; None means mcunas.measure.pio.PioProject. Tests swap in a double.
PROJECT_FACTORY: Any = None


def _report(m: Figures) -> list[str]:
    d = m.details
    lines = [
        f"{d['board']} on {d['port']} (firmware {d['fw']}, "
        f"{'flashed' if d['flashed'] else 'not flashed'}): {m.source}"
        + (" [virtual board: simulated estimates]" if d.get("virtual") else ""),
        f"  latency      {m.latency_ms:.3f} ms median, {m.latency_max_ms:.3f} ms max, "
        f"{d['latency_min_ms']:.3f} ms min ({d['runs']} runs)",
        f"  arena        {m.arena_bytes} B",
        f"  peak SRAM    {m.peak_sram_bytes} B = arena + "
        + ("front-end arena + " if d.get("frontend") else "")
        + f"static RAM {d['static_ram_bytes']} B "
        f"[{d['static_ram_source']}] + stack {d['stack_bytes']} B",
        f"  flash        {m.flash_bytes} B [{d['flash_source']}]",
        _energy_line(m),
        f"  model CRC-32 {m.model_crc32} (checked)",
    ]
    fe = d.get("frontend")
    if fe:
        share = fe["latency_ms"] / (fe["latency_ms"] + m.latency_ms) if m.latency_ms else 0.0
        lines[2:2] = [
            f"  front end    {fe['latency_ms']:.3f} ms median per window of {fe['frames']} frames "
            f"({share:.0%} of front end + model), arena {fe['arena_bytes']} B, "
            f"CRC-32 {fe['crc32']} (checked)",
        ]
    if m.ops:
        slowest = sorted(m.ops, key=lambda o: -o.ms)[:8]
        lines.append(
            "  slowest ops  " + ", ".join(f"#{o.index} {o.op} {o.ms:.3f} ms" for o in slowest)
        )
    if "setup" in d:  # what the firmware says it was built with
        from mcunas.measure.setup_report import describe_setup

        lines.append(f"  setup        {describe_setup(d['setup'])}")
    stages = ", ".join(f"{k[:-2]} {v:.1f} s" for k, v in d["stage_s"].items())
    lines.append(f"  stages       {stages}")
    return lines


def _energy_line(m: Figures) -> str:
    if m.energy_uj is None:
        return "  energy       -"
    split = m.details.get("energy_split")
    if split:  # a front end ran: its share is an estimate, the model's metered or estimated
        model = (
            "measured"
            if str(split["model_source"]).startswith("meter:")
            else f"ESTIMATE +/- {split['model_error_pct'] or 0:.0f}%"
        )
        return (
            f"  energy       {m.energy_uj:.2f} uJ per inference (front end + model) = "
            f"front end {split['frontend_uj']:.2f} uJ (ESTIMATE +/- "
            f"{split['frontend_error_pct']:.0f}%: {split['frontend_source']}) + model "
            f"{split['model_uj']:.2f} uJ ({model}: {split['model_source']})"
        )
    if m.energy_source.startswith("meter:"):
        return f"  energy       {m.energy_uj:.2f} uJ per inference, measured: {m.energy_source}"
    return (
        f"  energy       {m.energy_uj:.2f} uJ +/- {m.energy_error_pct or 0:.0f}% per inference "
        f"(ESTIMATE, no --power meter: {m.energy_source})"
    )


@click.command(
    epilog="""\b
Examples:
  mcunas bench model.tflite --board esp32s3
  mcunas bench model.tflite --board nucleo_f746zg --port /dev/ttyACM0 --json
  mcunas bench model.tflite --board esp32s3 --no-flash --trace serial.log
  mcunas bench model.tflite --board nano33ble --power ppk2:/dev/ttyACM1
  mcunas bench model.tflite --board nucleo_l4r5zi --power joulescope
  mcunas bench model.tflite --board esp32s3 --dry-run --project-dir fw
  mcunas bench out/best --board esp32s3 --port /dev/ttyUSB0   # front end + model
MODEL may be a search's folder or its best/: with best/frontend.tflite the firmware runs
the front end on a raw audio window, then the model on its features, and reports both.
With --power, a meter in the board's supply records the run; the energy of the timed
invokes is integrated while the board's marker pin ([power] marker_pin) is high, or
between the firmware's mark lines when the pin is not wired to the meter.
Exit code 2 with one line on any failure (no board, busy port, timeout, wrong model)."""
)
@click.argument("model", type=click.Path())
@click.option("--board", "board_name", required=True, help="Board profile name or .toml path.")
@click.option("--port", default="auto", show_default=True, help="Serial port, or auto (USB ids).")
@click.option("--no-flash", is_flag=True, help="Only read from a board already running MODEL.")
@click.option(
    "--timeout",
    "timeout_s",
    type=SECONDS,
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help=ranged_help("timeout_s", "Seconds to wait for the board's ready and result lines."),
)
@click.option(
    "--power",
    metavar="METER",
    help="Measure energy with a power meter: joulescope[:SERIAL], ppk2:PORT (or virtual "
    "with a virtual board).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the measurement as JSON.")
@click.option("--trace", type=click.Path(dir_okay=False), help="Log raw serial bytes to this file.")
@click.option(
    "--pio", default="pio", envvar="MCUNAS_PIO", show_default=True, help="PlatformIO executable."
)
@click.option(
    "--project-dir",
    type=click.Path(file_okay=False),
    help="Firmware project folder [default: $MCUNAS_HOME/build/<board>-<port>].",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Only write the firmware project for MODEL and the board: no build, no board needed.",
)
def cli(
    model: str,
    board_name: str,
    port: str,
    no_flash: bool,
    timeout_s: float,
    power: str | None,
    as_json: bool,
    trace: str | None,
    pio: str,
    project_dir: str | None,
    dry_run: bool,
) -> None:
    """Build, flash and measure MODEL.tflite (or a search's best/) on a board over serial."""
    board = load_board(board_name)
    model_bytes, frontend = _model_and_frontend(model)
    if dry_run:
        _write_project(board, model_bytes, project_dir, pio, frontend)
        return
    check_port(port)
    if power:
        from mcunas.measure.power.meter import parse_meter

        parse_meter(power)  # a misspelt meter fails before any build
    options = {"port": port, "flash": not no_flash, "timeout_s": timeout_s, "pio": pio}
    options |= {"trace": trace, "power": power, "project_factory": PROJECT_FACTORY}
    options |= {"work_dir": project_dir}
    with open_measurer("board", board, **options) as measurer:
        m = measurer.measure(model_bytes, frontend=frontend)
    if as_json:
        click.echo(dumps(m.to_dict()))
    else:
        click.echo("\n".join(_report(m)))


def _model_and_frontend(model: str) -> tuple[bytes, bytes | None]:
    """The model's bytes, and ``frontend.tflite``'s when MODEL is a best/ folder that has one.

    Raises:
        UserError: a folder that is no search's output nor its best/.
        ModelError: the model is missing, not a .tflite, or float.
    """
    from mcunas.cost.profile import load_int8_model

    if not Path(model).is_dir():
        return load_int8_model(model)[0], None
    from mcunas.search.finish.export import find_best_dir

    best = find_best_dir(Path(model))
    model_bytes, _ = load_int8_model(best / "model.tflite")
    from mcunas.deploy.best_files import read_best

    return model_bytes, read_best(best).frontend  # the front end best.json names


def _write_project(
    board: Any, model_bytes: bytes, project_dir: str | None, pio: str, frontend: bytes | None
) -> None:
    """``--dry-run``: write the measurement firmware project and say how to build it."""
    from mcunas.files import plain_name
    from mcunas.measure.pio import PioProject

    name = f"{plain_name(board.name, 'board name')}-dry-run"  # a name from a profile file
    work = Path(project_dir) if project_dir else user_path("build", name)
    PioProject(board, work, pio=pio).generate(model_bytes, frontend=frontend)
    click.echo(f"Firmware project for {board.name} written to {work} (not built).")
    click.echo(f"Build and flash it: pio run -e {board.pio_env} -d {work} -t upload")

"""``mcunas space``: the search space, its size, and the reference designs in it."""

from __future__ import annotations

from pathlib import Path

import click

from mcunas.commands import Ranged, ranged_help
from mcunas.errors import UserError
from mcunas.jsontext import dumps
from mcunas.limits import (
    MAX_INPUT_CHANNELS,
    MAX_INPUT_SIDE,
    MAX_INPUT_VALUES,
    check_input_shape,
)

# Samples of random input used to quantize an untrained reference (its graph does not
# depend on them; a trained model is calibrated on real data).
_CALIBRATION_SAMPLES = 8
SHAPE_RANGE = (
    f"[H, W 1 to {MAX_INPUT_SIDE}, C 1 to {MAX_INPUT_CHANNELS}, "
    f"H x W x C at most {MAX_INPUT_VALUES:,}]"
)


def _shape(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        shape = tuple(int(v) for v in text.replace("x", ",").split(","))
    except ValueError:
        raise UserError(f"--input-shape must be like 49,10,1, got {text!r}") from None
    check_input_shape(shape)
    return shape


@click.group(
    "space",
    epilog="""\b
Examples:
  mcunas space show
  mcunas space show --input-shape 128,1,3 --json     # a 3-axis IMU series
  mcunas space reference kws-dscnn --out kws.tflite
  mcunas space reference ic-resnet8 --input-shape 32,32,1 --classes 4 --out small.tflite
  mcunas space reference vww-mobilenet --input-shape 160,160,3 --board nano33ble --out v.tflite
    (refused: too big for the board; nothing is written)""",
)
def cli() -> None:
    """The search space and the known-good designs it contains."""


@cli.command("show")
@click.option("--input-shape", help=f"One input's H,W,C (default 8,8,1: the digits). {SHAPE_RANGE}")
@click.option(
    "--classes",
    type=Ranged("classes"),
    default=10,
    show_default=True,
    help=ranged_help("classes", "Output classes."),
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show_cmd(input_shape: str | None, classes: int, as_json: bool) -> None:
    """List the families and hyperparameters, and count the architectures."""
    from mcunas.tflite.convert import import_tensorflow

    import_tensorflow()  # quietly, before keras-tuner imports it
    import keras_tuner as kt

    from mcunas.space import FAMILIES, McuSearchSpace
    from mcunas.space.reference import REFERENCES
    from mcunas.space.size import hyperparameter_rows, space_size

    shape = _shape(input_shape) or (8, 8, 1)
    hp = kt.HyperParameters()
    McuSearchSpace(shape, classes).declare_hyperparameters(hp)
    rows, size = hyperparameter_rows(hp), space_size(hp)
    refs = {name: ref.title for name, ref in REFERENCES.items()}
    if as_json:
        out = {"input_shape": shape, "families": FAMILIES, "size": size, "references": refs}
        click.echo(dumps({**out, "hyperparameters": rows}))
        return
    click.echo(f"Search space for input {shape}, {classes} classes: families {', '.join(FAMILIES)}")
    click.echo(f"{size:.3e} architectures (10^{len(str(size)) - 1})\n")
    for r in rows:
        when = f"   [if {r['when']}]" if r["when"] else ""
        click.echo(f"  {r['name']:<16} {r['values']!s:<40} default {r['default']!s:<6}{when}")
    click.echo("\nReference designs (mcunas space reference NAME, search --seed-arch NAME):")
    for name, title in refs.items():
        click.echo(f"  {name:<14} {title}")


@cli.command("reference")
@click.argument("name")
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False))
@click.option(
    "--input-shape", help=f"Scale to this input H,W,C (default: the reference's). {SHAPE_RANGE}"
)
@click.option(
    "--classes", type=Ranged("classes"), help=ranged_help("classes", "Scale to this many classes.")
)
@click.option("--board", help="Check that it fits this board (refused, nothing written, if not).")
def reference_cmd(
    name: str, out_path: str, input_shape: str | None, classes: int | None, board: str | None
) -> None:
    """Write reference NAME as an untrained INT8 .tflite built from the search space."""
    from mcunas.boards.catalog import load_board
    from mcunas.space.reference import get_reference

    ref = get_reference(name)  # an unknown name fails before TensorFlow loads
    profile = load_board(board) if board else None
    shape = _shape(input_shape) or ref.input_shape
    from mcunas.files import output_path

    output_path(out_path, "model")  # a folder, device, pipe or socket: refused before the work
    if not Path(out_path).expanduser().absolute().parent.is_dir():
        raise UserError(f"Cannot write {out_path}: its folder does not exist")
    model_bytes = _untrained_int8(shape, classes or ref.num_classes, name)
    fit = _fit_text(name, model_bytes, profile) if profile else ""
    from mcunas.files import write_file
    from mcunas.tflite.reader import read_graph

    write_file(Path(out_path), model_bytes, "model")
    graph = read_graph(model_bytes)
    click.echo(
        f"{name}: {shape} -> {classes or ref.num_classes} classes, {graph.total_macs:,} MACs, "
        f"{len(graph.ops)} ops, {len(model_bytes):,} bytes -> {out_path} (untrained){fit}"
    )


def _fit_text(name: str, model_bytes: bytes, board: object) -> str:
    """``; fits B: ~x ms ...`` or a UserError naming what does not fit."""
    from mcunas.cost.profile import profile_model

    figures = profile_model(model_bytes, board).figures()
    board_name = getattr(board, "name", "")
    if not figures.fits:
        raise UserError(f"{name} does not fit {board_name}: {'; '.join(figures.reasons)}")
    return (
        f"; fits {board_name}: latency ~{figures.latency_ms:.1f} ms (estimate), "
        f"peak SRAM ~{figures.peak_sram_bytes / 1024:.0f} KB"
    )


def _untrained_int8(shape: tuple[int, ...], classes: int, name: str) -> bytes:
    import numpy as np

    from mcunas.tflite.convert import convert_int8, import_tensorflow, to_inference_model

    import_tensorflow()
    from mcunas.space import McuSearchSpace
    from mcunas.space.reference import reference_hyperparameters

    space = McuSearchSpace(shape, classes, families=("stages",))
    model = space.build(space.hyperparameters(**reference_hyperparameters(name, shape)))
    samples = np.random.default_rng(0).random((_CALIBRATION_SAMPLES, *shape), dtype=np.float32)
    return convert_int8(to_inference_model(model), samples)

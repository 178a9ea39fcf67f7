"""``mcunas predict``: run raw inputs through an exported ``best/`` as the board would."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from mcunas.jsontext import dumps
from mcunas.limits import MAX_WAV_SECONDS, read_bound_text


@click.command(
    "predict",
    epilog="""\b
Examples:
  mcunas predict out/best clip1.wav clip2.wav   # out/ (the search's folder) works too
  mcunas predict out/best clips/          # class subfolders: also the accuracy
  mcunas predict out/best test.npz --json
WAV clips go through best/frontend.tflite (when the search exported one) and then
best/model.tflite in the host TFLite Micro runtime; without a front end, WAV clips get
the numpy log-mel the search trained on and .npz inputs are used as they are.
best/ is checked as export checks it: model.tflite must be the model best.json names
(its SHA-256), INT8, and the front end is the one best.json names. Clips must have
the sample rate the model was trained on: others are refused, not resampled.
Inputs are regular files only: a WAV clip up to {wav} ({secs:g} s), an .npz up to
{npz}, best.json up to {json}, a model up to {model}; a FIFO, device or folder
given as a file is refused without being opened for long. .npz labels must be
whole class indices, as many as the samples; NaN inputs are refused.""".format(
        wav=read_bound_text("wav"),
        secs=MAX_WAV_SECONDS,
        npz=read_bound_text("npz"),
        json=read_bound_text("json"),
        model=read_bound_text("model"),
    ),
)
@click.argument("best_dir", metavar="BEST_DIR", type=click.Path(path_type=Path))
@click.argument(
    "paths", metavar="PATH...", nargs=-1, required=True, type=click.Path(path_type=Path)
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def cli(best_dir: Path, paths: tuple[Path, ...], as_json: bool) -> None:
    """Print each input's class and score; with labelled inputs also the accuracy."""
    import numpy as np

    from mcunas.deploy.inference import BestModel, labelled_inputs
    from mcunas.errors import UserError
    from mcunas.search.finish.export import find_best_dir

    with contextlib.suppress(UserError):  # a search's folder or its best/; else as given
        best_dir = find_best_dir(best_dir)
    best = BestModel.load(best_dir)
    rows = []
    for path in paths:
        x, sources, labels = labelled_inputs(best, path)
        rows.extend(best.run(x, sources, labels))
    known = [r for r in rows if r.label is not None]
    accuracy = float(np.mean([r.index == r.label for r in known])) if known else None
    if as_json:
        out = {
            "best": str(best_dir),
            "frontend": best.runner is not None,
            "predictions": [r.to_dict() for r in rows],
            "accuracy": accuracy,
            "labelled": len(known),
        }
        click.echo(dumps(out))
        return
    front = "frontend.tflite -> model.tflite" if best.runner else "model.tflite (no front end)"
    click.echo(f"{best_dir}: {front}, host TFLite Micro runtime")
    width = max(len(r.source) for r in rows) if rows else 0
    for r in rows:
        mark = (
            ""
            if r.label is None
            else ("  ok" if r.index == r.label else f"  (is {best.name_of(r.label)})")
        )
        click.echo(f"{r.source:<{width}}  {r.name:<12} {r.score:.3f}{mark}")
    if accuracy is not None:
        hits = sum(r.index == r.label for r in known)
        click.echo(f"accuracy {accuracy:.1%} ({hits} of {len(known)} labelled inputs)")

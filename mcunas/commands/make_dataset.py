"""``mcunas make-dataset``: write a dataset a search can read, made on this machine."""

from __future__ import annotations

from pathlib import Path

import click

from mcunas.commands import Ranged, ranged_help


@click.group(
    "make-dataset",
    epilog="""\b
Examples:
  mcunas make-dataset spoken-words kws
  mcunas make-dataset spoken-words kws-small --per-class 10 --words yes,no --seed 1
  mcunas make-dataset spoken-words data/kws      # refused: data/kws already holds files
Then: mcunas search --board esp32s3 --dataset kws/train --frontend tflm""",
)
def cli() -> None:
    """Write a dataset made offline, in the folder layout `mcunas search --data` reads."""


@cli.command(
    "spoken-words",
    epilog="""\b
Examples:
  mcunas make-dataset spoken-words kws
  mcunas make-dataset spoken-words kws-small --per-class 10 --words yes,no --seed 1
Needs espeak-ng and sox on PATH (Debian, Ubuntu: apt-get install espeak-ng sox).
Writes OUT/train/<class>/*.wav, OUT/test/<class>/*.wav (voices no training clip
uses), OUT/train/_background_noise_/ and OUT/manifest.json; one seed, same bytes.""",
)
@click.argument("out", metavar="OUT", type=click.Path(path_type=Path))
@click.option(
    "--per-class",
    type=Ranged("per_class"),
    default=30,
    show_default=True,
    help=ranged_help("per_class", "Clips per class, training and test together."),
)
@click.option(
    "--test-fraction",
    type=Ranged("test_fraction"),
    default=0.2,
    show_default=True,
    help=ranged_help("test_fraction", "Share of each class in the test split."),
)
@click.option(
    "--words",
    default="yes,no,up,down,left,right,on,off,stop,go",
    show_default=True,
    help="Comma-separated command words, one class each (plus _unknown_ and _silence_).",
)
@click.option(
    "--seed",
    type=Ranged("seed"),
    default=0,
    show_default=True,
    help=ranged_help("seed", "Every voice, word, offset and noise is drawn from it."),
)
def spoken_words_cmd(
    out: Path, per_class: int, test_fraction: float, words: str, seed: int
) -> None:
    """Spoken command words (espeak-ng voices, sox, noise) as 1 s 16 kHz WAV clips."""
    from mcunas.data import spoken_words

    chosen = tuple(w.strip() for w in words.split(",") if w.strip())
    spoken_words.check_out(out)
    spoken_words.check_tools()
    manifest = spoken_words.make(
        out, per_class, seed, test_fraction, chosen, progress=lambda line: click.echo(line)
    )
    total = sum(sum(c.values()) for c in manifest["counts"].values())
    click.echo(f"{total} clips, {len(manifest['classes'])} classes, in {out}")

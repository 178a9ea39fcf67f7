"""``mcunas export``: a ready PlatformIO project for a search's chosen model."""

from __future__ import annotations

from pathlib import Path

import click


@click.command(
    "export",
    epilog="""\b
Examples:
  mcunas export mcunas-out                      # best/project for the search's board
  mcunas export mcunas-out/best --board nucleo_h743zi --out h743-project
  cd mcunas-out/best/project && pio run -t upload && pio device monitor
The project holds the model as a C array, the op resolver with exactly its ops,
the tensor arena (the search's figure + a margin: 10% measured, 25% estimated),
the input quantisation, a predict() taking floats and returning class scores,
and an example loop printing the class and the latency. Every search writes
best/project for its own board.""",
)
@click.argument("source", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--board", "board_name", help="Board name or profile .toml [default: the search's board]."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    help="Project folder [default: best/project, or best/project-<board> for another board].",
)
@click.option("--json", "as_json", is_flag=True, help="Print the folder and files as JSON.")
def cli(source: str, board_name: str | None, out: str | None, as_json: bool) -> None:
    """Write a deployable PlatformIO project for the model a search chose (SOURCE: its folder)."""
    from mcunas.boards.catalog import load_board
    from mcunas.jsontext import dumps
    from mcunas.search.finish.export import export_project

    board = load_board(board_name) if board_name else None
    folder, target, files = export_project(Path(source), board, Path(out) if out else None)
    if as_json:
        rel = sorted(str(p.relative_to(folder)) for p in files)
        click.echo(dumps({"project": str(folder), "board": target.name, "files": rel}))
        return
    click.echo(f"Project for {target.name} written to {folder} ({len(files)} files).")
    click.echo(f"Build, flash and watch: cd {folder} && pio run -t upload && pio device monitor")

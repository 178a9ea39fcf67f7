"""``mcunas rack``: the boards of a ``rack.toml`` for hardware-in-the-loop search."""

from __future__ import annotations

import click

from mcunas.commands import SECONDS, ranged_help
from mcunas.jsontext import dumps
from mcunas.measure.rack import load_rack, probe_rack

RACK_HELP = "The rack file: [[board]] entries with profile = and port =."


@click.group(
    epilog="""\b
rack.toml:
  [rack]
  max_failures = 3          # failures in a row that take a board out of rotation
  [[board]]
  profile = "esp32s3"
  port = "/dev/ttyACM0"
  name = "s3-left"          # optional
\b
Examples:
  mcunas rack list --rack rack.toml
  mcunas search --board esp32s3 --measure board --rack rack.toml"""
)
def cli() -> None:
    """Manage a rack of boards measured in parallel."""


@cli.command("list", epilog="Example: mcunas rack list --rack rack.toml --timeout 5 --json")
@click.option("--rack", "rack_path", default="rack.toml", show_default=True, help=RACK_HELP)
@click.option(
    "--timeout",
    "timeout_s",
    type=SECONDS,
    default=5.0,
    show_default=True,
    help=ranged_help("timeout_s", "Seconds each board has to print its ready line."),
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_cmd(rack_path: str, timeout_s: float, as_json: bool) -> None:
    """Show each board of the rack and whether it answers."""
    rack = load_rack(rack_path)
    rows = probe_rack(rack, timeout_s)
    if as_json:
        click.echo(
            dumps(
                [
                    {
                        "name": b.name,
                        "profile": b.profile.name,
                        "port": b.port,
                        "answers": r is not None,
                        "fw": r.fw if r else None,
                        "firmware_board": r.board if r else None,
                        "error": e,
                    }
                    for b, r, e in rows
                ],
                indent=2,
            )
        )
        return
    width = max(len(b.name) for b, _, _ in rows)
    click.echo(f"{'name':<{width}}  {'profile':<14} {'port':<20} status")
    for b, ready, error in rows:
        if ready is None:
            status = click.style(f"no answer: {error}", fg="red")
        elif ready.board != b.profile.name:
            status = click.style(f"answers, but runs firmware for '{ready.board}'", fg="yellow")
        else:
            status = click.style(f"ready (firmware {ready.fw})", fg="green")
        click.echo(f"{b.name:<{width}}  {b.profile.name:<14} {b.port:<20} {status}")
    answering = sum(1 for _, r, _ in rows if r is not None)
    click.echo(
        f"\n{answering} of {len(rows)} board(s) answer (rack: {rack.path}, "
        f"out of rotation after {rack.max_failures} failures in a row)."
    )

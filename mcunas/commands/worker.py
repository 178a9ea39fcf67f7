"""``mcunas worker``: run a distributed search's trials for the chief at HOST:PORT."""

from __future__ import annotations

import click

from mcunas.commands import SECONDS, ranged_help
from mcunas.limits import read_bound_text


@click.command(
    "worker",
    epilog="""\b
Examples:
  mcunas worker --connect 10.0.0.5:8470
  mcunas worker --connect chief.lab:8470 --name gpu-3 --dataset /data/kws
  mcunas worker --connect 10.0.0.5:8470 --port /dev/ttyACM0   # chief used --measure board
  mcunas worker --connect chief.lab:8470 --token-file serve.token --tls-ca chief.pem
\b
The chief (`mcunas search --board B --serve HOST:PORT`) holds the settings, the
oracle and the trial store; a worker takes the settings from it, joins if its
mcunas version and dataset content match, runs trials until the search is over,
and sends every result to the chief. Start as many as you like, at any time.""",
)
@click.option("--connect", required=True, metavar="HOST:PORT", help="The chief's --serve address.")
@click.option("--name", help="This worker's name in the trial store [default: <host>-<pid>].")
@click.option(
    "--dataset",
    help="This machine's copy of the dataset [default: the chief's path]; its content "
    "must match the chief's.",
)
@click.option("--port", help="Serial port of this worker's board (the chief's --measure board).")
@click.option("--rack", type=click.Path(dir_okay=False), help="This worker's rack.toml.")
@click.option(
    "--wait",
    "wait_s",
    type=SECONDS,
    default=60.0,
    show_default=True,
    help=ranged_help("timeout_s", "Seconds to wait for the chief to answer before giving up."),
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False),
    help="The chief's shared token (a copy of its --token-file or <out>/serve.token; a "
    f"regular file of at most {read_bound_text('token')}) [default: MCUNAS_TOKEN].",
)
@click.option(
    "--tls-ca",
    type=click.Path(dir_okay=False),
    help="Connect with TLS, trusting this CA certificate (PEM; for a self-signed chief, "
    "its --tls-cert).",
)
def cli(
    connect: str,
    name: str | None,
    dataset: str | None,
    port: str | None,
    rack: str | None,
    wait_s: float,
    token_file: str | None,
    tls_ca: str | None,
) -> None:
    """Join the chief at HOST:PORT and run trials until its search is over."""
    from mcunas.distributed.auth import read_pem, worker_token
    from mcunas.distributed.worker import WorkerSettings
    from mcunas.engine import run_worker
    from mcunas.errors import UserError

    if port and rack:
        raise UserError("Give either --port or --rack, not both.")
    token, ca = worker_token(token_file), read_pem(tls_ca, "--tls-ca")
    settings = WorkerSettings(connect, name, dataset, port, rack, wait_s, token=token, tls_ca=ca)
    import sys

    run_worker(settings, stream=sys.stderr)

"""The ``mcunas`` command line: a thin, lazily loaded layer over the library.

Each subcommand lives in ``mcunas/commands/<name>.py`` as a click command
named ``cli`` and is imported only when run, so ``mcunas --help`` never
imports TensorFlow. Errors are caught once, in :func:`main`.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
import traceback

import click

from mcunas import __version__
from mcunas.commands import DEBUG_KEY
from mcunas.errors import McunasError
from mcunas.quiet import quiet_terminal

# command name -> (module, one-line help shown by `mcunas --help`)
COMMANDS: dict[str, tuple[str, str]] = {
    "boards": ("mcunas.commands.boards", "List board profiles or show one."),
    "profile": ("mcunas.commands.profile", "Estimate latency, memory and fit of a .tflite."),
    "search": ("mcunas.commands.search", "Search for the best INT8 model that fits a board."),
    "worker": ("mcunas.commands.worker", "Run a distributed search's trials for its chief."),
    "bench": ("mcunas.commands.bench", "Build, flash and measure one model on a real board."),
    "export": ("mcunas.commands.export", "Write a ready PlatformIO project for a chosen model."),
    "rack": ("mcunas.commands.rack", "Manage a rack of boards for hardware-in-the-loop."),
    "calibrate": ("mcunas.commands.calibrate", "Measure a kernel suite and fit a board."),
    "latency-model": (
        "mcunas.commands.latency_model",
        "Fit, import and report the latency model.",
    ),
    "predict": ("mcunas.commands.predict", "Run WAV clips, folders or .npz through best/."),
    "space": ("mcunas.commands.space", "Show the search space; write its reference designs."),
    "make-dataset": (
        "mcunas.commands.make_dataset",
        "Write a dataset made offline (spoken words: espeak-ng, sox).",
    ),
}

# former name -> command: still run, hidden from the help, with a notice on stderr
# (kept for one release after the rename)
ALIASES: dict[str, str] = {"predictor": "latency-model"}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Commands whose module exists, in a fixed order."""
        return [n for n, (mod, _) in COMMANDS.items() if importlib.util.find_spec(mod)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Import the command's module and return its ``cli``; a former name warns first."""
        if cmd_name in ALIASES:
            former, cmd_name = cmd_name, ALIASES[cmd_name]
            click.echo(
                f"Warning: `mcunas {former}` is deprecated; use `mcunas {cmd_name}`.", err=True
            )
        if cmd_name not in COMMANDS or cmd_name not in self.list_commands(ctx):
            return None
        return importlib.import_module(COMMANDS[cmd_name][0]).cli

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List commands from the table, without importing them."""
        rows = [(n, COMMANDS[n][1]) for n in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="""\b
Examples:
  mcunas boards
  mcunas profile model.tflite --board nucleo_f746zg
  mcunas search --board esp32s3 --max-latency-ms 50 --max-sram-kb 256
Run `mcunas COMMAND --help` for each command's options.""",
)
@click.version_option(__version__, prog_name="mcunas")
@click.option(
    "--debug",
    is_flag=True,
    help="Show tracebacks for errors, and the libraries' own log lines and warnings.",
)
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """mcunas: find the most accurate INT8 model that fits a microcontroller."""
    ctx.meta[DEBUG_KEY] = debug or os.environ.get("MCUNAS_DEBUG") == "1"


def _leave(code: int, own_process: bool) -> None:
    """Exit with ``code``; a stopped run (130) of a process mcunas owns skips the teardown.

    A search stopped by Ctrl-C or SIGTERM leaves while TensorFlow's own threads
    (the input pipeline's, the runtime's pools) may still run, and tearing the
    interpreter down under them can crash the process after the resume line
    was printed. Everything a resume needs is on disk by then (each trial is
    written as it ends), so the process leaves at once. Called in-process
    (``main(argv)``, tests) it raises ``SystemExit`` as usual.
    """
    if code == 130 and own_process:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(130)
    sys.exit(code)


def _debug_wanted(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get("MCUNAS_DEBUG") == "1"


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; map every error to one line and an exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_wanted(args)
    # gRPC logs every failed TLS handshake at info level (a worker without --tls-ca
    # retrying): errors only, unless asked. Read when grpc loads, so before any command.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    if sys.stdout is None:  # started with stdout closed (`>&-`): nowhere to answer
        click.secho("Error: standard output is closed; mcunas has nowhere to print.", err=True)
        sys.exit(2)
    try:
        # native log lines and dependency warnings stay off the terminal unless --debug
        with quiet_terminal(enabled=not debug):
            # without standalone mode click returns ctx.exit(code)'s code instead of exiting
            code = cli.main(args=args, prog_name="mcunas", standalone_mode=False)
        if isinstance(code, int) and not isinstance(code, bool) and code:
            _leave(code, own_process=argv is None)
    except click.exceptions.Exit as exc:
        _leave(exc.exit_code, own_process=argv is None)
    except click.UsageError as exc:  # one line, not click's usage block
        where = exc.ctx.command_path if exc.ctx else "mcunas"
        click.secho(f"Error: {exc.format_message()} (see '{where} --help')", err=True, fg="red")
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.Abort:
        click.secho("Aborted.", err=True, fg="red")
        _leave(130, own_process=argv is None)
    except KeyboardInterrupt:
        click.secho("Interrupted.", err=True, fg="red")
        _leave(130, own_process=argv is None)
    except McunasError as exc:
        if debug:
            traceback.print_exc()
        click.secho(f"Error: {exc}", err=True, fg="red")
        sys.exit(exc.exit_code)
    except OSError as exc:  # the machine, not mcunas: a closed pipe, a full disk, a bad path
        if debug:
            traceback.print_exc()
        _os_error_line(exc)
    except Exception as exc:  # noqa: BLE001 - the last line of defence
        if _is_serial_error(exc) and not debug:
            click.secho(
                f"Error: serial port: {exc}. Check the cable, the driver and --port.",
                err=True,
                fg="red",
            )
            sys.exit(2)
        traceback.print_exc()
        click.secho(
            "mcunas hit an internal error (above). Please report it with the command you ran.",
            err=True,
            fg="red",
        )
        sys.exit(1)
    sys.exit(0)


def _os_error_line(exc: OSError) -> None:
    """One line for an operating-system error, then exit 2 (or quietly for a closed pipe)."""
    if isinstance(exc, BrokenPipeError):  # the reader went away (`mcunas ... | head`)
        with contextlib.suppress(OSError):  # and no second error when Python flushes at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
    where = f": {exc.filename}" if exc.filename else ""
    what = exc.strerror or str(exc) or type(exc).__name__
    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    click.secho(f"Error: {what}{where} (writing the output or a file failed)", err=True, fg="red")
    sys.exit(2)


def _is_serial_error(exc: BaseException) -> bool:
    return type(exc).__name__ in {"SerialException", "SerialTimeoutException"}

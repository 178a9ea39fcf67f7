"""Click commands, one module each, loaded lazily by :mod:`mcunas.cli`."""

import click

# Where the top-level group keeps ``--debug`` for its commands (``click.Context.meta``).
DEBUG_KEY = "mcunas.debug"


def debug_wanted() -> bool:
    """True if ``mcunas --debug`` (or ``MCUNAS_DEBUG=1``) asked for tracebacks and details."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(DEBUG_KEY))

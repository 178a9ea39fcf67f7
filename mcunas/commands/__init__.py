"""Click commands, one module each, loaded lazily by :mod:`mcunas.cli`."""

import math

import click

# Where the top-level group keeps ``--debug`` for its commands (``click.Context.meta``).
DEBUG_KEY = "mcunas.debug"


def debug_wanted() -> bool:
    """True if ``mcunas --debug`` (or ``MCUNAS_DEBUG=1``) asked for tracebacks and details."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(DEBUG_KEY))


class Seconds(click.ParamType):
    """A duration option: a finite number of seconds above zero (``inf`` and ``nan`` refused)."""

    name = "seconds"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None):  # noqa: ANN201
        """The value as a float, or click's one-line usage error."""
        if isinstance(value, float):
            number = value
        else:
            try:
                number = float(str(value))
            except ValueError:
                self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not (math.isfinite(number) and number > 0):
            self.fail(f"must be a finite number of seconds above 0, got {value}", param, ctx)
        return number


SECONDS = Seconds()

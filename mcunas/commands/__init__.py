"""Click commands, one module each, loaded lazily by :mod:`mcunas.commands.cli`."""

import math

import click

from mcunas.limits import LIMITS

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
        if not LIMITS["timeout_s"].holds(number):
            high = LIMITS["timeout_s"].high
            self.fail(
                f"must be a finite number of seconds above 0, at most {high:g}, got {value}",
                param,
                ctx,
            )
        return number


SECONDS = Seconds()


class Ranged(click.ParamType):
    """A number option whose range is ``mcunas.limits.LIMITS[key]`` (nan and inf refused).

    Example::

        @click.option("--epochs", type=Ranged("epochs"), help=ranged_help("epochs", "..."))
    """

    def __init__(self, key: str) -> None:
        """The option's range is ``LIMITS[key]``."""
        self.limit = LIMITS[key]
        self.name = "integer" if self.limit.integer else "float"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None):  # noqa: ANN201
        """The value as an int or float in range, or click's one-line usage error."""
        if isinstance(value, int | float) and not isinstance(value, bool):
            number: float = value
        else:
            try:
                number = float(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a valid {self.name}", param, ctx)
        if self.limit.integer and math.isfinite(number) and number == int(number):
            number = int(number)
        if not self.limit.holds(number):
            kind = "a whole number" if self.limit.integer else "a number"
            self.fail(f"must be {kind} {self.limit.text()}, got {value}", param, ctx)
        return number


def ranged_help(key: str, text: str) -> str:
    """An option's help with its range appended: ``Training epochs. [1 to 10000]``."""
    return f"{text} [{LIMITS[key].text()}]"

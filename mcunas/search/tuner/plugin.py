"""The Keras Tuner strategy as a registered strategy: its names (one per oracle) and its check.

:mod:`mcunas.engine` registers :data:`PLUGIN`; the strategy itself
(:class:`~mcunas.search.tuner.strategy.TunerStrategy`) and its oracles
(:data:`mcunas.search.tuner.oracles.ORACLES`, keyed by the same names) are imported
when a run makes them. Light: no TensorFlow, no Keras Tuner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcunas.errors import UserError
from mcunas.search.settings.config import SearchConfig
from mcunas.search.settings.plugins import StrategyPlugin, starts_from_reference

if TYPE_CHECKING:
    from mcunas.search.tuner.strategy import TunerStrategy

__all__ = ["NAMES", "PLUGIN", "check_settings"]

# One --strategy per oracle of mcunas.search.tuner.oracles.ORACLES.
NAMES = ("random", "bayesian", "hyperband", "evolution")
HELP = "evolution = aging evolution"


def check_settings(config: SearchConfig) -> None:
    """Refuse a ``--seed-arch`` the Keras Tuner strategies cannot start from.

    Raises:
        UserError: an unknown design, hyperband started on a reference, a space without ``stages``.
    """
    if config.seed_arch in (None, "auto", "none"):
        return
    from mcunas.space.reference import get_reference

    get_reference(config.seed_arch or "")
    if not starts_from_reference(config.strategy):
        raise UserError(
            "--seed-arch starts evolution, random, bayesian or supernet; not hyperband."
        )
    if config.families and "stages" not in config.families:
        raise UserError("--seed-arch is a design of the 'stages' family: add it to --families.")


def _strategy() -> TunerStrategy:
    from mcunas.search.tuner.strategy import TunerStrategy

    return TunerStrategy()


PLUGIN = StrategyPlugin(NAMES, _strategy, HELP, None, check_settings, no_reference=("hyperband",))

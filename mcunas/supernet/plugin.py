"""``--strategy supernet`` as a registered strategy: its options, its check, its plugin.

:mod:`mcunas.engine` registers :data:`PLUGIN`: the strategy
(:class:`~mcunas.supernet.strategy.SupernetStrategy`, imported when a run makes
it), :class:`SupernetOptions` (the options ``mcunas search`` shows for it) and
:func:`check_settings`. Light: no TensorFlow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcunas.errors import UserError
from mcunas.search.settings.config import DEFAULT_SUBNETS, SUPERNET_SCHEDULES, SearchConfig
from mcunas.search.settings.plugins import StrategyPlugin

__all__ = ["HELP", "PLUGIN", "SupernetOptions", "check_settings"]

HELP = (
    "supernet = train one weight-sharing supernet, search its subnets, fine-tune the best "
    "--max-trials"
)


@dataclass(frozen=True)
class SupernetOptions:
    """The supernet strategy's options (``SearchConfig`` fields of the same names)."""

    supernet_epochs: int | None = field(
        default=None,
        metadata={
            "help": "--strategy supernet: epochs of supernet training [default: 2 x --epochs]."
        },
    )
    supernet_schedule: str = field(
        default=SUPERNET_SCHEDULES[0],
        metadata={
            "choices": SUPERNET_SCHEDULES,
            "help": "--strategy supernet: sandwich (every subnet size from the first epoch, with "
            "the largest and smallest in each step) or progressive (Once-for-All's progressive "
            "shrinking: the full network first, then kernels, depths and expansions).",
        },
    )
    subnets: int = field(
        default=DEFAULT_SUBNETS,
        metadata={"help": "--strategy supernet: feasible subnets scored with inherited weights."},
    )
    finetune_epochs: int | None = field(
        default=None,
        metadata={
            "help": "--strategy supernet: fine-tuning epochs of each of the best --max-trials "
            "subnets (0: convert the inherited weights as they are) [default: 20% of --epochs]."
        },
    )


def check_settings(config: SearchConfig) -> None:
    """Refuse settings ``--strategy supernet`` cannot run.

    Raises:
        UserError: families other than ``stages``, an unknown ``--seed-arch``, epochs or
            subnets out of range, an unknown schedule, a searched front end.
    """
    if config.families and tuple(config.families) != ("stages",):
        raise UserError(
            "--strategy supernet searches the 'stages' family only (inverted-residual "
            f"stages); drop --families {','.join(config.families)} or use --strategy evolution."
        )
    if config.seed_arch not in (None, "auto", "none"):
        from mcunas.space.reference import get_reference

        get_reference(config.seed_arch)
    if (config.supernet_epochs is not None and config.supernet_epochs < 1) or config.subnets < 1:
        raise UserError("--supernet-epochs and --subnets must be at least 1.")
    if config.finetune_epochs is not None and config.finetune_epochs < 0:
        raise UserError("--finetune-epochs must be 0 (none) or more.")
    if config.supernet_schedule not in SUPERNET_SCHEDULES:
        raise UserError(
            f"Unknown --supernet-schedule '{config.supernet_schedule}'; "
            f"choose {', '.join(SUPERNET_SCHEDULES)}."
        )
    if config.frontend == "tflm" and config.frontend_space == "search":
        raise UserError(
            "--strategy supernet trains one supernet on one input: it searches with a "
            "fixed front end only (--frontend-space fixed), or use --strategy evolution."
        )


def _strategy() -> Any:
    from mcunas.supernet.strategy import SupernetStrategy

    return SupernetStrategy()


PLUGIN = StrategyPlugin(("supernet",), _strategy, HELP, SupernetOptions, check_settings)

"""The search engine assembled: strategies and executors by name, and the entry points.

A search is one :class:`~mcunas.search.run.SearchRun` with a *strategy* (what is
tried) and an *executor* (where the work runs), both chosen here by name, so
that ``search/`` knows neither the supernet nor the distributed search, and a
new strategy or executor is one :func:`register_strategy` or
:func:`register_executor` call (platformio's test runners work the same way):

- strategies, by ``--strategy``: ``random``, ``bayesian``, ``hyperband`` and
  ``evolution`` are Keras Tuner trials under that oracle
  (:class:`~mcunas.search.tuner_strategy.TunerStrategy`); ``supernet`` is
  :class:`~mcunas.supernet.strategy.SupernetStrategy`;
- executors: ``local`` (this process), ``chief`` (``--serve``: the work goes to
  workers) and ``worker`` (``mcunas worker``).

Example::

    from mcunas.engine import run_search
    from mcunas.search import SearchConfig
    result = run_search(SearchConfig(board="esp32s3", strategy="supernet", out="runs/x"))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO

from mcunas.boards import BoardProfile
from mcunas.errors import UserError
from mcunas.search.config import SearchConfig
from mcunas.search.result import SearchResult
from mcunas.search.run import Executor, Strategy

__all__ = [
    "EXECUTORS",
    "STRATEGIES",
    "check_search",
    "executor_for",
    "register_executor",
    "register_strategy",
    "run_search",
    "run_worker",
    "strategy_for",
]

STRATEGIES: dict[str, Callable[[], Strategy]] = {}
EXECUTORS: dict[str, Callable[[], Executor]] = {}


def register_strategy(name: str, factory: Callable[[], Strategy]) -> None:
    """Make ``--strategy name`` build its strategy with ``factory()`` (one per run)."""
    STRATEGIES[name] = factory


def register_executor(name: str, factory: Callable[[], Executor]) -> None:
    """Make executor ``name`` available (built with ``factory()``, one per run)."""
    EXECUTORS[name] = factory


def strategy_for(config: SearchConfig) -> Strategy:
    """The strategy ``config.strategy`` names.

    Raises:
        UserError: no strategy of that name.
    """
    factory = STRATEGIES.get(config.strategy)
    if factory is None:
        raise UserError(
            f"Unknown strategy '{config.strategy}'; choose {', '.join(sorted(STRATEGIES))}."
        )
    return factory()


def executor_for(config: SearchConfig) -> Executor:
    """The executor of a search started with ``config``: ``chief`` with ``--serve``, else local."""
    return EXECUTORS["chief" if config.serve else "local"]()


def check_search(config: SearchConfig) -> BoardProfile:
    """Check what can be checked before a folder is created or TensorFlow loads.

    The search layer's checks (:func:`mcunas.search.api.check_search`), then
    the strategy's name and, with ``--serve``, the chief's settings.

    Raises:
        UserError: bad settings (one line, exit 2).
    """
    from mcunas.search.api import check_search as check_settings

    board = check_settings(config)
    strategy_for(config)
    if config.serve is not None:
        from mcunas.distributed.wire import check_serve

        check_serve(config)
    return board


def run_search(
    config: SearchConfig,
    *,
    stream: TextIO | None | str = "stderr",
    debug: bool = False,
    overwrite: bool = False,
) -> SearchResult:
    """Run (or resume) a search with the strategy and executor its settings name.

    See :func:`mcunas.search.api.run_search` for the arguments, result and errors.
    """
    from mcunas.search.api import run_search as run_planned

    check_search(config)
    return run_planned(config, stream=stream, debug=debug, overwrite=overwrite, plan=_plan)


def run_worker(settings: Any, stream: TextIO | None = None) -> None:
    """Join a chief as a worker (``mcunas worker``).

    See :func:`mcunas.distributed.worker.run_worker`.
    """
    from mcunas.distributed.worker import run_worker as join

    join(settings, strategy_for, stream=stream)


def _plan(config: SearchConfig) -> tuple[Strategy, Executor]:
    return strategy_for(config), executor_for(config)


def _tuner() -> Strategy:
    from mcunas.search.tuner_strategy import TunerStrategy

    return TunerStrategy()


def _supernet() -> Strategy:
    from mcunas.supernet.strategy import SupernetStrategy

    return SupernetStrategy()


def _local() -> Executor:
    from mcunas.search.local import LocalExecutor

    return LocalExecutor()


def _chief() -> Executor:
    from mcunas.distributed.chief_executor import ChiefExecutor

    return ChiefExecutor()


for _oracle in ("random", "bayesian", "hyperband", "evolution"):
    register_strategy(_oracle, _tuner)
register_strategy("supernet", _supernet)
register_executor("local", _local)
register_executor("chief", _chief)

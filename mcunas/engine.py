"""The search engine assembled: the strategies registered, the executors by name, the entry.

A search is one :class:`~mcunas.search.run.SearchRun` with a *strategy* (what is
tried) and an *executor* (where the work runs), so that ``search/`` knows
neither the supernet nor the distributed search. Every strategy is registered
here, one line each, as a :class:`~mcunas.search.settings.plugins.StrategyPlugin` (its
``--strategy`` names, options and checks; the settings' check and the CLI read
the registry); executors are registered by name (platformio's test runners
work the same way):

- strategies: ``random``, ``bayesian``, ``hyperband`` and ``evolution`` are
  Keras Tuner trials under that oracle (:mod:`mcunas.search.tuner.plugin`);
  ``supernet`` trains one weight-sharing supernet (:mod:`mcunas.supernet.plugin`);
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

from mcunas.boards.catalog import BoardProfile
from mcunas.search.report.result import SearchResult
from mcunas.search.run import Executor, Strategy
from mcunas.search.settings import plugins
from mcunas.search.settings.config import SearchConfig
from mcunas.search.settings.plugins import StrategyPlugin
from mcunas.search.tuner.plugin import PLUGIN as KERAS_TUNER
from mcunas.supernet.plugin import PLUGIN as SUPERNET

__all__ = [
    "EXECUTORS",
    "check_search",
    "executor_for",
    "register_executor",
    "register_strategy",
    "run_search",
    "run_worker",
    "strategy_for",
]

EXECUTORS: dict[str, Callable[[], Executor]] = {}


def register_strategy(plugin: StrategyPlugin) -> None:
    """Make each of ``plugin.names`` a ``--strategy`` (see :mod:`.search.settings.plugins`)."""
    plugins.register(plugin)


def register_executor(name: str, factory: Callable[[], Executor]) -> None:
    """Make executor ``name`` available (built with ``factory()``, one per run)."""
    EXECUTORS[name] = factory


def strategy_for(config: SearchConfig) -> Strategy:
    """The strategy ``config.strategy`` names.

    Raises:
        UserError: no strategy of that name.
    """
    strategy: Strategy = plugins.plugin_for(config.strategy).factory()
    return strategy


def executor_for(config: SearchConfig) -> Executor:
    """The executor of a search started with ``config``: ``chief`` with ``--serve``, else local."""
    return EXECUTORS["chief" if config.serve else "local"]()


def check_search(config: SearchConfig) -> BoardProfile:
    """Check what can be checked before a folder is created or TensorFlow loads.

    The settings (:meth:`SearchConfig.validate`: the strategy's own checks too),
    the board, the data and the folder (:func:`mcunas.search.api.check_search`)
    and, with ``--serve``, the chief's settings.

    Raises:
        UserError: bad settings (one line, exit 2).
    """
    from mcunas.search.api import check_search as check_settings

    board = check_settings(config)
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
    """Run (or resume) a hardware-aware search and write its results.

    The strategy is the one ``config.strategy`` names; the executor is this
    process, or with ``config.serve`` a chief whose workers do the work. Only one
    search may use a folder at a time; a run that fails before any trial is
    recorded removes the output folder it created (see
    :func:`mcunas.search.api.run_planned`).

    Args:
        config: SearchConfig, the search's settings.
        stream: TextIO | None | str, where progress lines go (default ``"stderr"``: the
            current ``sys.stderr``; None: silent).
        debug: bool, print each failed trial's traceback (default False).
        overwrite: bool, delete an earlier search's trials, models and report in the
            folder first (default False: a folder with trials needs ``resume``).

    Returns:
        The :class:`SearchResult` (``best`` is None when no candidate was feasible;
        ``wall_s`` sums every resume of the search).

    Raises:
        UnknownBoard, DatasetError, UserError: bad input, before any training; the
            folder is in use by another search.
        FatalError: the environment broke mid-search (finished trials are kept).
        DiskFull: the disk filled up (finished trials are kept; use --resume).
    """
    from mcunas.search.api import run_planned

    board = check_search(config)
    parts = (strategy_for(config), executor_for(config))
    return run_planned(config, board, parts, stream=stream, debug=debug, overwrite=overwrite)


def run_worker(settings: Any, stream: TextIO | None = None) -> None:
    """Join a chief as a worker (``mcunas worker``).

    See :func:`mcunas.distributed.worker.run_worker`.
    """
    from mcunas.distributed.worker import run_worker as join

    join(settings, lambda config: (strategy_for(config), EXECUTORS["worker"]()), stream=stream)


def _local() -> Executor:
    from mcunas.search.local import LocalExecutor

    return LocalExecutor()


def _chief() -> Executor:
    from mcunas.distributed.chief_executor import ChiefExecutor

    return ChiefExecutor()


def _worker() -> Executor:
    from mcunas.distributed.worker_executor import WorkerExecutor

    return WorkerExecutor()


register_strategy(KERAS_TUNER)
register_strategy(SUPERNET)
register_executor("local", _local)
register_executor("chief", _chief)
register_executor("worker", _worker)

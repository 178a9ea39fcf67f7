"""Hardware-aware architecture search (Keras Tuner + the board's cost model).

The light entry points are importable without TensorFlow::

    from mcunas.search import SearchConfig, run_search

This ``run_search`` runs Keras Tuner searches in this process; every strategy
and executor (``--strategy supernet``, ``--serve``) runs through
:func:`mcunas.engine.run_search`, which takes the same arguments.
"""

from mcunas.search.api import run_search
from mcunas.search.config import SearchConfig
from mcunas.search.result import SearchResult

__all__ = ["SearchConfig", "SearchResult", "run_search"]

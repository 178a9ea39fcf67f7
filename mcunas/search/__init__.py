"""Hardware-aware architecture search (Keras Tuner + the board's cost model).

The light entry points are importable without TensorFlow::

    from mcunas.engine import run_search
    from mcunas.search import SearchConfig

:func:`mcunas.engine.run_search` runs every strategy with every executor; it is
there, above the strategies, because it chooses them from the registry.
"""

from mcunas.search.report.result import SearchResult
from mcunas.search.settings.config import SearchConfig

__all__ = ["SearchConfig", "SearchResult"]

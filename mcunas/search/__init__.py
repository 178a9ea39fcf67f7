"""Hardware-aware architecture search (Keras Tuner + the board's cost model).

The light entry points are importable without TensorFlow::

    from mcunas.search import SearchConfig, run_search
"""

from mcunas.search.api import SearchResult, run_search
from mcunas.search.config import SearchConfig

__all__ = ["SearchConfig", "SearchResult", "run_search"]

"""Hardware-aware architecture search (Keras Tuner + the board's cost model).

The light entry points are importable without TensorFlow::

    from mcunas.search import SearchConfig, run_search
"""

from mcunas.search.api import run_search
from mcunas.search.config import SearchConfig
from mcunas.search.result import SearchResult

__all__ = ["SearchConfig", "SearchResult", "run_search"]

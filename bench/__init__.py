"""Code only the benchmarks call: ``scripts/bench_*.py`` and their tests import it.

It sits beside ``scripts/`` at the repository's top level, outside ``mcunas/``, so the
wheel does not carry it (``tests/test_wheel.py`` checks). Run from a checkout: the
scripts put the repository's folder on ``sys.path``, and pytest does (``pythonpath``).

- :mod:`bench.core_fit`: Cortex-M cycle ratios from published runs.
- :mod:`bench.latency_error`: the latency model's stated error checked board by board.
- :mod:`bench.calibrate_check`: held-out models predicted against a ground truth.
- :mod:`bench.rescore_check`: re-scored finalists at their means, to judge an export.
"""

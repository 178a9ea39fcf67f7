"""The port the audio front end reaches the rest of mcunas through.

A model's input goes through one front end or none: :data:`Frontend` is that,
a :class:`~mcunas.frontend.config.FrontendConfig` (the graph's parameters) or
None (images, ``.npz`` features, the numpy log-mel: inputs used as they are).
Every user is given it explicitly, as a ``frontend`` argument or attribute;
none asks an object whether it has one:

- the dataset: ``load_dataset(frontend=...)`` and ``read_folder`` make WAV
  features with it, and :attr:`mcunas.data.datasets.Dataset.frontend` says which one made
  them;
- the search space: it builds each model for the input its front end makes
  (``McuSearchSpace(input_shape)`` for the fixed one, ``FrontendSpace`` for a
  searched one, which holds the search's front ends);
- the runner (:class:`mcunas.search.trial.runner.KerasRunner`): given the searched
  front ends, it trains each trial on its own front end's data, and it hands the
  trial's front end to the measurer;
- the measurer: ``Measurer.measure(model_bytes, frontend=graph_of(frontend))``;
  a board flashes the graph with the model and reports its figures in
  ``details["frontend"]``, a measurer that cannot run it measures the model
  alone (and the trial adds the front end's estimated cost);
- the exporter: ``export_best(frontend=...)`` writes ``frontend.tflite``.

The measurer takes the graph's bytes, not the parameters: what a board runs is
a ``.tflite``, and ``mcunas bench`` or ``profile --frontend`` give it one read
from a file (:func:`mcunas.frontend.graph.config_of_model` reads the parameters
back).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TypeAlias

from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import frontend_model

__all__ = ["Frontend", "graph_of"]

Frontend: TypeAlias = FrontendConfig | None


def graph_of(frontend: Frontend) -> bytes | None:
    """The front end's ``frontend.tflite`` bytes, or None without a front end."""
    return None if frontend is None else _graph(frontend)


@lru_cache(maxsize=16)
def _graph(frontend: FrontendConfig) -> bytes:
    return frontend_model(frontend)

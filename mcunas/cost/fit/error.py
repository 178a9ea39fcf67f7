"""The error a calibrated profile states: a 90% band of cross-validated errors.

After ``mcunas calibrate`` a library's ``error_pct`` is :func:`cv_band` of its K-fold
cross-validation over the suite's models, the same form as a bare profile's band
(:func:`mcunas.cost.fit.scale.path_band`). With fewer than :data:`FEW_MODELS`
models (``--quick``), each fold leaves out every variant only its model ran, so the
band comes from held-out ops of measured variants instead (:func:`few_model_band`).

Example::

    cv_band([(1.1, 1.0), (0.95, 1.0)])   # (predicted, measured) -> band in %
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcunas.boards.catalog import BoardProfile
    from mcunas.cost.fit.kernels import GraphOf
    from mcunas.cost.fit.records import OpRecord

__all__ = ["FEW_MODELS", "cv_band", "few_model_band"]


# Under this many models (a `--quick` calibration), a K-fold over models leaves out
# every variant only the held-out model ran: the band comes from held-out ops instead.
FEW_MODELS = 5


def few_model_band(
    prior: BoardProfile,
    entry: dict[str, Any],
    ops: Sequence[OpRecord],
    graph_of: GraphOf,
    kfold_median: float,
) -> None:
    """The band of a few-model calibration: leave-one-op-out over measured variants."""
    from mcunas.cost.fit.kernels import op_cross_validate

    pairs = op_cross_validate(prior, ops, graph_of)
    if len(pairs) >= FEW_MODELS:
        entry["error_pct"] = cv_band(pairs)
        entry["error_method"] = (
            f"90% band of leave-one-op-out over {len(pairs)} ops of variants measured twice "
            f"or more (leaving out whole models: median {kfold_median:.1f}%)"
        )


def cv_band(pairs: Sequence[tuple[float, float]]) -> float:
    """A 90% prediction interval (in %) from cross-validated ``(predicted, measured)`` pairs.

    exp(1.645 x the root mean square log error) - 1, the form of the bare profiles'
    bands (:func:`mcunas.cost.fit.scale.path_band`), never below the median error.
    The median alone, stated before, held 56-89% of held-out models on the virtual
    board after a full calibration.
    """
    from mcunas.cost.fit.scale import BAND_Z

    logs = [math.log(p / m) for p, m in pairs if p > 0 and m > 0]
    if not logs:
        return float("nan")
    rms = math.sqrt(statistics.fmean(x * x for x in logs))
    median = statistics.median(abs(p / m - 1) * 100 for p, m in pairs if m > 0)
    return round(max((math.exp(BAND_Z * rms) - 1) * 100, median), 1)

"""The audio front end of a search: fixed, or searched with the network.

With ``--frontend tflm`` a WAV dataset's features come from the front-end graph
(:mod:`mcunas.frontend`). ``--frontend-space fixed`` keeps one front end (30 ms
frame, 20 ms hop, 40 mel bands, no PCAN: micro_speech's). ``--frontend-space
search`` makes its parameters hyperparameters of the search, declared beside the
network's (:class:`FrontendSpace`), so they appear in every trial's
hyperparameters, the summary and the Pareto front:

- ``frontend_window``: frame / hop in ms, ``30/20``, ``40/20`` or ``25/10``;
- ``frontend_bands``: mel bands, 40, 32 or 20;
- ``frontend_pcan``: noise reduction and PCAN gain control, off or on;
- ``frontend_duration_ms``: the input's length, the whole clip or its first
  3/4 or 1/2 (clips of 0.5 s and more; the first value is the whole clip).

The first value of each is the fixed front end. Features are computed once per
distinct front end (the graph's bytes and the clips' contents are the cache key,
under ``OUT/cache/``), so a resumed search reads them back; a shorter duration
is the first frames of the whole clip's features (the graph is causal: a frame's
features depend on no later frame), as ``mcunas predict`` cuts a clip.

Example::

    fronts = FrontendSearch(config, board, out / "cache")
    data = fronts.select({"frontend_window": "25/10", "frontend_bands": 20})
    figures = fronts.add(model_figures)   # front end + model, split in details
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mcunas.boards.catalog import BoardProfile
from mcunas.errors import UserError
from mcunas.figures import Figures
from mcunas.search.settings.config import SearchConfig
from mcunas.space.values import HpValue

if TYPE_CHECKING:
    import keras_tuner as kt
    import numpy as np

    from mcunas.cost.frontend import FrontendCost
    from mcunas.data.datasets import Dataset
    from mcunas.frontend.config import FrontendConfig
    from mcunas.frontend.port import Frontend

__all__ = [
    "BANDS",
    "FRONTEND_HPS",
    "WINDOWS",
    "FrontendSearch",
    "declare_frontend",
    "duration_choices",
]

WINDOWS = ("30/20", "40/20", "25/10")  # frame / hop, ms; the first is micro_speech's
BANDS = (40, 32, 20)
DURATION_SHARES = (1.0, 0.75, 0.5)  # of the clips' length
MIN_CUT_MS = 500  # shorter clips are not cut
FRONTEND_HPS = ("frontend_window", "frontend_bands", "frontend_pcan", "frontend_duration_ms")
KEPT_IN_MEMORY = 4  # datasets of distinct front ends held at once (the disk cache has all)


def duration_choices(clip_ms: int) -> tuple[int, ...]:
    """The input lengths (ms) a search may choose for clips of ``clip_ms``: whole first."""
    if clip_ms < MIN_CUT_MS:
        return (clip_ms,)
    cuts = (clip_ms if s == 1 else int(clip_ms * s) // 10 * 10 for s in DURATION_SHARES)
    return tuple(dict.fromkeys(cuts))


def declare_frontend(hp: kt.HyperParameters, durations: tuple[int, ...]) -> None:
    """Declare the front end's hyperparameters (defaults: the fixed front end)."""
    hp.Choice("frontend_window", list(WINDOWS))
    hp.Choice("frontend_bands", list(BANDS))
    hp.Boolean("frontend_pcan", default=False)
    hp.Choice("frontend_duration_ms", list(durations))


class FrontendSearch:
    """The search's front ends: the data each one makes, and what each one costs.

    On data that are not WAV clips (``default.frontend`` is None) there is no front
    end: the run keeps none (and ``--frontend-space search`` is refused).

    Args:
        config: SearchConfig (``dataset``, ``seed``, ``frontend_space``).
        board: BoardProfile, where the costs are estimated.
        cache_dir: Path, where the features are cached (``OUT/cache``).

    Raises:
        UserError: ``--frontend-space search`` on data that are not WAV clips.
    """

    def __init__(self, config: SearchConfig, board: BoardProfile, cache_dir: Path) -> None:
        from mcunas.frontend.config import FrontendConfig

        self.config, self.board, self.cache_dir = config, board, Path(cache_dir)
        self.searched = config.frontend_space == "search"
        self._data: OrderedDict[Frontend, Dataset] = OrderedDict()
        self._costs: dict[tuple[Frontend, int], FrontendCost] = {}
        self.default = self._load(FrontendConfig())
        base = self.default.frontend
        if base is None:  # not WAV clips: their features are used as they are
            if self.searched:
                raise UserError(
                    "--frontend-space search needs a WAV dataset (a folder of class "
                    "subfolders of .wav clips); use --frontend-space fixed."
                )
            base = FrontendConfig()
        self.rate = base.sample_rate
        self.clip_ms = int(round(1000 * _clip_samples(base, self.default) / self.rate))
        self.durations = duration_choices(self.clip_ms) if self.searched else (self.clip_ms,)
        self.current = self.default

    # ------------------------------------------------------------------ data
    def _load(self, cfg: FrontendConfig) -> Dataset:
        from mcunas.data.datasets import load_dataset

        key = cfg
        if key in self._data:
            self._data.move_to_end(key)
            return self._data[key]
        data = load_dataset(
            self.config.dataset, seed=self.config.seed, frontend=cfg, cache_dir=self.cache_dir
        )
        self._data[key] = self._data[data.frontend] = data
        while len(self._data) > KEPT_IN_MEMORY:
            self._data.popitem(last=False)
        return data

    def config_of(self, values: Mapping[str, HpValue]) -> tuple[FrontendConfig, int]:
        """The front end (at the clips' rate) and input length (ms) of a trial's values."""
        from mcunas.frontend.config import FrontendConfig

        frame, hop = (float(v) for v in str(values.get("frontend_window", WINDOWS[0])).split("/"))
        cfg = FrontendConfig(
            frame_ms=frame,
            hop_ms=hop,
            mel_bands=int(values.get("frontend_bands", BANDS[0])),
            pcan=bool(values.get("frontend_pcan", False)),
        ).at_rate(self.rate)
        return cfg, int(values.get("frontend_duration_ms", self.clip_ms))

    def dataset_of(self, values: Mapping[str, HpValue]) -> Dataset:
        """The dataset a trial with these hyperparameter values trains on."""
        if not self.searched:
            return self.default
        cfg, duration = self.config_of(values)
        data = self._load(cfg)
        frames = cfg.frames(int(duration * self.rate / 1000))
        if duration >= self.clip_ms or frames >= data.input_shape[0]:
            return data
        return _first_frames(data, frames)

    def select(self, values: Mapping[str, HpValue]) -> Dataset:
        """Make the trial with these values the current one; its dataset."""
        self.current = self.dataset_of(values)
        return self.current

    # ------------------------------------------------------------------ cost
    def cost_of(self, data: Dataset) -> FrontendCost:
        """The front end's :class:`~mcunas.cost.frontend.FrontendCost` for ``data``'s input."""
        frames = int(data.input_shape[0])
        key = (data.frontend, frames)
        if key not in self._costs:
            from mcunas.cost.frontend import frontend_cost
            from mcunas.frontend.graph import frontend_model

            assert data.frontend is not None  # the front ends' data all have one
            self._costs[key] = frontend_cost(frontend_model(data.frontend), frames, self.board)
        return self._costs[key]

    def add(self, figures: Figures) -> Figures:
        """The current trial's front end added to a model's figures (front end + model)."""
        from mcunas.cost.profile import with_frontend

        return with_frontend(figures, self.cost_of(self.current), self.board)

    def describe(self, values: Mapping[str, HpValue]) -> str:
        """``fe 25/10 ms, 20 mel, PCAN, 750 ms`` for a trial's values."""
        cfg, duration = self.config_of(values)
        pcan = ", PCAN" if cfg.pcan else ""
        return f"fe {cfg.frame_ms:g}/{cfg.hop_ms:g} ms, {cfg.mel_bands} mel{pcan}, {duration} ms"


def _clip_samples(cfg: FrontendConfig, data: Dataset) -> int:
    """The clips' length in samples, from the whole-clip features' frame count."""
    return cfg.frame_samples + (int(data.input_shape[0]) - 1) * cfg.hop_samples


def _first_frames(data: Dataset, frames: int) -> Dataset:
    """``data`` with every input cut to its first ``frames`` frames."""

    def cut(x: np.ndarray) -> np.ndarray:
        return x[:, :frames]

    return dataclasses.replace(
        data,
        x_train=cut(data.x_train),
        x_val=cut(data.x_val),
        x_test=None if data.x_test is None else cut(data.x_test),
        noise=None if data.noise is None else cut(data.noise),
        input_shape=(frames, *data.input_shape[1:]),
        preprocessing=f"{data.preprocessing}; the first {frames} frames",
    )

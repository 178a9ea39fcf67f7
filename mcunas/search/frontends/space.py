"""The search space with the audio front end's parameters searched beside the network's.

:class:`FrontendSpace` is :class:`mcunas.space.McuSearchSpace` with the front
end's hyperparameters (:func:`mcunas.search.frontends.searched.declare_frontend`) declared
first; each trial's model is built for the input its front end makes (frames x
mel bands), and :meth:`FrontendSpace.dataset_for` gives that trial's data (the
runner is given the same front ends: ``KerasRunner(fronts=...)``). Keras is
imported here: only a search that runs imports this module.

Example::

    space = FrontendSpace(fronts, num_classes=3, families=("dsconv",))
    hp = space.hyperparameters(frontend_window="25/10", frontend_bands=20)
    data = space.dataset_for(hp)          # features of that front end
    model = space.build(hp)               # input (frames, 20, 1)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import keras_tuner as kt

from mcunas.search.frontends.searched import FRONTEND_HPS, FrontendSearch, declare_frontend
from mcunas.space.hypermodel import FAMILIES, McuSearchSpace
from mcunas.space.values import HpValue

if TYPE_CHECKING:
    import keras

    from mcunas.data.datasets import Dataset

__all__ = ["FrontendSpace"]


class FrontendSpace(McuSearchSpace):
    """The network's space and the front end's, one set of hyperparameters.

    Args:
        fronts: FrontendSearch, the search's front ends and their data.
        num_classes: int, number of classes.
        families: tuple[str, ...], the network families searched.
    """

    def __init__(
        self, fronts: FrontendSearch, num_classes: int, families: tuple[str, ...] = FAMILIES
    ) -> None:
        super().__init__(fronts.default.input_shape, num_classes, families)
        self.fronts = fronts

    def declare_hyperparameters(self, hp: kt.HyperParameters) -> dict[str, HpValue]:
        """Declare the front end's hyperparameters, then the network's; the active ones."""
        declare_frontend(hp, self.fronts.durations)
        return super().declare_hyperparameters(hp)

    def dataset_for(self, hp: kt.HyperParameters) -> Dataset:
        """The trial's data (features of its front end), made the current trial's."""
        return self.fronts.select(dict(hp.values))

    def trial_dataset(self, values: Mapping[str, HpValue]) -> Dataset:
        """The data of a stored trial's hyperparameter values (not made the current one)."""
        return self.fronts.dataset_of(values)

    @staticmethod
    def frontend_key(values: Mapping[str, HpValue]) -> str:
        """The front-end part of a trial's values, as text (equal for the same front end)."""
        return ",".join(f"{k}={values.get(k)}" for k in FRONTEND_HPS)

    def build(self, hp: kt.HyperParameters) -> keras.Model:
        """Build the network for the input the trial's front end makes."""
        shape = self.fronts.dataset_of(dict(hp.values)).input_shape
        self.input_shape = tuple(int(d) for d in shape)
        try:
            return super().build(hp)
        finally:
            self.input_shape = tuple(int(d) for d in self.fronts.default.input_shape)

    def describe(self, hp: kt.HyperParameters) -> str:
        """The network's line and the front end's: ``... | fe 25/10 ms, 20 mel, 500 ms``."""
        return f"{super().describe(hp)} | {self.fronts.describe(dict(hp.values))}"

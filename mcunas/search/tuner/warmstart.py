"""Hyperband warm start: promoted trials continue from their parent's weights.

keras-tuner's Hyperband oracle promotes the best trials of a round as new
trials whose hyperparameters carry ``tuner/trial_id`` (the parent),
``tuner/initial_epoch`` and ``tuner/epochs``. As in keras-tuner's own
``Hyperband`` tuner, such a trial starts from its parent's trained weights and
trains only epochs ``tuner/initial_epoch`` to ``tuner/epochs``. A Hyperband
trial that may become a parent keeps its weights as ``trial_<id>.weights.npz``
next to its ``.tflite`` (in the run folder, so ``--resume`` finds them); other
strategies write no weights. A parent whose weights are missing or do not fit
means training from scratch, noted in the trial's ``reason``.

Example::

    warm = WarmStart(runner, store, models_dir)
    start = warm.start(model, hp_values)
    warm.train(model, hp_values, start, default_epochs=30)
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import keras_tuner

from mcunas.errors import FatalError, describe
from mcunas.files import plain_name, storage_errors, write_file
from mcunas.search.results.curves import CurveBound
from mcunas.search.results.record import HpValues
from mcunas.search.results.trial_store import Store
from mcunas.search.settings.config import WARM_START_ENV
from mcunas.search.trial.pipeline import CandidateRunner, TrainResult

if TYPE_CHECKING:
    import keras

__all__ = ["WARM_START_ENV", "WEIGHTS_SUFFIX", "Start", "WarmStart"]

# A Hyperband parent's weights: models/trial_<id>.weights.npz.
WEIGHTS_SUFFIX = ".weights.npz"


@dataclass(frozen=True)
class Start:
    """How a trial starts: ``parent`` set only for a promoted Hyperband trial."""

    parent: str | None = None
    initial_epoch: int = 0  # the epoch training resumes at (warm start only)
    before: int = 0  # epochs the parent had run (added to this trial's epochs_run)
    note: str | None = None  # why a promoted trial trains from scratch

    @property
    def warm(self) -> bool:
        """True when the parent's weights were loaded."""
        return self.parent is not None and self.note is None


class WarmStart:
    """Keeps Hyperband parents' weights and starts promoted trials from them.

    Args:
        runner: the tuner's CandidateRunner (``save_weights``/``load_weights``
            optional: without them every trial trains from scratch).
        store: Store, for the parent's ``epochs_run`` and descriptions.
        models_dir: the run's models folder.
        enabled: keep and load parents' weights (``SearchConfig.warm_start``).
    """

    def __init__(
        self, runner: CandidateRunner, store: Store, models_dir: Path, enabled: bool = True
    ) -> None:
        self.runner, self.store, self.models_dir, self.enabled = runner, store, models_dir, enabled

    def weights_path(self, trial_id: str) -> Path:
        """Where trial ``trial_id``'s trained weights are kept (Hyperband parents only)."""
        return self.models_dir / f"trial_{plain_name(trial_id, 'trial id')}{WEIGHTS_SUFFIX}"

    def keeps_weights(self, values: HpValues) -> bool:
        """True for a Hyperband trial that a later round may promote (not its last round)."""
        if not self.enabled or getattr(self.runner, "save_weights", None) is None:
            return False
        if "tuner/epochs" not in values or "tuner/bracket" not in values:
            return False
        return int(values.get("tuner/round", 0)) < int(values["tuner/bracket"])

    def save(self, model: keras.Model, tid: str) -> str | None:
        """Write the weights atomically; a note if they could not be kept (None: kept).

        A full disk stops the search (:class:`DiskFull`); any other failure leaves the
        trial OK, and a promoted child trains from scratch.
        """
        final = self.weights_path(tid)
        try:
            # saved in a private folder, then written into models/ following no link there
            with tempfile.TemporaryDirectory(prefix="mcunas-weights-") as private:
                tmp = Path(private) / final.name
                with storage_errors(tmp):
                    self.runner.save_weights(model, tmp)
                    data = tmp.read_bytes()
            write_file(final, data, "Hyperband weights", inside=self.models_dir.parent)
        except FatalError:
            raise
        except Exception as exc:  # noqa: BLE001 - the trial itself is fine
            return f"weights not kept for Hyperband: {describe(exc)}"
        return None

    def start(self, model: keras.Model, values: HpValues) -> Start:
        """Load the parent's weights into ``model`` if this is a promoted Hyperband trial."""
        parent = values.get("tuner/trial_id")
        load = getattr(self.runner, "load_weights", None)
        if parent is None or not self.enabled or load is None:
            return Start()
        parent = str(parent)
        path = self.weights_path(parent)
        if not path.is_file():
            return Start(parent, note=f"parent trial {parent} has no saved weights")
        try:
            loaded = load(model, path)
        except (FatalError, keras_tuner.errors.FatalError):
            raise
        except Exception as exc:  # noqa: BLE001 - an unreadable file means: train from scratch
            return Start(parent, note=f"parent trial {parent}'s weights: {describe(exc)}")
        if not loaded:
            return Start(parent, note=f"parent trial {parent}'s weights do not fit this model")
        initial = int(values.get("tuner/initial_epoch", 0))
        rec = self.store.get(parent)
        before = rec.epochs_run if rec is not None and rec.epochs_run is not None else initial
        return Start(parent, initial_epoch=initial, before=before)

    @staticmethod
    def epochs(values: HpValues, default_epochs: int) -> int:
        """The epochs a trial's schedule runs to (Hyperband's ``tuner/epochs`` wins)."""
        return int(values.get("tuner/epochs", default_epochs))

    def note(self, tid: str, description: str | None, start: Start) -> str | None:
        """Say in the description how a promoted trial started; the note for its reason."""
        if start.parent is None:
            return None
        what = (
            f"warm start from trial {start.parent} at epoch {start.initial_epoch}"
            if start.warm
            else f"trained from scratch: {start.note}"
        )
        self.store.update(tid, description=" | ".join(filter(None, [description, what])))
        return None if start.warm else what

    def train(
        self,
        model: keras.Model,
        values: HpValues,
        start: Start,
        default_epochs: int,
        bound: CurveBound | None = None,
    ) -> TrainResult:
        """Train from scratch, or on from the parent's epoch for a warm start (a TrainResult).

        ``bound``: the rung test of a training from scratch (a warm start has none).
        """
        epochs = self.epochs(values, default_epochs)
        if not start.warm:
            if bound is not None:
                return self.runner.train(model, epochs, bound=bound)
            return self.runner.train(model, epochs)
        # Hyperband always raises the epoch count; at least one epoch should it ever not.
        return self.runner.train(
            model, max(epochs, start.initial_epoch + 1), initial_epoch=start.initial_epoch
        )

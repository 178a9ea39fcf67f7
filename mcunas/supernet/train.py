"""Training the supernet with the sandwich rule, checkpointed every epoch.

Each step trains four subnets on one batch and applies their summed gradients
(BigNAS's sandwich rule): the largest, the smallest and two drawn at random.
The largest learns from the labels; the others from half labels, half the
largest's predictions (in-place distillation), which keeps the small subnets'
ranking close to their stand-alone ranking. Data, augmentation, class weights
and label smoothing are the search's recipe; Adam on a cosine decay over all
the supernet's steps. The ``progressive`` schedule (Once-for-All's progressive
shrinking) keeps the same steps but lets the smaller and random subnets differ
from the largest in one more dimension per quarter of the epochs
(:func:`elastic_dims`).

After every epoch the weights, the optimizer state and the epoch are written
to ``<out>/supernet/checkpoint.npz`` (atomically); a resumed run starts at the
next epoch with the same draws and batches it would have had.
"""

from __future__ import annotations

import io
import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import keras
import numpy as np

from mcunas.errors import UserError
from mcunas.files import READ_ERRORS, unreadable, write_file
from mcunas.search.settings.config import SUPERNET_SCHEDULES
from mcunas.search.training.recipe import (
    COSINE_FLOOR,
    Recipe,
    common_steps,
    steps_per_epoch,
    training_data,
)
from mcunas.supernet.jobs import CHECKPOINT, checkpoint_epochs
from mcunas.supernet.model import Supernet, controls
from mcunas.supernet.spec import Subnet, SupernetSpec, largest, random_subnet, smallest

__all__ = [
    "CHECKPOINT",
    "SupernetTrainer",
    "checkpoint_epochs",
    "elastic_dims",
    "read_checkpoint",
    "within_dims",
]

CHECKPOINT_FIX = "delete it to train the supernet again from its first epoch, or restore a copy"
LEARNING_RATE = 0.003
DISTILL = 0.5  # share of the largest subnet's predictions in the others' targets
RANDOM_PER_STEP = 2
JIT = False  # XLA recompiles per subnet here: slower
ELASTIC_ORDER = ("resolution", "kernel", "depth", "expansion")  # progressive shrinking's order


class SupernetTrainer:
    """Trains (or resumes) one supernet in an output folder.

    Args:
        spec: SupernetSpec, the supernet's shape.
        dataset: Dataset, training data (validation is not used here).
        recipe: Recipe, batch size, augmentation, class weights, label smoothing.
        epochs: int, supernet epochs in all.
        out_dir: Path, the search folder (the checkpoint goes under it).
        seed: int, draws, batches and initial weights.
        schedule: str, ``sandwich`` (every dimension elastic from the first epoch) or
            ``progressive`` (Once-for-All's progressive shrinking, :func:`elastic_dims`).
    """

    def __init__(
        self,
        spec: SupernetSpec,
        dataset: Any,
        recipe: Recipe,
        epochs: int,
        out_dir: Path,
        seed: int = 0,
        schedule: str = SUPERNET_SCHEDULES[0],
    ) -> None:
        if schedule not in SUPERNET_SCHEDULES:
            raise UserError(
                f"unknown supernet schedule {schedule!r}; choose from {SUPERNET_SCHEDULES}"
            )
        keras.utils.set_random_seed(seed)
        recipe = common_steps(recipe, len(dataset.x_train))  # not small series sets' 4x
        self.spec, self.dataset, self.recipe = spec, dataset, recipe
        self.epochs, self.seed, self.schedule = epochs, seed, schedule
        self.out_dir = Path(out_dir)
        self.path = self.out_dir / CHECKPOINT
        self.model = Supernet(spec)
        self.model.build_all()
        self.steps = steps_per_epoch(recipe, len(dataset.x_train))
        schedule = keras.optimizers.schedules.CosineDecay(
            LEARNING_RATE, decay_steps=max(1, self.steps * epochs), alpha=COSINE_FLOOR
        )
        self.optimizer = keras.optimizers.Adam(schedule)
        self.optimizer.build(self.model.trainable_variables)
        self.epochs_done = 0
        self._fns: dict[int, Any] = {}
        self._apply = _apply_fn(self.optimizer, self.model)

    # --------------------------------------------------------------- checkpoint
    def load(self) -> int:
        """Restore the checkpoint if there is one; return the epochs it had done.

        Raises:
            UserError: the checkpoint is of another supernet or unreadable.
        """
        if not self.path.is_file():
            return 0
        meta, weights, opt = read_checkpoint(self.path)
        spec = json.loads(json.dumps(self.spec.to_dict()))  # tuples as the JSON lists
        schedule = meta.get("schedule", SUPERNET_SCHEDULES[0])  # older checkpoints: sandwich
        if (meta.get("spec"), meta.get("epochs"), schedule) != (spec, self.epochs, self.schedule):
            raise UserError(
                f"{self.path} holds another supernet (other data shape, --supernet-epochs "
                "or schedule); use a new --out."
            )
        try:
            self.model.set_weights(weights)
            for var, value in zip(self.optimizer.variables, opt, strict=True):
                var.assign(value)
        except (ValueError, TypeError) as exc:  # arrays of other shapes or counts
            raise unreadable(self.path, "supernet checkpoint", CHECKPOINT_FIX, exc) from None
        self.epochs_done = int(meta["done"])
        return self.epochs_done

    def save(self) -> None:
        """Write weights, optimizer state and progress atomically."""
        weights = self.model.get_weights()
        opt = [v.numpy() for v in self.optimizer.variables]
        meta = {
            "spec": self.spec.to_dict(),
            "epochs": self.epochs,
            "schedule": self.schedule,
            "done": self.epochs_done,
            "weights": len(weights),
            "optimizer": len(opt),
        }
        arrays = {f"w{i}": w for i, w in enumerate(weights)}
        arrays |= {f"o{i}": o for i, o in enumerate(opt)}
        buffer = io.BytesIO()
        np.savez(buffer, meta=np.array(json.dumps(meta)), **arrays)
        data = buffer.getvalue()
        write_file(self.path, data, "supernet checkpoint", inside=self.out_dir)

    # ----------------------------------------------------------------- training
    def train(self, report: Callable[[int, float, float], None] | None = None) -> None:
        """Run the epochs left; ``report(epoch, mean loss, seconds)`` after each."""
        while self.epochs_done < self.epochs:
            start = time.perf_counter()
            loss = self.train_epoch(self.epochs_done)
            self.epochs_done += 1
            self.save()
            if report is not None:
                report(self.epochs_done, loss, time.perf_counter() - start)

    def train_epoch(self, epoch: int) -> float:
        """One epoch (seed and elastic phase from ``epoch``); its mean loss. Not saved here."""
        rng = random.Random(self.seed * 1_000_003 + epoch)
        losses = []
        data = training_data(self.dataset, self.recipe, self.seed + epoch)
        dims = elastic_dims(self.schedule, epoch, self.epochs)
        top = largest(self.spec)
        bottom = within_dims(top, smallest(self.spec), dims)
        for x, y, w in data.take(self.steps):
            nets = [top, bottom]
            drawn = [random_subnet(self.spec, rng) for _ in range(RANDOM_PER_STEP)]
            nets += [within_dims(top, net, dims) for net in drawn]
            losses.append(self._step(x, y, w, nets))
        return float(np.mean(losses)) if losses else float("nan")

    def _step(self, x: Any, y: Any, w: Any, nets: list[Subnet]) -> float:
        """One sandwich step: gradients of every subnet summed, applied once."""
        total, summed, teacher = 0.0, None, y
        for j, net in enumerate(nets):
            distill = np.float32(DISTILL if j else 0.0)
            loss, grads, probs = self._fn(net.resolution)(
                x, y, w, teacher, controls(self.spec, net), distill
            )
            if j == 0:
                teacher = probs
            summed = grads if summed is None else _add(summed, grads)
            total += float(loss)
        self._apply(summed)
        return total / len(nets)

    def _fn(self, resolution: int) -> Any:
        """The traced gradient function for one input resolution."""
        if resolution not in self._fns:
            self._fns[resolution] = _gradient_fn(self.model, resolution, self.recipe)
        return self._fns[resolution]


def elastic_dims(schedule: str, epoch: int, epochs: int) -> frozenset[str]:
    """The dimensions subnets may vary in at ``epoch`` (0-based) of ``epochs``.

    ``sandwich``: all four throughout. ``progressive``: Once-for-All's order over
    four equal phases: the full network at every resolution, then kernels, then
    depths, then expansions too (resolution is elastic throughout, as theirs).
    """
    if schedule == SUPERNET_SCHEDULES[0]:
        return frozenset(ELASTIC_ORDER)
    phase = min(len(ELASTIC_ORDER) - 1, epoch * len(ELASTIC_ORDER) // max(1, epochs))
    return frozenset(ELASTIC_ORDER[: phase + 1])


def within_dims(top: Subnet, net: Subnet, dims: frozenset[str]) -> Subnet:
    """``net`` with every dimension not in ``dims`` set to ``top``'s (the largest's)."""
    return Subnet(
        net.resolution if "resolution" in dims else top.resolution,
        net.depths if "depth" in dims else top.depths,
        net.kernels if "kernel" in dims else top.kernels,
        net.expansions if "expansion" in dims else top.expansions,
    )


def read_checkpoint(path: Path) -> tuple[dict[str, Any], list[Any], list[Any]]:
    """(meta, weights, optimizer state) of a supernet checkpoint file.

    Raises:
        UserError: the file is damaged, cut short or not a checkpoint (one line naming
            it and what to do; numpy's and zipfile's own errors do not escape).
    """
    from mcunas.inputs.formats import load_npz

    try:
        data = load_npz(path, "supernet checkpoint", kind="checkpoint")
    except UserError as exc:
        raise UserError(
            f"{path} is not a readable supernet checkpoint: {CHECKPOINT_FIX}. ({exc})"
        ) from None
    try:
        meta = json.loads(str(data["meta"]))
        weights = [data[f"w{i}"] for i in range(int(meta["weights"]))]
        opt = [data[f"o{i}"] for i in range(int(meta["optimizer"]))]
        int(meta["done"])
    except READ_ERRORS as exc:
        raise unreadable(path, "supernet checkpoint", CHECKPOINT_FIX, exc) from None
    return meta, weights, opt


def _add(a: list[Any], b: list[Any]) -> list[Any]:
    return [x + y for x, y in zip(a, b, strict=True)]


def _apply_fn(optimizer: Any, model: Supernet) -> Any:
    """The optimizer's update as one traced graph (eager Adam costs ~0.5 s a step)."""
    import tensorflow as tf

    @tf.function
    def apply(grads: Any) -> None:
        optimizer.apply(grads, model.trainable_variables)

    return apply


def _gradient_fn(model: Supernet, resolution: int, recipe: Recipe) -> Any:
    import tensorflow as tf

    smoothing = float(recipe.label_smoothing)

    @tf.function(reduce_retracing=True, jit_compile=JIT)
    def grads(x: Any, y: Any, w: Any, teacher: Any, ctrl: Any, distill: Any) -> Any:
        with tf.GradientTape() as tape:
            logits = model(x, ctrl, resolution=resolution, training=True)
            k = tf.cast(tf.shape(y)[-1], tf.float32)
            target = y * (1.0 - smoothing) + smoothing / k
            target = (1.0 - distill) * target + distill * tf.stop_gradient(teacher)
            ce = tf.nn.softmax_cross_entropy_with_logits(target, logits)
            loss = tf.reduce_sum(ce * w) / tf.reduce_sum(w)
        return loss, tape.gradient(loss, model.trainable_variables), tf.nn.softmax(logits)

    return grads

"""Keras Tuner's stock RandomSearch with the budgets applied after training (a baseline).

Shared by ``scripts/bench search`` and ``scripts/bench tasks``: every candidate is
built and trained first, then converted to INT8, evaluated with the TFLite
Micro kernels and costed by the simulator; infeasible ones are found out only
then. With ``deadline_s`` the search stops at the first trial that would start
after it (to compare at equal wall time).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def _deadline_error() -> type:
    import keras_tuner

    class Deadline(keras_tuner.errors.FatalError):
        """Raised inside a trial to end the search at its wall-time budget (fatal: it stops)."""

    return Deadline


def posthoc_random(
    space: Any,
    data: Any,
    board: Any,
    budgets: Any,
    out: Path,
    trials: int,
    epochs: int,
    seed: int,
    deadline_s: float | None = None,
    recipe: Any | None = None,
) -> dict:
    """Run the baseline; figures like ``scripts/bench search`` prints, plus the best model.

    ``recipe`` (a :class:`mcunas.search.training.recipe.Recipe`) trains each candidate as
    mcunas does; without it, a plain ``fit`` (batch 32, early stopping).
    """
    import keras
    import keras_tuner

    from mcunas.search.trial.isolate import TflmWorker

    worker = TflmWorker(board)
    deadline_error = _deadline_error()
    rows: list[dict] = []
    start = time.monotonic()

    class PostHoc(keras_tuner.RandomSearch):
        """Stock random search; costs each model only after training it."""

        def run_trial(self, trial, *fit_args, **fit_kwargs):
            if deadline_s is not None and time.monotonic() - start > deadline_s:
                raise deadline_error
            keras.utils.set_random_seed(seed + int(trial.trial_id))
            t0 = time.perf_counter()
            model = self.hypermodel.build(trial.hyperparameters)
            _fit(model, data, epochs, seed, recipe)
            row = _costed(model, data, worker, budgets, seed)
            rows.append({**row, "train_s": time.perf_counter() - t0})
            return {"val_accuracy": row.get("acc", 0.0)}

    tuner = PostHoc(
        space,
        objective="val_accuracy",
        max_trials=trials,
        seed=seed + 1,
        directory=str(out),
        project_name="baseline",
        overwrite=True,
        max_consecutive_failed_trials=10**9,
    )
    tuner.oracle.verbose = 0
    try:
        tuner.search(verbose=0)
    except deadline_error:
        pass
    summary = _summary(rows, worker, data)
    worker.close()
    return {"wall_s": time.monotonic() - start, **summary}


def _costed(model: Any, data: Any, worker: Any, budgets: Any, seed: int) -> dict:
    """A trained candidate converted, evaluated and costed: feasible or not, and why."""
    from mcunas.search.results.budgets import violations
    from mcunas.tflite.convert import convert_int8, to_inference_model

    try:
        tfl = convert_int8(to_inference_model(model), data.representative(200, seed))
        acc = worker.int8_accuracy(tfl, data.x_val, data.y_val)
        cost = worker.profile(tfl)
    except Exception as exc:  # noqa: BLE001 - a failed candidate, like ours
        return {"feasible": False, "error": str(exc)}
    ok = not violations(cost, budgets)
    point = (acc, cost.latency_ms, cost.peak_sram_bytes)
    return {"feasible": ok, "acc": acc, "point": point, "model": tfl if ok else None}


def _summary(rows: list[dict], worker: Any, data: Any) -> dict:
    """The baseline's figures, and the best feasible model's test accuracy."""
    ok = [r for r in rows if r["feasible"]]
    best = max(ok, key=lambda r: r["acc"], default=None)
    test = None
    if best is not None and getattr(data, "x_test", None) is not None:
        test = worker.int8_accuracy(best["model"], data.x_test, data.y_test)
    return {
        "train_s": sum(r["train_s"] for r in rows),
        "infeasible_train_s": sum(r["train_s"] for r in rows if not r["feasible"]),
        "feasible": len(ok),
        "trials": len(rows),
        "best": None if best is None else best["acc"],
        "test": test,
        "points": [r["point"] for r in ok],
    }


def _fit(model: Any, data: Any, epochs: int, seed: int, recipe: Any | None) -> None:
    import keras

    stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=3, restore_best_weights=True)
    if recipe is None:
        model.fit(
            data.x_train,
            data.y_train,
            validation_data=(data.x_val, data.y_val),
            epochs=epochs,
            batch_size=32,
            callbacks=[stop],
            verbose=0,
        )
        return
    from mcunas.search.training.recipe import compile_for_training, steps_per_epoch, training_data

    compile_for_training(model, recipe, steps_per_epoch(recipe, len(data.x_train)) * epochs)
    val_y = keras.utils.to_categorical(data.y_val, data.num_classes)
    model.fit(
        training_data(data, recipe, seed),
        shuffle=False,
        validation_data=(data.x_val, val_y),
        epochs=epochs,
        callbacks=[stop],
        verbose=0,
    )

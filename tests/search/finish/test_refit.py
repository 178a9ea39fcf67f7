"""The chosen design refitted on every training sample: when, what is kept, what is refused."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from types import SimpleNamespace

import pytest

from mcunas.search.finish.refit import REFIT_META, refit_chosen, refit_of, refit_wanted, same_graph
from mcunas.search.results.store import TrialStatus, TrialStore
from mcunas.search.settings.config import SearchConfig
from mcunas.search.settings.progress import Progress
from tests.repo import REPO
from tests.search.finish.test_choice import FoldRunner

MODELS = REPO / "mcunas" / "calibration" / "models"


@pytest.mark.parametrize(
    ("mode", "samples", "wanted"),
    [("auto", 200, True), ("auto", 1999, True), ("auto", 2000, False), ("on", 10**6, True)]
    + [("off", 10, False)],
)
def test_refit_is_for_small_sets_unless_asked(mode: str, samples: int, wanted: bool) -> None:
    assert refit_wanted(mode, samples) is wanted


def test_an_unknown_refit_mode_is_one_clear_error() -> None:
    from mcunas.errors import UserError

    with pytest.raises(UserError, match="Unknown --refit 'maybe'; choose auto, on, off"):
        SearchConfig(board="esp32s3", refit="maybe").validate()


def test_same_graph_accepts_the_same_model_and_names_a_different_one() -> None:
    kws = (MODELS / "kws_ref_model.tflite").read_bytes()
    assert same_graph(kws, kws) is None
    other = (MODELS / "ad01_int8.tflite").read_bytes()
    assert same_graph(kws, other) == "its graph is not the trial's (ops or tensor shapes differ)"


def _run(
    tmp_path: Path, runner: object, refit: str = "on", distill: bool = False
) -> SimpleNamespace:
    """A finished two-trial search whose chosen trial 01 has a model file."""
    from mcunas.data.datasets import load_dataset

    store = TrialStore.open(tmp_path)
    (tmp_path / "models").mkdir()
    for i in range(2):
        tid = f"0{i}"
        model = (tmp_path / "models" / f"{tid}.tflite").write_bytes(bytes([8 * (i + 1)]))
        store.start_trial(tid, {"width": 8 * (i + 1)})
        store.finish_trial(
            tid, TrialStatus.OK, score=0.9 + i / 100, int8_accuracy=0.9 + i / 100,
            latency_ms=1.0, peak_sram_bytes=1000, model_path=f"models/{tid}.tflite",
            model_sha256=hashlib.sha256(bytes([8 * (i + 1)])).hexdigest(),
        )  # fmt: skip
        assert model == 1
    dataset = load_dataset(None, seed=0)
    return SimpleNamespace(
        config=SearchConfig(board="esp32s3", finalists=0, refit=refit, epochs=3, distill=distill),
        store=store,
        out_dir=tmp_path,
        dataset=dataset,
        data_of=lambda rec: dataset,
        components=lambda families=None, measure=True: (object(), runner, lambda: None),
    )


class RefitRunner(FoldRunner):
    """FoldRunner that trains with ``early_stop`` (as KerasRunner) and names its data size."""

    def for_data(self, data, seed, recipe=None):  # noqa: ANN001, ANN201
        self.log.append(("recipe", recipe.steps_per_epoch))
        return RefitRunner(data, seed, self.log)

    def train(self, model, epochs, early_stop=True):  # noqa: ANN001, ANN201
        assert early_stop is False  # nothing is held out to stop on
        targets = getattr(self, "targets", None)
        shape = None if targets is None else targets.shape
        self.log.append((model["width"], len(self.data.y_train), self.seed, epochs, shape))
        return SimpleNamespace(steps=7 * epochs)


def test_the_chosen_trial_is_refitted_on_every_sample_once(tmp_path: Path, monkeypatch) -> None:
    import mcunas.search.finish.refit as refit_mod

    monkeypatch.setattr(refit_mod, "same_graph", lambda a, b: None)
    runner = RefitRunner()
    run = _run(tmp_path, runner)
    stream = io.StringIO()
    refit_chosen(run, Progress(1, None, stream=stream))
    pooled = len(run.dataset.y_train) + len(run.dataset.y_val)
    # trial 01, all samples, once, with the recipe planned for them (digits: 57 steps an epoch)
    assert [entry[:2] for entry in runner.log] == [("recipe", 57), (16, pooled)]
    info = run.store.get_meta(REFIT_META)
    assert info["trial_id"] == "01" and info["samples"] == pooled and info["steps"] == 21
    assert (tmp_path / info["model_path"]).read_bytes() == bytes([16])
    assert f"Refitting trial 01's design on all {pooled} training" in stream.getvalue()
    best = run.store.trials()[1]
    assert refit_of(run.store, best, tmp_path, run.config) == info
    refit_chosen(run, Progress(1, None, stream=io.StringIO()))  # a resume: kept, not redone
    assert len(runner.log) == 2
    (tmp_path / info["model_path"]).write_bytes(b"XX")  # an altered file is not used
    assert refit_of(run.store, best, tmp_path, run.config) is None
    other = SearchConfig(board="esp32s3", finalists=0, epochs=4)  # nor one of other epochs
    assert refit_of(run.store, best, tmp_path, other) is None


def test_a_search_resumed_with_refit_off_exports_the_trials_model(
    tmp_path: Path, monkeypatch
) -> None:
    import mcunas.search.finish.refit as refit_mod

    monkeypatch.setattr(refit_mod, "same_graph", lambda a, b: None)
    run = _run(tmp_path, RefitRunner())
    refit_chosen(run, Progress(1, None, stream=io.StringIO()))
    best = run.store.trials()[1]
    assert refit_of(run.store, best, tmp_path, run.config) is not None
    off = SearchConfig(board="esp32s3", finalists=0, refit="off", epochs=3)
    assert refit_of(run.store, best, tmp_path, off) is None


@pytest.mark.parametrize("refit", ["off", "auto-large"])
def test_nothing_is_trained_when_refit_does_not_apply(tmp_path: Path, refit: str) -> None:
    runner = RefitRunner()
    run = _run(tmp_path, runner, "off" if refit == "off" else "auto")
    if refit == "auto-large":
        run.dataset = SimpleNamespace(y_train=range(2000), y_val=range(500))
    refit_chosen(run, Progress(1, None, stream=io.StringIO()))
    assert runner.log == [] and run.store.get_meta(REFIT_META) is None


def test_a_refit_that_fails_or_changes_the_graph_leaves_the_trials_model(tmp_path: Path) -> None:
    class Diverges(RefitRunner):
        def for_data(self, data, seed, recipe=None):  # noqa: ANN001, ANN201
            return Diverges(data, seed, self.log)

        def train(self, model, epochs, early_stop=True):  # noqa: ANN001, ANN201
            raise ValueError("training diverged")

    run = _run(tmp_path, Diverges())
    stream = io.StringIO()
    refit_chosen(run, Progress(1, None, stream=stream))
    assert "Refit failed (ValueError: training diverged); trial 01's model is exported." in (
        stream.getvalue()
    )
    assert run.store.get_meta(REFIT_META) is None


def test_a_refit_whose_graph_differs_is_dropped(tmp_path: Path, monkeypatch) -> None:
    import mcunas.search.finish.export as export_mod

    kws = (MODELS / "kws_ref_model.tflite").read_bytes()
    monkeypatch.setattr(export_mod, "trial_model_bytes", lambda rec, out: kws)

    class OtherGraph(RefitRunner):
        def for_data(self, data, seed, recipe=None):  # noqa: ANN001, ANN201
            return OtherGraph(data, seed, self.log)

        def convert(self, model):  # noqa: ANN001, ANN201
            return (MODELS / "ad01_int8.tflite").read_bytes()

    run = _run(tmp_path, OtherGraph())
    refit_chosen(run, Progress(1, None, stream=(stream := io.StringIO())))
    assert "Refit dropped: its graph is not the trial's" in stream.getvalue()
    assert run.store.get_meta(REFIT_META) is None and not list(tmp_path.glob("models/refit_*"))


def test_no_refit_when_the_time_budget_is_spent(tmp_path: Path) -> None:
    runner = RefitRunner()
    run = _run(tmp_path, runner)
    progress = Progress(1, 0.0, stream=(stream := io.StringIO()))
    refit_chosen(run, progress)
    assert runner.log == [] and "--resume refits it" in stream.getvalue()


def test_a_teacher_lends_the_refit_its_soft_targets(tmp_path: Path, monkeypatch) -> None:
    import numpy as np

    import mcunas.search.finish.distill as distill_mod
    import mcunas.search.finish.refit as refit_mod

    monkeypatch.setattr(refit_mod, "same_graph", lambda a, b: None)
    taught = []

    def teacher(runner, data, recipe, seed, epochs):  # noqa: ANN001, ANN202
        taught.append((len(data.y_train), recipe.steps_per_epoch, epochs))
        probs = np.full((len(data.y_train), data.num_classes), 0.1)
        return distill_mod.soft_targets(probs, data.y_train), "ic-resnet8"

    monkeypatch.setattr(distill_mod, "teacher_targets", teacher)
    runner = RefitRunner()
    run = _run(tmp_path, runner, distill=True)
    refit_chosen(run, Progress(1, None, stream=(stream := io.StringIO())))
    pooled = len(run.dataset.y_train) + len(run.dataset.y_val)
    assert taught == [(pooled, 57, 3)]  # the refit's samples, recipe and epochs
    assert runner.log[-1][-1] == (pooled, 10)  # the student trained on the soft targets
    info = run.store.get_meta(REFIT_META)
    assert info["teacher"] == "ic-resnet8" and info["distill"] is True
    assert "Training the refit's teacher: ic-resnet8 at full size" in stream.getvalue()
    assert "taught by ic-resnet8" in stream.getvalue()
    no_teacher = SearchConfig(board="esp32s3", finalists=0, refit="on", epochs=3, distill=False)
    assert refit_of(run.store, run.store.trials()[1], tmp_path, no_teacher) is None


def test_a_teacher_that_fails_leaves_the_labels(tmp_path: Path, monkeypatch) -> None:
    import mcunas.search.finish.distill as distill_mod
    import mcunas.search.finish.refit as refit_mod

    monkeypatch.setattr(refit_mod, "same_graph", lambda a, b: None)

    def teacher(*args):  # noqa: ANN002, ANN202
        raise MemoryError("out of memory")

    monkeypatch.setattr(distill_mod, "teacher_targets", teacher)
    runner = RefitRunner()
    run = _run(tmp_path, runner, distill=True)
    refit_chosen(run, Progress(1, None, stream=(stream := io.StringIO())))
    assert "Teacher failed (MemoryError: out of memory); the refit learns from the labels." in (
        stream.getvalue()
    )
    assert runner.log[-1][-1] is None and run.store.get_meta(REFIT_META)["teacher"] is None


def test_soft_targets_mix_the_labels_with_the_softened_teacher() -> None:
    import numpy as np

    from mcunas.search.finish.distill import ALPHA, soft_targets, teacher_name

    probs = np.array([[0.98, 0.01, 0.01], [0.2, 0.7, 0.1]])
    targets = soft_targets(probs, np.array([0, 2]))
    assert np.allclose(targets.sum(axis=1), 1.0)
    assert targets[0, 0] > 1 - ALPHA and 0 < targets[0, 1] < ALPHA / 2  # softened, not zero
    assert targets[1, 2] > ALPHA and targets[1, 1] < ALPHA  # the label keeps its half
    assert teacher_name("series", (427, 1, 1)) == "kws-dscnn"  # not the cut-down series-s4
    assert teacher_name("image", (8, 8, 1)) == "ic-resnet8"

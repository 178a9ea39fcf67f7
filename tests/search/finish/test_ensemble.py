"""Refits of the chosen design averaged in the latency budget it leaves: how many, how built."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from mcunas.figures import Figures
from mcunas.search.finish.ensemble import average, member_seed, planned_members
from mcunas.search.finish.refit import REFIT_META, refit_chosen, refit_of
from mcunas.search.results.budgets import Budgets
from mcunas.search.settings.config import SearchConfig
from mcunas.search.settings.progress import Progress
from tests.search.finish.test_refit import RefitRunner, _run


def _trial(latency_ms: float | None, energy_uj: float | None = None) -> SimpleNamespace:
    return SimpleNamespace(latency_ms=latency_ms, energy_uj=energy_uj)


@pytest.mark.parametrize(
    ("mode", "latency", "budgets", "members"),
    [
        ("auto", 4.6, Budgets(max_latency_ms=20), 4),  # room for four
        ("auto", 5.5, Budgets(max_latency_ms=20), 3),
        ("auto", 1.2, Budgets(max_latency_ms=20), 4),  # never more than four
        ("auto", 17.7, Budgets(max_latency_ms=20), 1),  # no room for a second
        ("auto", 4.6, Budgets(), 1),  # no latency budget: nothing to spend
        ("auto", None, Budgets(max_latency_ms=20), 1),  # no latency figure
        ("auto", 4.0, Budgets(max_latency_ms=20, max_energy_uj=100), 2),  # energy: 45 uJ each
        ("off", 1.0, Budgets(max_latency_ms=20), 1),
        ("3", 17.7, Budgets(max_latency_ms=20), 3),  # asked for: the measurement decides
    ],
)
def test_members_fill_the_latency_budget_left(
    mode: str, latency: float | None, budgets: Budgets, members: int
) -> None:
    assert planned_members(mode, _trial(latency, 45.0), budgets) == members


def test_member_zero_keeps_the_refits_seed_and_the_others_differ() -> None:
    assert member_seed(1234, 0) == 1234
    assert len({member_seed(1234, k) for k in range(4)}) == 4


def test_an_unknown_ensemble_mode_is_one_clear_error() -> None:
    from mcunas.errors import UserError

    with pytest.raises(UserError, match="Unknown --ensemble '9'; choose auto, off, 2, 3, 4"):
        SearchConfig(board="esp32s3", ensemble="9").validate()


def test_the_average_is_one_int8_graph_of_the_members_added_and_scaled() -> None:
    import keras
    from keras import layers

    from mcunas.tflite.convert import convert_int8, to_inference_model
    from mcunas.tflite.reader import read_graph

    def member(seed: int) -> keras.Model:
        keras.utils.set_random_seed(seed)
        inputs = keras.Input((12, 1, 1))
        x = layers.Conv2D(4, (3, 1), activation="relu")(inputs)
        x = layers.AveragePooling2D((10, 1))(x)
        x = layers.Dense(3, activation="softmax")(x)
        return keras.Model(inputs, layers.Reshape((3,))(x), name="mcunas_stages")

    members = [member(s) for s in range(3)]
    x = np.random.default_rng(0).normal(size=(6, 12, 1, 1)).astype("float32")
    each = [m.predict(x, verbose=0) for m in members]
    model = average(members)
    np.testing.assert_allclose(model.predict(x, verbose=0), np.mean(each, axis=0), atol=1e-6)
    ops = [op.name for op in read_graph(convert_int8(to_inference_model(model), x)).ops]
    assert ops.count("CONV_2D") == 3 and ops.count("ADD") == 2 and ops.count("MUL") == 1


class MemberRunner(RefitRunner):
    """RefitRunner whose averages are measured: each member costs ``latency`` ms."""

    latency = 1.0

    def for_data(self, data, seed, recipe=None):  # noqa: ANN001, ANN201
        return MemberRunner(data, seed, self.log)

    def build(self, hp, seed):  # noqa: ANN001, ANN201
        self.log.append(("seed", seed))
        return {"width": hp.get("width"), "members": 1}

    def convert(self, model):  # noqa: ANN001, ANN201
        return bytes([model["width"], model["members"]])

    def measure(self, model_bytes, promising):  # noqa: ANN001, ANN201
        k = model_bytes[1]
        return Figures("simulator:test", True, self.latency * k, 500 * k, 900 * k, 2000 * k)


def _ensemble_run(tmp_path: Path, monkeypatch, latency_budget: float) -> SimpleNamespace:
    import mcunas.search.finish.ensemble as ensemble_mod
    import mcunas.search.finish.refit as refit_mod

    monkeypatch.setattr(refit_mod, "same_graph", lambda a, b: None)
    monkeypatch.setattr(ensemble_mod, "average", lambda ms: {**ms[0], "members": len(ms)})
    run = _run(tmp_path, MemberRunner())
    run.config = SearchConfig(
        board="esp32s3", finalists=0, refit="on", epochs=3, max_latency_ms=latency_budget
    )
    run.fronts = None
    return run


def test_members_are_trained_averaged_measured_and_kept(tmp_path: Path, monkeypatch) -> None:
    run = _ensemble_run(tmp_path, monkeypatch, 3.5)  # trial 01 takes 1 ms: three members
    refit_chosen(run, Progress(1, None, stream=(stream := io.StringIO())))
    seeds = [entry[1] for entry in run.components()[1].log if entry[0] == "seed"]
    assert len(set(seeds)) == 3
    info = run.store.get_meta(REFIT_META)
    assert info["members"] == 3 and info["members_planned"] == 3
    assert info["figures"]["latency_ms"] == 3.0 and info["figures"]["estimated"] is True
    assert (tmp_path / info["model_path"]).read_bytes() == bytes([16, 3])
    assert "3 members from 3 seeds, averaged" in stream.getvalue()
    best = run.store.trials()[1]
    assert refit_of(run.store, best, tmp_path, run.config) == info  # a resume keeps it
    off = SearchConfig(board="esp32s3", finalists=0, refit="on", epochs=3, ensemble="off")
    assert refit_of(run.store, best, tmp_path, off) is None  # the design alone is refitted


def test_an_average_that_breaks_a_budget_loses_members(tmp_path: Path, monkeypatch) -> None:
    run = _ensemble_run(tmp_path, monkeypatch, 3.5)
    MemberRunner.latency = 1.5  # measured slower than the trial's 1 ms: three do not fit
    try:
        refit_chosen(run, Progress(1, None, stream=(stream := io.StringIO())))
    finally:
        MemberRunner.latency = 1.0
    info = run.store.get_meta(REFIT_META)
    assert info["members"] == 2 and info["figures"]["latency_ms"] == 3.0
    assert "An average of 3 members does not fit (estimated latency 4.50 ms" in stream.getvalue()


def test_an_average_that_cannot_be_measured_leaves_the_refit(tmp_path: Path, monkeypatch) -> None:
    run = _ensemble_run(tmp_path, monkeypatch, 3.5)

    def unplugged(model_bytes, promising):  # noqa: ANN001, ANN202
        raise OSError("board unplugged")

    monkeypatch.setattr(MemberRunner, "measure", staticmethod(unplugged))
    refit_chosen(run, Progress(1, None, stream=(stream := io.StringIO())))
    info = run.store.get_meta(REFIT_META)
    assert info["members"] == 1 and "figures" not in info
    assert (tmp_path / info["model_path"]).read_bytes() == bytes([16, 1])  # the refit alone
    assert "An average of 3 members failed (OSError: board unplugged)." in stream.getvalue()
    assert "the refit alone is" in stream.getvalue()


def test_the_export_names_the_averages_own_figures() -> None:
    from mcunas.search.finish.export import exported_arena
    from mcunas.search.finish.refit_records import Refit
    from mcunas.search.report.result import SearchResult

    own = {"source": "simulator:lat-1", "estimated": True, "latency_ms": 18.12}
    own |= {"arena_bytes": 9000, "peak_sram_bytes": 63283, "flash_bytes": 256307}
    info = {"members": 4, "figures": own, "samples": 36, "steps": 3660, "seconds": 207.0}
    text = SearchResult.refit_text(SimpleNamespace(refit=Refit.from_dict(info)))
    assert text == (
        "an average of 4 members of the same design, refitted on all 36 training samples, "
        "3660 optimizer steps each (207 s); its own graph: latency 18.12 ms~, peak SRAM "
        "61.8 KB~, flash 250.3 KB~ (simulator estimates)"
    )
    trial = SimpleNamespace(arena_bytes=2000, source="simulator:lat-1", estimated=True)
    arena = exported_arena(trial, Refit.from_dict(info))
    assert arena.bytes == 9000 and not arena.measured  # the average's arena, not the trial's
    assert exported_arena(trial, Refit.from_dict({"samples": 36})).bytes == 2000

"""The audio front end searched with the network: its hyperparameters, its data, its cache."""

from __future__ import annotations

import json
import wave
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from mcunas.boards.catalog import load_board
from mcunas.data import clip_features as features_mod
from mcunas.data.clip_features import graph_wav_features
from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import config_of_model, frontend_model
from mcunas.search.frontends.searched import FRONTEND_HPS, FrontendSearch, duration_choices
from tests.commands.test_search_cli import run
from tests.frontend.test_frontend_features import make_tones

SHORT = {"frontend_window": "25/10", "frontend_bands": 20, "frontend_pcan": True}


def _fronts(data: Path, cache: Path, space: str = "search") -> FrontendSearch:
    cfg = SimpleNamespace(dataset=str(data), seed=0, frontend_space=space)
    return FrontendSearch(cfg, load_board("nano33ble"), cache)


@pytest.fixture(scope="module")
def tones(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tones")
    make_tones(root, per_class=5, seconds=1.0)
    return root


def test_durations_are_offered_where_the_clips_allow() -> None:
    assert duration_choices(1000) == (1000, 750, 500)
    assert duration_choices(490) == (490,)  # too short to cut


def test_two_front_ends_make_two_cache_entries_reused_on_resume(
    tmp_path: Path, tones: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    fronts = _fronts(tones, cache)
    assert fronts.durations == (990, 740, 490)  # 1 s clips hold 49 frames of 30/20 ms: 990 ms
    default = fronts.dataset_of({})
    short = fronts.select({**SHORT, "frontend_duration_ms": 990})
    assert default.input_shape == (49, 40, 1) and short.input_shape == (98, 20, 1)
    assert fronts.current is short and short.frontend.pcan and short.frontend.hop_ms == 10
    assert np.array_equal(default.y_train, short.y_train)  # same samples, other features
    assert len(list(cache.glob("frontend-features-*.npz"))) == 2
    cut = fronts.dataset_of({**SHORT, "frontend_duration_ms": 490})
    assert len(list(cache.glob("*.npz"))) == 2  # a shorter input is the same entry, cut
    assert cut.input_shape == (47, 20, 1) and np.array_equal(cut.x_train, short.x_train[:, :47])

    def no_graph(*args, **kwargs):
        raise AssertionError("the graph ran again: the cache was not used")

    monkeypatch.setattr(features_mod, "clip_features", no_graph)
    again = _fronts(tones, cache)  # a resumed search: a new run over the same folder
    assert np.array_equal(again.dataset_of(SHORT).x_train, short.x_train)
    assert np.array_equal(again.dataset_of({}).x_val, default.x_val)


def test_a_shorter_input_is_the_graph_run_on_the_shorter_clip(tmp_path: Path, tones: Path) -> None:
    """The graph is causal (PCAN's noise estimate included): the first frames need no more."""
    fronts = _fronts(tones, tmp_path / "cache")
    cfg = fronts.config_of(SHORT)[0]
    paths = sorted(tones.glob("*/*.wav"))
    full, _, _ = graph_wav_features(paths, cfg)
    need = cfg.frame_samples + 46 * cfg.hop_samples  # 47 frames: 490 ms holds no 48th
    short_dir = tmp_path / "short"
    for p in paths:  # the first samples, byte for byte
        (short_dir / p.parent.name).mkdir(parents=True, exist_ok=True)
        with (
            wave.open(str(p), "rb") as src,
            wave.open(str(short_dir / p.parent.name / p.name), "wb") as dst,
        ):
            dst.setparams(src.getparams())
            dst.writeframes(src.readframes(need))
    short, _, _ = graph_wav_features(sorted(short_dir.glob("*/*.wav")), cfg)
    assert short.shape[1] == 47 and np.array_equal(short, full[:, :47])


def test_the_space_names_the_front_end_and_builds_for_its_input(tmp_path: Path, tones) -> None:
    from mcunas.search.frontends.space import FrontendSpace

    fronts = _fronts(tones, tmp_path / "cache")
    space = FrontendSpace(fronts, 2, ("dsconv",))
    hp = space.hyperparameters(**SHORT, frontend_duration_ms=490)
    assert set(FRONTEND_HPS) <= set(hp.values)
    assert space.hyperparameters().values["frontend_window"] == "30/20"  # the fixed one first
    data = space.dataset_for(hp)
    model = space.build(hp)
    assert tuple(model.input_shape[1:]) == data.input_shape == (47, 20, 1)
    assert space.input_shape == (49, 40, 1)  # the space itself keeps the default input
    assert "fe 25/10 ms, 20 mel, PCAN, 490 ms" in space.describe(hp)
    assert space.trial_dataset(hp.values).input_shape == (47, 20, 1)


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (("--frontend-space", "search"), "needs --frontend tflm"),
        (
            ("--frontend", "tflm", "--frontend-space", "search", "--strategy", "supernet"),
            "fixed front end only",
        ),  # fmt: skip
    ],
)
def test_a_searched_front_end_is_refused_where_it_cannot_work(
    capsys, tmp_path: Path, tones: Path, extra, words
) -> None:
    args = ["--board", "nano33ble", "--out", str(tmp_path / "o"), "--dataset", str(tones)]
    code, _, err = run(capsys, *args, *extra)
    assert code == 2 and words in err and "Traceback" not in err


def test_a_searched_front_end_needs_wav_clips(capsys, tmp_path: Path) -> None:
    data = tmp_path / "s.npz"
    x = np.random.default_rng(0).random((40, 16, 1, 2), dtype=np.float32)
    np.savez(data, x_train=x, y_train=np.arange(40) % 2)
    args = ["--board", "nano33ble", "--out", str(tmp_path / "o"), "--dataset", str(data)]
    code, _, err = run(capsys, *args, "--frontend", "tflm", "--frontend-space", "search")
    assert code == 2 and "needs a WAV dataset" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_search_with_a_searched_front_end_exports_the_chosen_one(capsys, tmp_path: Path) -> None:
    data = tmp_path / "tones"
    make_tones(data, per_class=8)
    out = tmp_path / "run"
    args = ["--board", "nano33ble", "--out", str(out), "--dataset", str(data), "--json"]
    more = ["--frontend", "tflm", "--frontend-space", "search", "--families", "dsconv"]
    more += ["--strategy", "random", "--max-trials", "1", "--epochs", "1", "--finalists", "0"]
    code, stdout, err = run(capsys, *args, *more)
    assert code == 0, err
    result = json.loads(stdout)
    assert result["config"]["frontend_space"] == "search"
    best = result["best"]
    assert set(FRONTEND_HPS) <= set(best["hyperparameters"]) and "| fe " in best["description"]
    front = (out / "best" / "frontend.tflite").read_bytes()
    fronts = _fronts(data, out / "cache")
    chosen, _ = fronts.config_of(best["hyperparameters"])
    assert config_of_model(front) == chosen and front == frontend_model(chosen)
    assert json.loads((out / "best" / "best.json").read_text())["frontend"] == chosen.to_dict()
    assert best["frontend_latency_ms"] == pytest.approx(
        fronts.cost_of(fronts.dataset_of(best["hyperparameters"])).latency_ms
    )
    from mcunas.search.results.store import TrialStore

    trials = TrialStore.open(out).trials()
    configs = {fronts.config_of(t.hyperparameters)[0] for t in trials}
    entries = list((out / "cache").glob("frontend-features-*.npz"))
    assert len(entries) == len(configs | {FrontendConfig()})
    from mcunas.commands.cli import main

    with pytest.raises(SystemExit) as info:  # raw clips through the exported pair, as a board
        main(["predict", str(out / "best"), str(data)])
    assert info.value.code == 0 and "accuracy" in capsys.readouterr().out
    code, _, err = run(capsys, "--out", str(out), "--resume", "--frontend-space", "fixed")
    assert code == 2 and "frontend_space" in err  # part of the search's identity


def test_each_finalist_is_re_scored_on_its_own_front_ends_folds(tmp_path: Path, tones) -> None:
    from mcunas.search.finish.finalists import Plan
    from mcunas.search.finish.rescore import splits_by_trial
    from mcunas.search.frontends.space import FrontendSpace
    from mcunas.search.results.store import TrialRecord

    fronts = _fronts(tones, tmp_path / "cache")
    space = FrontendSpace(fronts, 2, ("dsconv",))
    splits = splits_by_trial(space, fronts.default, Plan("kfold", 5), seed=0)
    fixed = splits(TrialRecord("1", hyperparameters={}))
    short = splits(TrialRecord("2", hyperparameters={**SHORT, "frontend_duration_ms": 490}))
    assert fixed[0].input_shape == (49, 40, 1) and short[0].input_shape == (47, 20, 1)
    assert all(np.array_equal(a.y_val, b.y_val) for a, b in zip(fixed, short, strict=True))
    assert splits(TrialRecord("3", hyperparameters={**SHORT, "frontend_duration_ms": 490})) is short

"""The MLPerf Tiny reference models are points of the stage space, op for op and MAC for MAC."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import mcunas
from mcunas.space.reference import LADDER, REFERENCES, reference_hyperparameters
from mcunas.tflite.reader import read_graph

MODELS = Path(mcunas.__file__).parent / "calibration" / "models"


def _int8(shape: tuple[int, ...], classes: int, values: dict) -> bytes:
    from mcunas.space import McuSearchSpace
    from mcunas.tflite.convert import convert_int8, to_inference_model

    space = McuSearchSpace(shape, classes, families=("stages",))
    model = space.build(space.hyperparameters(**values))
    samples = np.random.default_rng(0).random((4, *shape), dtype=np.float32)
    return convert_int8(to_inference_model(model), samples)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(n for n, r in REFERENCES.items() if r.model_file))
def test_reference_matches_the_mlperf_model(name: str) -> None:
    ref = REFERENCES[name]
    built = read_graph(_int8(ref.input_shape, ref.num_classes, ref.values))
    real = read_graph((MODELS / ref.model_file).read_bytes())
    assert Counter(o.name for o in built.ops) == Counter(o.name for o in real.ops)
    assert abs(built.total_macs - real.total_macs) <= 0.02 * real.total_macs
    assert built.ops[-1].output_shape == real.ops[-1].output_shape


@pytest.mark.slow
def test_a_reference_scales_to_a_series_and_trains() -> None:
    shape = (128, 1, 3)  # an accelerometer window: 128 steps, 3 axes
    values = reference_hyperparameters("kws-dscnn", shape)
    assert values["st_stem_kw"] == 1
    from mcunas.space import McuSearchSpace

    space = McuSearchSpace(shape, 4, families=("stages",))
    model = space.build(space.hyperparameters(**values))
    x = np.random.default_rng(0).random((8, *shape), dtype=np.float32)
    history = model.fit(x, np.arange(8) % 4, epochs=1, verbose=0)  # TensorFlow can train it
    assert np.isfinite(history.history["loss"][0])
    graph = read_graph(_int8(shape, 4, values))
    assert graph.ops[-1].output_shape == (1, 4)


@pytest.mark.slow
def test_the_series_design_fits_the_nano33ble_budget_on_osuleaf() -> None:
    from mcunas.boards.catalog import load_board
    from mcunas.cost.profile import profile_model

    ref = REFERENCES["series-s4"]
    values = reference_hyperparameters("series-s4", ref.input_shape)
    profile = profile_model(
        _int8(ref.input_shape, ref.num_classes, values), load_board("nano33ble")
    )
    kinds = Counter(o.name for o in profile.graph.ops)
    assert kinds["CONV_2D"] == 4 and kinds["DEPTHWISE_CONV_2D"] == 3
    assert profile.latency.ms < 20 and profile.memory.peak_sram_bytes < 96 * 1024


def test_unknown_reference_is_one_line(capsys) -> None:
    from mcunas.commands.cli import main

    with pytest.raises(SystemExit) as info:
        main(["space", "reference", "resnet50", "--out", "x.tflite"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "known: kws-dscnn, vww-mobilenet, ic-resnet8" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seed-arch", "nope"], "Unknown reference architecture 'nope'"),
        (["--seed-arch", "kws-dscnn", "--strategy", "hyperband"], "not hyperband"),
        (["--seed-arch", "kws-dscnn", "--families", "dsconv"], "add it to --families"),
    ],
)
def test_seed_arch_is_checked_before_anything_runs(capsys, tmp_path, args, message) -> None:
    from mcunas.commands.cli import main

    out = tmp_path / "o"
    with pytest.raises(SystemExit) as info:
        main(["search", "--board", "esp32s3", "--out", str(out), *args])
    err = capsys.readouterr().err
    assert info.value.code == 2 and message in err and not out.exists()


def _seeded_oracle(tmp_path, ladder_of: str = "kws-dscnn"):
    import keras_tuner

    from mcunas.search.tuner.oracles import make_oracle, start_with_reference
    from mcunas.space import McuSearchSpace
    from mcunas.space.rungs import reference_rungs

    space = McuSearchSpace((128, 1, 3), 4)
    oracle = make_oracle("evolution", 8, seed=0, epochs=1)
    oracle._set_project_dir(str(tmp_path), "seed")
    hp = keras_tuner.HyperParameters()
    space.declare_hyperparameters(hp)
    oracle.hyperparameters = hp
    ladder = [space.hyperparameters(**v).values for v in reference_rungs(ladder_of, (128, 1, 3))]
    start_with_reference(oracle, ladder)
    return oracle, ladder


def _end(oracle, trial, feasible: float) -> None:
    oracle.update_trial(trial.trial_id, {"score": feasible * 0.9, "feasible": feasible})
    trial.status = "COMPLETED"
    oracle.end_trial(trial)


def _corner(values: dict) -> tuple[int, float]:
    return values["st_resolution"], values["st_width_mult"]


def test_the_seed_first_then_the_widest_per_resolution_then_the_cheap_end(tmp_path) -> None:
    oracle, ladder = _seeded_oracle(tmp_path)
    trial = oracle.create_trial("t")
    first = trial.hyperparameters.values  # the active values only
    stage_values = {k: v for k, v in ladder[0].items() if k.startswith("st_")}
    assert first["family"] == "stages" and stage_values.items() <= first.items()
    assert first.items() <= ladder[0].items()
    _end(oracle, trial, feasible=1.0)
    seen = []
    for i in range(5):
        trial = oracle.create_trial(f"w{i}")
        seen.append(_corner(trial.hyperparameters.values))
        _end(oracle, trial, feasible=1.0)
    assert seen[:2] == [(2, 1.0), (4, 1.0)]  # full width at a half and a quarter of the input
    assert seen[2:] == [(4, 0.75), (4, 0.5), (4, 0.25)]  # then the cheap end
    after = oracle.create_trial("other-worker").hyperparameters.values
    assert not any(after.items() <= rung.items() for rung in ladder)


def test_a_seed_that_misses_the_budgets_steps_down_until_one_fits(tmp_path) -> None:
    oracle, ladder = _seeded_oracle(tmp_path)
    assert [_corner(v) for v in ladder][: len(LADDER)] == list(LADDER)
    seen = []
    for i in range(3):
        trial = oracle.create_trial(f"w{i}")
        seen.append(trial.hyperparameters.values)
        _end(oracle, trial, feasible=0.0 if i < 2 else 1.0)
    assert [v["st_width_mult"] for v in seen] == [1.0, 0.75, 0.5]
    after = oracle.create_trial("w3").hyperparameters.values
    assert _corner(after) == (2, 1.0)  # then the other resolutions, widest first


def test_the_ladder_follows_trial_numbers_not_their_text(tmp_path) -> None:
    """keras-tuner pads ids to max_trials' width, which grows as draws are refused."""
    oracle, ladder = _seeded_oracle(tmp_path)
    seen = {}
    for i in range(4):
        oracle.max_trials = 5 if i < 2 else 20  # ids "0", "1", then "02", "03"
        trial = oracle.create_trial(f"w{i}")
        seen[trial.trial_id] = trial.hyperparameters.values
        _end(oracle, trial, feasible=0.0)
    assert list(seen) == ["0", "1", "02", "03"]
    rungs = [(v["st_resolution"], v["st_width_mult"]) for v in seen.values()]
    assert rungs == [(1, 1.0), (1, 0.75), (1, 0.5), (2, 0.5)]


def test_the_ladder_skips_resolutions_a_short_input_cannot_take() -> None:
    from mcunas.space.reference import reference_ladder

    rungs = reference_ladder("ic-resnet8", (8, 8, 1))
    assert {v["st_resolution"] for v in rungs} == {1}
    assert [v["st_width_mult"] for v in rungs] == [1.0, 0.75, 0.5, 0.25]


@pytest.mark.slow
def test_a_reference_that_does_not_fit_the_board_is_refused(capsys, tmp_path) -> None:
    from mcunas.commands.cli import main

    out = tmp_path / "vww.tflite"
    args = ["space", "reference", "vww-mobilenet", "--board", "nano33ble", "--out", str(out)]
    with pytest.raises(SystemExit) as info:
        main([*args, "--input-shape", "192,192,3"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "vww-mobilenet does not fit nano33ble" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 0 and out.exists()
    assert "fits nano33ble: latency ~" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("kind", "shape", "name"),
    [
        ("series", (128, 1, 3), "kws-dscnn"),
        ("series", (1460, 1, 3), "kws-dscnn"),  # long, but three channels
        ("series", (251, 1, 1), "kws-dscnn"),  # ArrowHead: series-s4 was level there
        ("series", (256, 1, 1), "series-s4"),
        ("series", (427, 1, 1), "series-s4"),  # OSULeaf: series-s4 won by 4 points
        ("audio", (1460, 1, 1), "kws-dscnn"),
        ("audio", (49, 40, 1), "kws-dscnn"),
        ("image", (8, 8, 1), "ic-resnet8"),
        ("image", (96, 96, 3), "vww-mobilenet"),
    ],
)
def test_auto_seed_follows_the_input_kind(kind, shape, name) -> None:
    from mcunas.space.reference import auto_reference

    assert auto_reference(kind, shape) == name


@pytest.mark.parametrize(
    ("seed_arch", "strategy", "families", "expected"),
    [
        ("auto", "evolution", ("dsconv", "stages"), "ic-resnet8"),
        ("auto", "hyperband", ("stages",), None),
        ("auto", "evolution", ("dsconv",), None),
        ("none", "evolution", ("stages",), None),
        ("kws-dscnn", "random", ("stages",), "kws-dscnn"),
    ],
)
def test_which_reference_a_search_starts_from(seed_arch, strategy, families, expected) -> None:
    from types import SimpleNamespace

    from mcunas.search.run import SearchRun
    from mcunas.search.settings.config import SearchConfig

    cfg = SearchConfig(board="esp32s3", seed_arch=seed_arch, strategy=strategy)
    cfg.validate()
    run = SearchRun(cfg, None, Path("."), None, None, None)
    run.dataset = SimpleNamespace(kind="image", input_shape=(8, 8, 1))
    assert run.reference_name(SimpleNamespace(families=families)) == expected


@pytest.mark.parametrize(
    ("seed_arch", "shape", "line"),
    [
        (
            "auto",
            (1460, 1, 1),
            "Seed: series-s4 (--seed-arch auto: a one-channel series of 1460 steps "
            "(256 or more)), its largest variant that fits first.",
        ),
        ("auto", (100, 1, 1), "Seed: kws-dscnn (--seed-arch auto: a series of 100 steps (under"),
        ("auto", (300, 1, 2), "Seed: kws-dscnn (--seed-arch auto: a series of 2 channels)"),
        ("kws-dscnn", (1460, 1, 1), "Seed: kws-dscnn (--seed-arch kws-dscnn), its"),
        ("none", (1460, 1, 1), "Seed: none (--seed-arch none)."),
    ],
)
def test_the_start_up_line_says_which_design_seeded_and_why(seed_arch, shape, line) -> None:
    from types import SimpleNamespace

    from mcunas.search.run import SearchRun
    from mcunas.search.settings.config import SearchConfig

    cfg = SearchConfig(board="nano33ble", seed_arch=seed_arch)
    cfg.validate()
    run = SearchRun(cfg, None, Path("."), None, None, None)
    run.dataset = SimpleNamespace(kind="series", input_shape=shape)
    assert run.reference_line(SimpleNamespace(families=("stages",))).startswith(line)

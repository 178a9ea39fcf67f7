"""The frontier bench's pure arithmetic, on made-up numbers (no training)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.script_helpers import loaded_script


@pytest.fixture(scope="module")
def ff():
    yield from loaded_script("frontier_figures")


@pytest.fixture(scope="module")
def ds():
    yield from loaded_script("bench_datasets")


def test_front_keeps_non_dominated_fastest_first(ff):
    M = ff.Model
    models = [M("a", 0.9, 10), M("b", 0.8, 5), M("c", 0.85, 12), M("d", 0.9, 10), M("e", 0.95, 20)]
    assert [m.name for m in ff.front(models)] == ["b", "a", "e"]  # c beaten by a; d ties a
    assert ff.front([]) == []


def test_pair_gain_and_speedup(ff):
    M = ff.Model
    reference = [M("r1", 0.80, 4.0), M("r2", 0.90, 8.0), M("r3", 0.70, 1.0)]
    searched = [M("s1", 0.85, 3.0), M("s2", 0.92, 6.0)]
    pairs = {p.reference.name: p for p in ff.pair(reference, searched)}
    assert pairs["r1"].at_latency.name == "s1"
    assert pairs["r1"].accuracy_gain == pytest.approx(0.05)
    assert pairs["r1"].speedup == pytest.approx(4.0 / 3.0)  # s1 is as accurate, faster
    assert pairs["r2"].at_latency.name == "s2" and pairs["r2"].accuracy_gain == pytest.approx(0.02)
    assert pairs["r2"].speedup == pytest.approx(8.0 / 6.0)
    r3 = pairs["r3"]  # nothing searched is this fast
    assert r3.at_latency is None and r3.accuracy_gain is None and not r3.dominated
    assert r3.at_accuracy.name == "s1" and r3.speedup == pytest.approx(1.0 / 3.0)
    assert [p.reference.name for p in ff.pair(reference, searched)] == ["r3", "r1", "r2"]


def test_pair_marks_lower_accuracy_not_dominated(ff):
    M = ff.Model
    (p,) = ff.pair([M("r", 0.9, 5.0)], [M("s", 0.88, 2.0)])
    assert p.accuracy_gain == pytest.approx(-0.02) and not p.dominated
    assert p.at_accuracy is None and p.speedup is None


def test_summary_means(ff):
    M = ff.Model
    pairs = ff.pair([M("r1", 0.8, 4.0), M("r2", 0.9, 8.0)], [M("s", 0.9, 2.0)])
    s = ff.summary(pairs)
    assert s["dominated"] == 2 and s["mean_gain"] == pytest.approx(0.05)
    assert s["geomean_speedup"] == pytest.approx((2.0 * 4.0) ** 0.5)
    assert ff.summary([])["mean_gain"] is None


def test_hypervolume_staircase(ff):
    M = ff.Model
    # fronts: (2 ms, 0.5), (6 ms, 0.9) in a 10 ms box: 0.5*4 + 0.9*4 = 5.6 of 10
    assert ff.hypervolume([M("a", 0.5, 2), M("b", 0.9, 6)], 10.0) == pytest.approx(0.56)
    assert ff.hypervolume([M("a", 0.5, 2), M("c", 0.4, 3)], 10.0) == pytest.approx(0.4)
    assert ff.hypervolume([M("slow", 1.0, 12)], 10.0) == 0.0
    with pytest.raises(ValueError):
        ff.hypervolume([], 0.0)
    # a dominating set never has less
    ref = [M("r", 0.8, 5)]
    assert ff.hypervolume([*ref, M("s", 0.85, 4)], 10.0) > ff.hypervolume(ref, 10.0)


def test_fixed_length_crops_middle_and_pads_with_last_frame(ds):
    long = np.arange(10, dtype=np.float32).reshape(5, 2)  # 5 frames of 2 coefficients
    short = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    out = ds.fixed_length([long, short], 3)
    assert out.shape == (2, 3, 2)
    np.testing.assert_array_equal(out[0], long[1:4])
    np.testing.assert_array_equal(out[1], [[1, 2], [3, 4], [3, 4]])


def test_held_out_split_is_fixed_and_stratified(ds):
    x = np.arange(200, dtype=np.float32)[:, None]
    y = np.repeat(np.arange(4), 50)
    a, b = ds.held_out_split(x, y), ds.held_out_split(x, y)
    np.testing.assert_array_equal(a[2], b[2])
    assert np.bincount(a[3]).tolist() == [10, 10, 10, 10]
    train = np.array([[[0.0, 10.0]], [[2.0, 30.0]]])
    (tr, te), mean, std = ds.standardised(train, np.zeros((1, 1, 2)))
    np.testing.assert_allclose(tr.reshape(-1, 2).mean(0), 0, atol=1e-6)
    np.testing.assert_allclose(te[0, 0], -mean / std, rtol=1e-5)


def test_compare_pairs_only_grid_points_inside_the_budget(ff):
    gen = loaded_script("bench_frontier")
    bf = next(gen)
    try:
        grid = [
            {"name": "ref a", "test": 0.80, "latency_ms": 4.0, "fits": True},
            {"name": "ref b", "test": 0.95, "latency_ms": 30.0, "fits": False},  # over 20 ms
        ]
        found = {"evolution": {"wall_s": 10.0, "models": [{"name": "s", "test": 0.85,
                                                           "latency_ms": 2.0}]}}  # fmt: skip
        out = bf.compare(grid, found, ("nano33ble", 20.0, 96.0))
        assert out["reference"]["points"] == 1
        evo = out["evolution"]
        assert evo["points"] == 1 and evo["dominated"] == 1
        assert evo["mean_gain"] == pytest.approx(0.05) and evo["geomean_speedup"] == pytest.approx(
            2
        )
        assert evo["hypervolume"] > out["reference"]["hypervolume"]
        # a searched model of a grid design (a seed rung) is the grid's: not beyond it
        found["evolution"]["models"].append(
            {"name": "seed", "test": 0.99, "latency_ms": 3.0, "design": "x1 /1"}
        )
        out = bf.compare(grid, found, ("nano33ble", 20.0, 96.0))
        beyond = out["evolution"]["beyond"]
        assert (beyond["models"], beyond["dominated"]) == (1, 1)
        assert beyond["mean_gain"] == pytest.approx(0.05)  # the seed's +19 points not counted
        assert out["evolution"]["mean_gain"] == pytest.approx(0.19)
        line = bf.headline("jv", "nano33ble", "evolution", out["evolution"])
        assert "beyond the grid's designs (1 models): 1 of 1 grid points dominated" in line
        assert line.endswith("mean diff. +5.0 pt")
    finally:
        gen.close()


def test_a_searched_model_of_the_reference_design_is_not_worse(ff):
    M = ff.Model
    reference = [M("r1", 0.90, 5.0, "x1 /2"), M("r2", 0.95, 9.0, "x0.75 /1")]
    searched = [M("seed", 0.89, 5.0, "x1 /2"), M("new", 0.96, 8.0)]
    pairs = {p.reference.name: p for p in ff.pair(reference, searched)}
    r1 = pairs["r1"]  # retrained 1 point lower: not dominated as measured, still not worse
    assert r1.same_design.name == "seed" and not r1.dominated and r1.not_worse
    assert pairs["r2"].same_design is None and pairs["r2"].dominated
    s = ff.summary(list(pairs.values()))
    assert (s["dominated"], s["same_design"], s["not_worse"]) == (1, 1, 2)
    (p,) = ff.pair([M("r", 0.9, 5.0)], [M("s", 0.8, 5.0, "x1 /1")])  # no design: never same
    assert p.same_design is None and not p.not_worse


def test_markdown_tables_name_every_reference_point(ff):
    M = ff.Model
    ref = [M("ref x1 /2", 0.90, 5.0, "x1 /2"), M("ref x0.5 /1", 0.85, 3.0, "x0.5 /1")]
    mine = [M("seed", 0.89, 5.0, "x1 /2"), M("evolution 07", 0.91, 6.0)]
    pairs = ff.pair(ref, mine)
    s = ff.summary(pairs) | {
        "hypervolume": ff.hypervolume(mine, 10.0), "models": 2, "wall_s": 100.0,
        "beyond": ff.summary(ff.pair(ref, mine[1:])) | {"models": 1},
        "pairs": [[p.reference.name, p.reference.accuracy, p.reference.latency_ms,
                   p.accuracy_gain, p.speedup, None, None,
                   p.same_design and p.same_design.name] for p in pairs],
    }  # fmt: skip
    result = {"reference": {"points": 2, "hypervolume": ff.hypervolume(ref, 10.0)}, "evolution": s}
    text = ff.markdown("jv", "nano33ble", result, 90.0)
    # x1 /2 retrained 1 point lower: not dominated as measured, not worse as the same design
    # first what the search found past the grid's designs: the new model is slower than both
    assert "| evolution | 2 | 0 of 2 (1 models), - pt | 0 of 2 | 1 of 2 | -1.0 pt | 0.71 |" in text
    assert "| ref x1 /2 | 90.0 | 5.00 |" in text and text.endswith("| 0.83 | seed |")


def test_accuracies_equal_but_for_float_rounding_count_as_equal(ff):
    M = ff.Model
    (p,) = ff.pair([M("r", 364 / 370, 2.0)], [M("s", float(np.float32(364 / 370)) - 1e-8, 1.0)])
    assert p.dominated and p.speedup == pytest.approx(2.0)
    assert ff.pct(-1e-9, "+") == "+0.0"


@pytest.fixture(scope="module")
def bf():
    yield from loaded_script("bench_frontier")


def _search_dir(tmp_path, chosen: str, trials: dict):  # noqa: ANN001, ANN202
    """A search directory: its store with ``trials`` (id: accuracy, ms, SRAM) and best.json."""
    import json

    from mcunas.search.results.store import TrialStatus, TrialStore

    store = TrialStore.open(tmp_path)
    for tid, (acc, ms, sram) in trials.items():
        store.start_trial(tid, {"family": "stages"})
        store.update(
            tid, status=TrialStatus.OK, int8_accuracy=acc, latency_ms=ms, peak_sram_bytes=sram
        )
    store.close()
    (tmp_path / "best").mkdir()
    (tmp_path / "best" / "best.json").write_text(json.dumps({"trial": {"trial_id": chosen}}))
    return tmp_path


def test_exported_on_front_is_false_when_another_trial_dominates_it(bf, tmp_path) -> None:
    trials = {"0000": (0.99, 3.45, 102_100), "0001": (0.99, 2.61, 101_400), "0002": (1.0, 9, 9e5)}
    assert bf.exported_on_front(_search_dir(tmp_path / "a", "0000", trials)) is False
    assert bf.exported_on_front(_search_dir(tmp_path / "b", "0001", trials)) is True
    assert bf.exported_on_front(tmp_path / "none") is None


def test_exported_on_front_judges_rescored_finalists_at_their_means(bf, tmp_path) -> None:
    from mcunas.search.results.store import TrialStore

    # 0001 dominates 0000 on the split, but re-scoring measured it lower: 0000 stands
    trials = {"0000": (0.90, 17.0, 55_000), "0001": (0.93, 3.5, 53_000), "0002": (0.5, 1, 50_000)}
    where = _search_dir(tmp_path, "0000", trials)
    store = TrialStore.open(where)
    runs = {"0000": [0.95, 0.97], "0001": [0.69, 0.87]}
    store.set_meta(
        "rescore",
        {
            "finalists": ["0001", "0000"],
            "runs": {
                t: {str(i): {"accuracy": a} for i, a in enumerate(r)} for t, r in runs.items()
            },
        },
    )
    store.close()
    assert bf.exported_on_front(where) is True
    store = TrialStore.open(where)
    store.set_meta("rescore", {})
    store.close()
    assert bf.exported_on_front(where) is False  # without re-scoring, 0001 dominates it

"""The reference kernels' scale and band per core family, sized from that family's held-out rows."""

from __future__ import annotations

import dataclasses
import math
import statistics

import pytest

from mcunas.boards.catalog import BoardProfile
from mcunas.cost.coefficients import DEFAULT_ERRORS, DEFAULT_SCALES
from mcunas.cost.fit.scale import (
    PRIOR_BOARDS,
    LooResult,
    fit_scales,
    load_calibration,
    path_band,
)
from mcunas.cost.latency import predict_latency
from mcunas.tflite.reader import read_graph


def _result(board: str, core: str, ratio: float, fixed_share: float = 0.0) -> LooResult:
    row = next(r for r in load_calibration() if r.id == "esp32-person-ref")
    fake = dataclasses.replace(row, board=board, core=core, id=board)
    predicted = fake.latency_ms * ratio
    return LooResult(fake, predicted, 1.0, 1, predicted * fixed_share)


def test_a_familys_band_is_sized_from_its_own_held_out_errors():
    xtensa = [_result(f"x{i}", "xtensa-lx6", r) for i, r in enumerate((1.1, 0.9, 1.05))]
    cortex = [_result("m4", "cortex-m4f", 0.35)]  # 65% under, as a first Cortex-M board
    results = xtensa + cortex
    wide, narrow = (
        path_band("tflm-ref", results, "cortex"),
        path_band("tflm-ref", results, "xtensa"),
    )
    assert wide > 100 > narrow
    # the family's own error weighs in: a second, closer Cortex-M board narrows it
    closer = results + [_result("m7", "cortex-m7", 0.9)]
    assert path_band("tflm-ref", closer, "cortex") < wide
    # a family without rows of its own states what the kinds seen on one board met on
    # it: here the one Cortex-M board, 65% under
    first = (math.exp(1.645 * abs(math.log(0.35))) - 1) * 100
    assert path_band("tflm-ref", results, "riscv32") == pytest.approx(first, rel=1e-6)


def test_rows_of_the_interpreters_fixed_costs_do_not_size_a_kernel_band():
    kernel = [_result("m4", "cortex-m4f", 0.35)]
    hello = [_result(f"h{i}", "cortex-m7", 1.1, fixed_share=0.9) for i in range(6)]
    assert path_band("tflm-ref", kernel + hello, "cortex") == pytest.approx(
        path_band("tflm-ref", kernel, "cortex")
    )


def test_a_family_on_one_board_moves_the_scale_half_way_in_log():
    rows = load_calibration()
    scales = fit_scales(rows)
    assert scales["tflm-ref/cortex"] == pytest.approx(DEFAULT_SCALES["tflm-ref/cortex"], rel=1e-3)
    own = fit_scales([r for r in rows if r.id == "f413-person-ref"])["tflm-ref"]
    others = {
        r.board: fit_scales([r])["tflm-ref"]
        for r in rows
        if r.path == "tflm-ref" and r.id.endswith("person-ref")
    }
    centre = statistics.median(math.log(v) for v in others.values())
    expected = math.exp((math.log(own) + PRIOR_BOARDS * centre) / (1 + PRIOR_BOARDS))
    assert scales["tflm-ref/cortex"] == pytest.approx(expected, rel=0.02)
    assert own > scales["tflm-ref/cortex"] > scales["tflm-ref/xtensa"]


def test_one_family_far_off_does_not_move_the_others():
    rows = load_calibration()
    slower = [
        dataclasses.replace(r, latency_ms=r.latency_ms * 10) if r.id == "f413-person-ref" else r
        for r in rows
    ]
    a, b = fit_scales(rows), fit_scales(slower)
    assert b["tflm-ref/cortex"] > 2 * a["tflm-ref/cortex"]
    for family in ("xtensa", "riscv32"):
        assert b[f"tflm-ref/{family}"] == pytest.approx(a[f"tflm-ref/{family}"])


def test_a_bare_profile_states_its_familys_band_for_reference_kernels():
    graph = read_graph(next(r.model for r in load_calibration() if r.id == "esp32-person-ref"))

    def bare(core: str) -> BoardProfile:
        return BoardProfile(
            name="bare", core=core, clock_hz=100_000_000, sram_bytes=1 << 20,
            flash_bytes=1 << 22, kernels="reference",
        )  # fmt: skip

    m4, lx6 = predict_latency(graph, bare("cortex-m4f")), predict_latency(graph, bare("xtensa-lx6"))
    assert m4.error_pct == pytest.approx(DEFAULT_ERRORS["tflm-ref/cortex"], rel=0.05)
    assert lx6.error_pct == pytest.approx(DEFAULT_ERRORS["tflm-ref/xtensa"], rel=0.05)
    assert m4.error_pct > lx6.error_pct

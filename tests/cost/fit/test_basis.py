"""Which parts of a latency estimate are fitted and which are priors, as boards show prints them."""

from __future__ import annotations

import dataclasses

from click.testing import CliRunner

from mcunas.boards.catalog import load_board
from mcunas.commands.cli import cli
from mcunas.cost.fit.basis import basis_summary, latency_basis

PRIORS = """
name = "oldref"
core = "cortex-m4f"
clock_hz = 64_000_000
sram_bytes = 262144
flash_bytes = 1048576
kernels = "reference"
runtime = "2.3.1"
arena = "sdram"
opt = "Os"
"""


def test_a_dsp_core_measured_beside_the_m4f_is_fitted_a_coremark_transfer_is_a_prior():
    m7 = {p.part: p for p in latency_basis(load_board("nucleo_f746zg"))}
    assert m7["kernel scale"].kind == "fitted" and m7["core speed"].kind == "fitted"
    assert m7["band"].kind == "fitted" and "leave-one-board-out" in m7["band"].source
    ref = dataclasses.replace(load_board("nucleo_f746zg"), kernels="reference", setup={})
    parts = {p.part: p for p in latency_basis(ref)}
    assert parts["core speed"].kind == "prior" and "CoreMark" in parts["core speed"].source
    # the reference kernels' scale on Cortex-M cores is their own family's
    assert "on cortex cores" in parts["kernel scale"].source


def test_setup_priors_are_named_with_the_guess_they_do_not_apply(tmp_path):
    path = tmp_path / "oldref.toml"
    path.write_text(PRIORS)
    parts = {p.part: p for p in latency_basis(load_board(str(path)))}
    for key in ("setup arena", "setup runtime", "setup opt"):
        assert parts[key].kind == "prior" and parts[key].value.startswith("x1.00")
        assert "not applied, widens only" in parts[key].source
    # the old-runtime factor was fitted on CMSIS-NN's DSP path, not the reference kernels
    assert "fitted on cmsis-nn-dsp, not tflm-ref" in parts["setup runtime"].source
    summary = basis_summary(load_board(str(path)))
    assert summary.startswith("fitted: kernel scale") and "prior: core speed" in summary


def test_boards_show_labels_each_effect_fitted_or_prior(tmp_path):
    path = tmp_path / "oldref.toml"
    path.write_text(PRIORS)
    out = CliRunner().invoke(cli, ["boards", "show", str(path)]).output
    assert "latency basis" in out
    assert "effect arena       x1.00 +/-125%  prior: x1.50 not applied, widens only" in out
    assert "effect runtime     x1.00 +/-98%  prior: x1.47 not applied" in out
    assert "latency moved      x1.00" in out
    dsp = path.with_name("olddsp.toml")
    dsp.write_text(
        PRIORS.replace('"reference"', '"cmsis-nn"').replace('name = "oldref"', 'name = "olddsp"')
    )
    out = CliRunner().invoke(cli, ["boards", "show", str(dsp)]).output
    assert "effect runtime     x1.47 +/-35%  fitted" in out
    assert "latency moved      x1.47" in out


def test_profile_prints_which_parts_are_fitted_and_which_are_priors(tmp_path):
    from tests.repo import REPO

    path = tmp_path / "oldref.toml"
    path.write_text(PRIORS)
    model = REPO / "mcunas" / "calibration" / "models" / "kws_ref_model.tflite"
    out = CliRunner().invoke(cli, ["profile", str(model), "--board", str(path)]).output
    assert "basis             fitted: kernel scale" in out
    assert "(prior: x1.50 not applied, widens only)" in out

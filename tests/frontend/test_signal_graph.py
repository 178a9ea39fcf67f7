"""A front-end graph mcunas's signal kernels cannot run is refused in one line naming the op:
by the Python check (export, bench) and by the kernels themselves (the harness)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mcunas.boards.catalog import load_board
from mcunas.commands.cli import main
from mcunas.deploy import ArenaFigure, write_project
from mcunas.errors import UserError
from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import config_of_model, flexbuffer, frontend_model
from mcunas.frontend.kernels.build import host_harness, run_harness
from mcunas.frontend.kernels.graph import check_kernel_graph, graph_ops, harness_input

FRONT = frontend_model(FrontendConfig(mel_bands=10, pcan=True))


def _edit(model: bytes, change) -> bytes:
    from flatbuffers import Builder
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

    obj = fb.ModelT.InitFromObj(fb.Model.GetRootAs(model, 0))
    change(obj)
    builder = Builder(1024)
    builder.Finish(obj.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def with_op_renamed(model: bytes, old: str, new: str) -> bytes:
    """The model with custom op ``old`` renamed ``new``."""

    def rename(obj) -> None:
        for code in obj.operatorCodes:
            if code.customCode and code.customCode.decode() == old:
                code.customCode = new.encode()

    return _edit(model, rename)


def with_option(model: bytes, op: str, **values: int) -> bytes:
    """The model with ``op``'s options changed to ``values`` (the others kept)."""
    from flatbuffers import flexbuffers

    def change(obj) -> None:
        for operator in obj.subgraphs[0].operators:
            code = obj.operatorCodes[operator.opcodeIndex]
            if code.customCode and code.customCode.decode() == op:
                options = flexbuffers.Loads(bytes(np.asarray(operator.customOptions, np.uint8)))
                operator.customOptions = list(flexbuffer({**options, **values}))

    return _edit(model, change)


def test_the_graphs_mcunas_writes_pass():
    for pcan in (False, True):
        check_kernel_graph(frontend_model(FrontendConfig(pcan=pcan)))
    assert [op.name for op in graph_ops(FRONT)][:2] == ["SignalWindow", "SignalFftAutoScale"]


@pytest.mark.parametrize(
    "model,message",
    [
        (with_op_renamed(FRONT, "SignalPCAN", "SignalDelay"), "op SignalDelay is not in mcunas's"),
        (
            with_option(FRONT, "SignalWindow", shift=40),
            "SignalWindow: option shift=40 is outside 0..30",
        ),
        (
            with_option(FRONT, "SignalRfft", fft_length=768),
            "SignalRfft: fft_length=768 is no power",
        ),
        (with_option(FRONT, "SignalRfft", T=1), "SignalRfft: option T=1 is outside 7..7"),
        (
            with_option(FRONT, "SignalFilterBankLog", output_scale=0),
            "SignalFilterBankLog: option output_scale=0",
        ),
        (
            with_op_renamed(FRONT, "SignalFilterBankSquareRoot", "SignalFftAutoScale"),
            "op SignalFftAutoScale is out of place",
        ),
        (
            with_op_renamed(FRONT, "SignalEnergy", "SignalWindow"),
            "SignalWindow: option shift is missing",
        ),
    ],
)
def test_a_graph_the_kernels_cannot_run_is_refused_in_one_line(model, message):
    with pytest.raises(UserError) as caught:
        check_kernel_graph(model)
    text = str(caught.value)
    assert "\n" not in text and text.startswith("front end: ") and message in text


def test_the_kernels_refuse_the_same_options_themselves(tmp_path):
    exe = host_harness(tmp_path / "build")
    frames = [np.zeros((2, 480), np.int16)]
    for model, op, key in (
        (with_option(FRONT, "SignalWindow", shift=40), "SignalWindow", "shift"),
        (with_option(FRONT, "SignalRfft", fft_length=768), "SignalRfft", "fft_length"),
        (with_op_renamed(FRONT, "SignalPCAN", "SignalDelay"), "SignalDelay", "not in the signal"),
    ):
        with pytest.raises(UserError, match=rf"error: {op}: {key}"):
            run_harness(exe, harness_input([(model, frames)]), tmp_path / "run")
    got, report = run_harness(exe, harness_input([(FRONT, frames)]), tmp_path / "run")
    assert report.frames == 2 and got.shape == (20,)


def test_export_for_a_cortex_m_board_refuses_the_graph(tmp_path):
    from tests.deploy.test_deploy import MODEL

    bad = with_option(FRONT, "SignalWindow", shift=40)
    arena = ArenaFigure(30000, measured=False, source="simulator")
    with pytest.raises(UserError, match="SignalWindow: option shift=40"):
        write_project(MODEL.read_bytes(), load_board("nano33ble"), tmp_path / "p", arena, {}, bad)
    # an ESP32 project uses esp-tflite-micro's kernels: not checked against mcunas's
    write_project(MODEL.read_bytes(), load_board("esp32s3"), tmp_path / "e", arena, {}, FRONT)


def test_bench_refuses_the_graph_in_one_line(tmp_path, capsys):
    from tests.deploy.test_deploy import MODEL

    best = tmp_path / "run" / "best"
    best.mkdir(parents=True)
    (best / "model.tflite").write_bytes(MODEL.read_bytes())
    (best / "frontend.tflite").write_bytes(with_op_renamed(FRONT, "SignalPCAN", "SignalDelay"))
    info = {"board": {"name": "nano33ble"}, "frontend": config_of_model(FRONT).to_dict()}
    (best / "best.json").write_text(json.dumps(info))
    with pytest.raises(SystemExit) as exc:
        main(["bench", str(best), "--board", "nano33ble", "--dry-run", "--project-dir",
              str(tmp_path / "fw")])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and "Traceback" not in err
    assert len(err.splitlines()) == 1 and "op SignalDelay is not in mcunas's signal" in err

"""The rack runs frontend.tflite then the model on each board, over pseudo-terminals.

Virtual boards stand in for the boards: they run both graphs as the firmware does
and report the front end in the result line. ESP32 boards run it on
esp-tflite-micro's signal ops, Cortex-M boards on mcunas's signal kernels; a
board with neither takes no front-end job.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcunas.boards.catalog import load_board
from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import frontend_model
from mcunas.measure.rack import RackMeasurer, load_rack
from mcunas.testing.virtual_board.figures import fixed_figures
from mcunas.testing.virtual_board.flasher import VirtualProject
from mcunas.tflite.csource import model_crc32
from tests.repo import REPO
from tests.vboard_helpers import virtual_board

ROOT = REPO
KWS = (ROOT / "mcunas" / "calibration" / "models" / "kws_ref_model.tflite").read_bytes()
FRONT = frontend_model(FrontendConfig(mel_bands=10, pcan=True))  # kws_ref_model: (49, 10, 1)
FAST = fixed_figures(latency_ms=3.0, arena_bytes=30_000)
PROFILE = """name = "lab"
core = "xtensa-lx7"
clock_hz = 240_000_000
sram_bytes = 524_288
flash_bytes = 8_388_608
kernels = "esp-nn"
"""


def _rack(tmp_path, entries, **kw):
    body = "".join(f'[[board]]\nprofile = "{p}"\nport = "{port}"\n' for p, port in entries)
    (tmp_path / "rack.toml").write_text(body)
    profile = load_rack(tmp_path / "rack.toml").boards[0].profile
    return RackMeasurer(
        profile,
        tmp_path / "rack.toml",
        timeout_s=5,
        project_factory=VirtualProject,
        work_dir=tmp_path / "build",
        **kw,
    )


def _board(profile):
    return virtual_board(model=KWS, board=profile, figures=FAST, time_scale=1000)


def test_each_board_of_the_rack_runs_the_front_end_and_the_model(tmp_path):
    with _board("esp32s3") as a, _board("esp32s3") as b:
        with _rack(tmp_path, [("esp32s3", a.port), ("esp32s3", b.port)]) as rack:
            outcomes = rack.measure_many([KWS] * 4, frontend=FRONT)
            single = rack.measure(KWS, frontend=FRONT)
            bare = rack.measure(KWS)
    assert all(o.ok for o in outcomes)
    for m in [o.measurement for o in outcomes] + [single]:
        fe = m.details["frontend"]
        assert fe["crc32"] == model_crc32(FRONT) and fe["frames"] == 49
        assert fe["latency_ms"] > 0 and fe["arena_bytes"] > 0
        assert m.peak_sram_bytes >= 30_000 + fe["arena_bytes"]
        assert m.details["rack_board"] in {f"esp32s3@{a.port}", f"esp32s3@{b.port}"}
    assert "frontend" not in bare.details  # the model alone, as before
    assert {o.measurement.details["rack_board"] for o in outcomes} == {
        f"esp32s3@{a.port}",
        f"esp32s3@{b.port}",
    }


def test_a_cortex_m_rack_runs_the_front_end_on_the_signal_kernels(tmp_path):
    with _board("nucleo_f746zg") as vb:
        with _rack(tmp_path, [("nucleo_f746zg", vb.port)], max_failures=1) as rack:
            m = rack.measure(KWS, frontend=FRONT)
            bare = rack.measure(KWS)
    assert m.details["frontend"]["crc32"] == model_crc32(FRONT)
    assert m.details["frontend"]["frames"] == 49
    assert "frontend" not in bare.details
    (status,) = rack.status()
    assert status.out_reason is None and status.failures == 0 and status.measured == 2


def test_a_mixed_rack_sends_front_end_jobs_to_the_boards_that_can_run_them(tmp_path):
    (tmp_path / "esp.toml").write_text(PROFILE + '[platformio]\nplatform = "espressif32"\n')
    (tmp_path / "arm.toml").write_text(PROFILE + '[platformio]\nplatform = "ststm32"\n')
    esp, arm = (load_board(str(tmp_path / f"{n}.toml")) for n in ("esp", "arm"))
    with _board(esp) as a, _board(arm) as b:
        with _rack(tmp_path, [("esp.toml", a.port), ("arm.toml", b.port)]) as rack:
            outcomes = rack.measure_many([KWS] * 3, frontend=FRONT)
            bare = rack.measure_many([KWS] * 4)
    assert all(o.ok for o in outcomes + bare)
    assert {o.measurement.details["rack_board"] for o in outcomes} == {f"lab@{a.port}"}
    assert all("frontend" in o.measurement.details for o in outcomes)
    by_board = {s.port: s for s in rack.status()}
    assert by_board[b.port].out_reason is None and by_board[b.port].failures == 0


def test_a_search_trial_hands_its_front_end_to_the_rack(tmp_path):
    from mcunas.data.datasets import load_dataset
    from mcunas.search.trial.runner import KerasRunner
    from tests.frontend.test_frontend_features import make_tones

    make_tones(tmp_path / "data", per_class=4, seconds=1.0)
    data = load_dataset(tmp_path / "data", frontend=FrontendConfig(mel_bands=10, pcan=True))
    esp = load_board("esp32s3")
    with _board("esp32s3") as vb, _rack(tmp_path, [("esp32s3", vb.port)]) as rack:
        m = KerasRunner(None, data, esp, None, rack).measure(KWS, lambda f: True)
    assert m.details["frontend"]["crc32"] == model_crc32(frontend_model(data.frontend))
    assert m.details["rack_board"] == f"esp32s3@{vb.port}"


@pytest.fixture
def ptys():
    """Pseudo-terminal ports that exist (the refusal is the boards', not the ports')."""
    opened: list[int] = []

    def port() -> str:
        main, sub = os.openpty()
        opened.extend((main, sub))
        return os.ttyname(sub)

    yield port
    for fd in opened:
        os.close(fd)


def _rack_file(tmp_path, profiles, port) -> Path:
    body = "".join(f'[[board]]\nprofile = "{p}"\nport = "{port()}"\n' for p in profiles)
    (tmp_path / "rack.toml").write_text(body)
    return tmp_path / "rack.toml"


def test_a_search_on_a_rack_without_signal_ops_is_refused_before_training(
    tmp_path, ptys, capsys, monkeypatch
):
    from mcunas.commands.cli import main
    from mcunas.tflite import convert
    from tests.frontend.test_frontend_features import make_tones

    def too_late() -> None:
        raise AssertionError("TensorFlow loaded: the search got past its checks")

    monkeypatch.setattr(convert, "import_tensorflow", too_late)
    make_tones(tmp_path / "data", per_class=1)
    # neither ESP32 nor Cortex-M: no TFLite Micro build with the signal ops
    (tmp_path / "lab.toml").write_text(PROFILE + '[platformio]\nplatform = "ststm32"\n')
    rack = _rack_file(tmp_path, ["lab.toml", "lab.toml", "esp32s3"], ptys)
    for measure in ("board", "hybrid"):
        args = ["search", "--board", str(tmp_path / "lab.toml"), "--frontend", "tflm"]
        args += ["--dataset", str(tmp_path / "data"), "--measure", measure, "--rack", str(rack)]
        with pytest.raises(SystemExit) as info:
            main([*args, "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err.strip()
        assert info.value.code == 2 and "Traceback" not in err, err
        assert len(err.splitlines()) == 1 and "signal kernels" in err and str(rack) in err
        assert "lab@" in err and "esp32s3@" not in err  # the boards that measure
        assert not (tmp_path / "out").exists()


def test_a_rack_with_one_board_that_runs_the_front_end_is_accepted(tmp_path, ptys):
    from mcunas.search.api import check_search
    from mcunas.search.settings.config import SearchConfig

    (tmp_path / "esp.toml").write_text(PROFILE + '[platformio]\nplatform = "espressif32"\n')
    (tmp_path / "arm.toml").write_text(PROFILE + '[platformio]\nplatform = "ststm32"\n')
    for profiles, board in (
        (["arm.toml", "esp.toml", "arm.toml"], str(tmp_path / "arm.toml")),  # a mixed rack
        (["esp32s3", "nucleo_f746zg"], "esp32s3"),
        (["nucleo_f746zg", "nucleo_f746zg"], "nucleo_f746zg"),  # mcunas's signal kernels
    ):
        rack = _rack_file(tmp_path, profiles, ptys)
        config = SearchConfig(board=board, frontend="tflm", measure="board", rack=str(rack))
        config.out = str(tmp_path / "out")
        assert check_search(config).name in ("lab", "esp32s3", "nucleo_f746zg")
    config.frontend = "numpy"  # no front end: a Cortex-M rack measures the model alone
    config.board, config.rack = "nucleo_f746zg", str(_rack_file(tmp_path, ["nucleo_f746zg"], ptys))
    assert check_search(config).name == "nucleo_f746zg"

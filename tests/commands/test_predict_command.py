"""`mcunas predict best/ PATH...`: raw inputs through frontend.tflite then model.tflite."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from mcunas.commands.cli import cli, main
from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import frontend_model
from mcunas.frontend.host import FrontendRunner, scaled, to_int16
from mcunas.tflite.evaluate import int8_outputs
from tests.frontend.test_frontend_features import make_tones, write_wav
from tests.repo import REPO

MODELS = REPO / "mcunas" / "calibration" / "models"
KWS = MODELS / "kws_ref_model.tflite"  # (49, 10, 1) in, 12 classes out
NAMES = [
    "silence",
    "unknown",
    "yes",
    "no",
    "up",
    "down",
    "left",
    "right",
    "on",
    "off",
    "high",
    "low",
]
CFG = FrontendConfig(mel_bands=10, pcan=True)


def kws_best_folder(root: Path, frontend: bool = True, cfg: FrontendConfig = CFG) -> Path:
    """``root/best`` with a keyword-spotting model, its class names and (optionally) front end."""
    best = root / "best"
    best.mkdir(parents=True)
    (best / "model.tflite").write_bytes(KWS.read_bytes())
    info: dict = {
        "class_names": NAMES,
        "model_sha256": hashlib.sha256(KWS.read_bytes()).hexdigest(),
    }
    if frontend:
        (best / "frontend.tflite").write_bytes(frontend_model(cfg))
        info["frontend"] = cfg.to_dict()
    (best / "best.json").write_text(json.dumps(info))
    return best


def test_wav_files_and_a_class_folder_run_as_on_the_board(tmp_path: Path) -> None:
    best = kws_best_folder(tmp_path)
    make_tones(tmp_path / "clips", per_class=2)
    out = CliRunner().invoke(cli, ["predict", str(best), str(tmp_path / "clips"), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["frontend"] is True and data["labelled"] == 4
    labels = {p["label"] for p in data["predictions"]}
    assert labels == {NAMES.index("high"), NAMES.index("low")}
    # the same numbers by hand: the front end's int16 features, the model's own quantisation
    from mcunas.data.audio import read_wav

    samples, _ = read_wav(tmp_path / "clips" / "high" / "0.wav")
    need = CFG.frame_samples + 48 * CFG.hop_samples
    x16 = to_int16(np.pad(samples[:need], (0, max(0, need - len(samples)))))
    feats = scaled(FrontendRunner(frontend_model(CFG)).clip(x16), CFG)
    probs = int8_outputs(KWS.read_bytes(), feats.reshape(1, 49, 10, 1))[0]
    first = data["predictions"][0]
    assert first["input"].endswith("high/0.wav") and first["index"] == int(np.argmax(probs))
    assert first["score"] == pytest.approx(float(probs.max()), abs=1e-6)
    accuracy = np.mean([p["index"] == p["label"] for p in data["predictions"]])
    assert data["accuracy"] == pytest.approx(accuracy)
    text = CliRunner().invoke(
        cli, ["predict", str(best), str(tmp_path / "clips" / "low" / "1.wav")]
    )
    assert text.exit_code == 0 and "frontend.tflite -> model.tflite" in text.output
    assert "accuracy" not in text.output  # one unlabelled file


def test_a_best_without_front_end_runs_npz_features(tmp_path: Path) -> None:
    best = kws_best_folder(tmp_path, frontend=False)
    rng = np.random.default_rng(0)
    x = rng.normal(0, 1, (6, 49, 10)).astype(np.float32)
    np.savez(tmp_path / "f.npz", x_test=x, y_test=np.arange(6))
    out = CliRunner().invoke(cli, ["predict", str(best), str(tmp_path / "f.npz")])
    assert out.exit_code == 0, out.output
    assert "no front end" in out.output and "of 6 labelled inputs" in out.output
    expect = np.argmax(int8_outputs(KWS.read_bytes(), x.reshape(6, 49, 10, 1)), axis=-1)
    data = json.loads(
        CliRunner().invoke(cli, ["predict", str(best), str(tmp_path / "f.npz"), "--json"]).output
    )
    assert [p["index"] for p in data["predictions"]] == expect.tolist()


def _run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return exc.value.code, capsys.readouterr().err


def test_bad_inputs_are_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    best = kws_best_folder(tmp_path / "a")
    plain = kws_best_folder(tmp_path / "b", frontend=False)
    write_wav(tmp_path / "other" / "meow" / "0.wav", np.zeros(16000))
    write_wav(tmp_path / "slow.wav", np.zeros(8000), rate=8000)
    (tmp_path / "notes.txt").write_text("x")
    cases = {
        "has no model.tflite": [str(tmp_path), str(tmp_path / "slow.wav")],
        "is not one of the model's classes": [str(best), str(tmp_path / "other")],
        "the front end takes 16000 Hz": [str(best), str(tmp_path / "slow.wav")],
        "do not fit the model input": [str(plain), str(tmp_path / "other" / "meow" / "0.wav")],
        "does not exist": [str(best), str(tmp_path / "missing.wav")],
        "give WAV files": [str(best), str(tmp_path / "notes.txt")],
    }
    for expected, args in cases.items():
        code, err = _run_main(["predict", *args], capsys)
        assert code == 2 and expected in err and "Traceback" not in err, (expected, err)


def test_predict_inputs_are_the_training_features_bit_for_bit(tmp_path: Path) -> None:
    """The features a search trains on (read_folder) are the ones predict feeds the model."""
    from mcunas.data.folder import read_folder
    from mcunas.deploy.inference import BestModel

    cfg = FrontendConfig(mel_bands=10)
    best = kws_best_folder(tmp_path, cfg=cfg)
    make_tones(tmp_path / "clips", per_class=3, seconds=1.0)
    trained = read_folder(tmp_path / "clips", frontend=cfg).x
    model = BestModel.load(best)
    files = sorted((tmp_path / "clips").glob("*/*.wav"))
    assert np.array_equal(np.stack([model.wav_features(f) for f in files]), trained)

"""``--strategy supernet`` end to end: train, search, fine-tune, stop, resume, bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mcunas.engine import run_search
from mcunas.search import SearchConfig
from mcunas.search.results.store import TrialStatus, TrialStore

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def _config(tmp_path: Path) -> SearchConfig:
    rng = np.random.default_rng(0)
    t = np.linspace(0, 1, 24, dtype=np.float32)
    y = rng.integers(0, 2, 64)
    x = np.sin(2 * np.pi * np.where(y == 0, 2.0, 5.0)[:, None] * t[None])
    x = (x + 0.1 * rng.normal(size=x.shape)).astype(np.float32)[..., None]
    data = tmp_path / "waves.npz"
    np.savez(data, x_train=x, y_train=y, kind="series")
    return SearchConfig(
        board="nano33ble",
        out=str(tmp_path / "o"),
        dataset=str(data),
        strategy="supernet",
        epochs=1,
        supernet_epochs=2,
        subnets=6,
        max_trials=1,
        finetune_epochs=1,
        seed=1,
    )


def test_a_stopped_supernet_search_resumes_without_redoing_work(tmp_path, monkeypatch) -> None:
    from mcunas.supernet.subnets import SubnetScorer
    from mcunas.supernet.train import CHECKPOINT, SupernetTrainer

    cfg = _config(tmp_path)
    real_score, calls = SubnetScorer.score, {"n": 0}

    def stop_at_the_fourth(self, net):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return real_score(self, net)

    monkeypatch.setattr(SubnetScorer, "score", stop_at_the_fourth)
    with pytest.raises(KeyboardInterrupt):
        run_search(cfg, stream=None)
    store = TrialStore.open(Path(cfg.out))
    before = {r.trial_id: r for r in store.trials(TrialStatus.SCREENED)}
    reference = [r for r in store.trials() if r.origin == "seed"]
    store.close()
    assert len(before) == 3 and (Path(cfg.out) / CHECKPOINT).is_file()
    # the reference design (kws-dscnn for series) trained first: the largest variant that fits
    assert reference and reference[-1].status in (TrialStatus.OK, TrialStatus.FAILED)
    assert all(r.status == TrialStatus.INFEASIBLE for r in reference[:-1])
    assert [r.trial_id for r in reference] == [f"r{i}" for i in range(len(reference))]
    assert reference[-1].status == TrialStatus.FAILED or reference[-1].epochs_run

    monkeypatch.setattr(SubnetScorer, "score", real_score)
    monkeypatch.setattr(SupernetTrainer, "train_epoch", lambda *a: pytest.fail("retrained"))
    cfg.resume = True
    result = run_search(cfg, stream=None)
    assert result.best is not None and result.best.origin in ("supernet", "seed")
    store = TrialStore.open(Path(cfg.out))
    rows = [r for r in store.trials() if r.origin == "supernet"]
    again = [r for r in store.trials() if r.origin == "seed"]
    ok, rescored = store.trials(TrialStatus.OK), store.get_meta("rescore")
    store.close()
    # the front's finalists (the reference and the subnet, when both are ok) re-scored
    assert (rescored is not None and len(rescored["runs"]) >= 2) == (len(ok) >= 2)
    assert [(r.trial_id, r.finished_at) for r in again] == [
        (r.trial_id, r.finished_at) for r in reference
    ]  # not trained again
    scored = [r for r in rows if r.inherited_accuracy is not None]
    assert len(scored) == 6 and not any(r.status == TrialStatus.RUNNING for r in rows)
    for tid, old in before.items():  # finished subnets kept, not scored again
        now = next(r for r in rows if r.trial_id == tid)
        assert now.inherited_accuracy == old.inherited_accuracy
    tuned = [r for r in rows if r.status in (TrialStatus.OK, TrialStatus.INFEASIBLE)]
    assert len(tuned) == 1 and all(r.int8_accuracy is not None and r.epochs_run for r in tuned)
    best_inherited = max(r.inherited_accuracy or 0 for r in scored)
    assert max(r.inherited_accuracy or 0 for r in tuned) == best_inherited
    assert "screened" in result.text()


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "mcunas", "search", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)


def test_supernet_bad_input_is_one_line(tmp_path: Path) -> None:
    done = _cli("--board", "esp32s3", "--strategy", "supernet", "--families", "dsconv")
    assert done.returncode == 2 and "stages' family only" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    out = tmp_path / "evo"
    store = TrialStore.open(out)
    store.set_meta("config", SearchConfig(board="esp32s3", out=str(out)).to_dict())
    store.start_trial("0", {"family": "dsconv"})
    store.close()
    done = _cli("--out", str(out), "--resume", "--strategy", "supernet")
    assert done.returncode == 2 and "same search settings" in done.stderr
    assert "Traceback" not in done.stderr

"""The search assembled: strategies and executors by name, and the layer they keep."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mcunas
from mcunas import engine
from mcunas.errors import UserError
from mcunas.search.settings import plugins
from mcunas.search.settings.config import SearchConfig
from mcunas.search.settings.plugins import StrategyPlugin
from mcunas.supernet.jobs import (
    WIRE,
    Check,
    Done,
    Failed,
    Finetune,
    Fits,
    Reference,
    Screen,
    Screened,
    Train,
    Trained,
)

ROOT = Path(mcunas.__file__).resolve().parent


def test_every_strategy_the_cli_offers_is_registered() -> None:
    from mcunas.search.tuner.oracles import ORACLES

    STRATEGIES = plugins.names()
    assert set(ORACLES) | {"supernet"} == set(STRATEGIES)
    kinds = {
        name: engine.strategy_for(SearchConfig(board="esp32s3", strategy=name)).name
        for name in STRATEGIES
    }
    assert kinds == {
        "random": "keras-tuner",
        "bayesian": "keras-tuner",
        "hyperband": "keras-tuner",
        "evolution": "keras-tuner",
        "supernet": "supernet",
    }


def test_the_executor_follows_serve() -> None:
    assert engine.executor_for(SearchConfig(board="esp32s3")).name == "local"
    assert (
        engine.executor_for(SearchConfig(board="esp32s3", serve="127.0.0.1:8470")).name == "chief"
    )
    assert engine.EXECUTORS["worker"]().name == "worker"  # registered like the others


def test_a_registered_strategy_is_found_by_name() -> None:
    mine = StrategyPlugin(("mine",), lambda: "my strategy")
    engine.register_strategy(mine)
    try:
        assert engine.strategy_for(SearchConfig(board="esp32s3", strategy="mine")) == "my strategy"
    finally:
        plugins.unregister(mine)
    with pytest.raises(UserError, match="Unknown strategy 'nope'"):
        engine.strategy_for(SearchConfig(board="esp32s3", strategy="nope"))


def test_bad_serve_settings_are_refused_before_anything_runs(tmp_path) -> None:
    cfg = SearchConfig(board="esp32s3", out=str(tmp_path / "o"), serve="nohost")
    with pytest.raises(UserError, match="--serve 'nohost': give HOST:PORT"):
        engine.check_search(cfg)
    assert not (tmp_path / "o").exists()


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize("package", ["search", "supernet"])
def test_no_upward_import_from_the_strategy_layers(package) -> None:
    above = {"search": ("mcunas.supernet", "mcunas.distributed", "mcunas.engine"),
             "supernet": ("mcunas.distributed", "mcunas.engine")}[package]  # fmt: skip
    bad = {
        f"{path.name}: {name}"
        for path in (ROOT / package).glob("*.py")
        for name in _imports(path)
        if name.startswith(above)
    }
    assert bad == set()


@pytest.mark.parametrize(
    "job",
    [
        Check(0.5, {"a": 1}),
        Train(1.0, 3),
        Reference("r0", {"width": 1.0}, 0),
        Screen("s0001", 1.0, {"a": 1}, "ab"),
        Finetune("s0001", 0.75, {"a": 2}, "ab", 4),
    ],
)
def test_a_job_crosses_the_wire_unchanged(job) -> None:
    back = WIRE.job_from_wire(WIRE.job_to_wire(job))
    if isinstance(job, Train):
        assert back == Train(1.0, 3, from_chief=True)  # over the wire: the chief's checkpoint
    else:
        assert back == job
    assert WIRE.trial_ids(job) == ((job.tid,) if hasattr(job, "tid") else ())


def test_the_chiefs_checkpoint_travels_with_a_training_job() -> None:
    sent = WIRE.job_to_wire(Train(1.0, 3, checkpoint=b"\x00weights"))
    assert WIRE.job_from_wire(sent).checkpoint == b"\x00weights"
    with pytest.raises(ValueError, match="unknown job 'dance'"):
        WIRE.job_from_wire({"kind": "dance"})


@pytest.mark.parametrize(
    "result",
    [Fits(True), Trained(3), Trained(1, stopped=True), Screened((0.9, 0.2)), Screened(None),
     Done(), Done(dropped=True), Failed("out of memory"), Failed("x", worker="w1")],
)  # fmt: skip
def test_a_result_crosses_the_wire_unchanged(result) -> None:
    assert WIRE.result_from_wire(WIRE.result_to_wire(result)) == result


def test_an_unreadable_result_is_a_failure() -> None:
    assert WIRE.result_from_wire({"error": "boom"}) == Failed("boom")

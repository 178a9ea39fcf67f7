"""A third strategy is its own code and one registration: the registry, the CLI and a real run.

The toy strategy below tries the search space's default design ``--toy-steps``
times through the one trial pipeline. Registered here (as :mod:`mcunas.engine`
registers the others), its name becomes a ``--strategy`` choice, its option a
``mcunas search`` option, its check part of the settings' check, and
``run_search`` runs it; nothing else in mcunas changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import click
import pytest
from click.testing import CliRunner

from mcunas import engine
from mcunas.errors import UserError
from mcunas.search.results.store import TrialStatus
from mcunas.search.settings import plugins
from mcunas.search.settings.config import SearchConfig
from mcunas.search.settings.plugins import StrategyPlugin, options_of


@dataclass(frozen=True)
class ToyOptions:
    """The toy strategy's one option."""

    toy_steps: int = field(default=2, metadata={"help": "--strategy toy: designs trained."})


def check_toy(config: SearchConfig) -> None:
    """The toy strategy's own check."""
    if options_of(config).toy_steps < 1:
        raise UserError("--toy-steps must be at least 1.")


class ToyStrategy:
    """Trains the space's default design ``toy_steps`` times (one seed each), in this process."""

    name = "toy"

    def search(self, run: Any, executor: Any, progress: Any) -> str | None:
        run.load_data()
        space, runner, close = run.components(measure=False)
        pipeline = run.pipeline(runner)
        try:
            for step in range(options_of(run.config).toy_steps):
                hp, tid = space.hyperparameters(), f"toy{step}"
                pipeline.begin(tid, dict(hp.values), family=hp.values.get("family"), origin=None)
                pipeline.run(
                    tid,
                    lambda hp=hp, step=step: runner.build(hp, step),
                    lambda model, check: runner.train(model, run.config.epochs),
                )
        finally:
            close()
        return None

    def work(self, run: Any, executor: Any, progress: Any) -> None:
        raise UserError("the toy strategy runs in one process")


HELP = "toy = the default design, again"
TOY = StrategyPlugin(("toy",), ToyStrategy, HELP, ToyOptions, check_toy)


@pytest.fixture
def toy() -> Iterator[StrategyPlugin]:
    engine.register_strategy(TOY)  # the one registration line a new strategy needs
    yield TOY
    plugins.unregister(TOY)


def test_a_registered_strategy_is_a_choice_with_its_options(toy) -> None:
    from mcunas.commands.search_options import search_options

    assert "toy" in plugins.names() and plugins.plugin_for("toy") is toy
    assert "toy_steps" in {f.name for f in plugins.option_fields()}
    command = click.command()(search_options(lambda **options: None))
    help_text = " ".join(CliRunner().invoke(command, ["--help"]).output.split())
    assert "supernet|toy]" in help_text and "toy = the default design, again" in help_text
    assert "--toy-steps INTEGER" in help_text and "designs trained. [default: 2]" in help_text


def test_its_options_and_check_come_with_the_settings(toy) -> None:
    config = SearchConfig(board="esp32s3", strategy="toy", options={"toy_steps": 3})
    config.validate()
    assert options_of(config) == ToyOptions(3)
    assert options_of(SearchConfig(board="esp32s3", strategy="toy")) == ToyOptions(2)
    again = SearchConfig.from_dict(config.to_dict())  # as a store or a worker reads them
    assert options_of(again) == ToyOptions(3)
    with pytest.raises(UserError, match="--toy-steps must be at least 1"):
        SearchConfig(board="esp32s3", strategy="toy", options={"toy_steps": 0}).validate()


def test_the_cli_puts_its_option_into_the_settings(toy, monkeypatch, tmp_path) -> None:
    import mcunas.search.api
    from mcunas.commands.search import cli

    seen: list[SearchConfig] = []

    def stop_at_start(config, *planned, **options):  # everything before this ran for real
        seen.append(config)
        raise SystemExit(0)

    monkeypatch.setattr(mcunas.search.api, "run_planned", stop_at_start)
    command = click.command()(search_options_of(cli))
    out = str(tmp_path / "o")
    args = ["--board", "esp32s3", "--strategy", "toy", "--toy-steps", "4", "--out", out]
    result = CliRunner().invoke(command, args)
    assert result.exit_code == 0, result.output
    assert seen and seen[0].strategy == "toy" and options_of(seen[0]) == ToyOptions(4)


def search_options_of(cli: click.Command) -> Any:
    """``mcunas search``'s body with the options as they are now (the toy registered)."""
    from mcunas.commands.search_options import search_options

    return search_options(click.pass_context(cli.callback.__wrapped__))  # type: ignore[union-attr]


@pytest.mark.slow
def test_run_search_runs_it_in_this_process(toy, tmp_path) -> None:
    from mcunas.engine import run_search

    config = SearchConfig(
        board="esp32s3",
        out=str(tmp_path / "o"),
        strategy="toy",
        epochs=1,
        families=("dsconv",),
        finalists=0,
        refit="off",
        ensemble="off",
        options={"toy_steps": 2},
    )
    result = run_search(config, stream=None)
    assert [r.trial_id for r in result.trials] == ["toy0", "toy1"]
    assert all(r.status == TrialStatus.OK for r in result.trials)
    assert result.best is not None and result.paths["best_dir"]

"""Re-scoring skipped when it cannot change the choice, said so, and run when asked."""

from __future__ import annotations

import io

import pytest

from mcunas.search.finish.finalists import finalist_band
from mcunas.search.finish.skip import SEPARATED, TIED, TIED_NOISE_MAX, RescoreSkip, rescore_skip
from mcunas.search.settings.progress import Progress
from tests.search.finish.test_choice import rec
from tests.search.finish.test_rescore_here import _run


def test_a_choice_ahead_of_every_finalist_by_more_than_the_noise_is_not_rescored() -> None:
    lead = finalist_band(0.95, 360)  # about 3.3 points
    rows = [rec("03", 0.95, 4.0, 50), rec("00", 0.95 - lead - 0.003, 9.0, 60, origin="seed")]
    skip = rescore_skip(rows, val_samples=360)
    assert skip is not None and skip.case == SEPARATED
    assert "trial 03 leads the others by more than the split's noise" in skip.text
    assert f"{100 * lead:.1f} points" in skip.text
    # just inside the noise: re-scored
    rows[1] = rec("00", 0.95 - lead + 0.003, 9.0, 60, origin="seed")
    assert rescore_skip(rows, 360) is None


def test_a_tie_the_seed_design_holds_is_not_rescored_when_the_noise_is_small() -> None:
    rows = [
        rec("00", 0.992, 3.4, 100, origin="seed"),
        rec("05", 0.994, 2.9, 90),
        rec("07", 0.992, 3.1, 95),
    ]
    assert finalist_band(0.994, 360) <= TIED_NOISE_MAX
    skip = rescore_skip(rows, val_samples=360)
    assert skip is not None and skip.case == TIED
    assert "the choice is the --seed-arch design" in skip.text
    # the same tie held by a searched design: re-scoring may hand it to the seed design
    assert rescore_skip([rows[1], rows[0], rows[2]], 360) is None
    # a small split's wide noise: k-fold cross-validation may find a better design
    assert finalist_band(0.994, 14) > TIED_NOISE_MAX
    assert rescore_skip(rows, 14) is None
    # not all within the noise: re-scored
    apart = [rec("00", 0.97, 3.4, 100, origin="seed"), rec("05", 0.988, 2.9, 90)]
    assert 0.018 > finalist_band(0.988, 360)
    assert rescore_skip(apart, 360) is None


def test_the_skip_round_trips_through_the_store_shape() -> None:
    rows = [rec("00", 0.992, 3.4, 100, origin="seed"), rec("05", 0.994, 2.9, 90)]
    skip = rescore_skip(rows, 360)
    assert skip is not None
    again = RescoreSkip.from_dict(skip.to_dict())
    assert again is not None and again.to_dict() == skip.to_dict()
    assert RescoreSkip.from_dict({}) is None and RescoreSkip.from_dict(None) is None


def _seeded(run) -> None:  # noqa: ANN001
    """Make the store's top trial the seed design, tied with the others on the split."""
    for tid in ("00", "01", "02"):
        run.store.update(tid, score=0.992, int8_accuracy=0.992)
    run.store.update("00", origin="seed")


@pytest.mark.parametrize("always", [False, True])
def test_rescore_here_skips_a_decided_choice_unless_always(tmp_path, always: bool) -> None:
    import dataclasses

    from mcunas.search.finish.rescore import rescore_here
    from mcunas.search.report.result import compute_result

    run, built, _ = _run(tmp_path, finalists=3)
    _seeded(run)
    run.config = dataclasses.replace(run.config, always_rescore=always)
    stream = io.StringIO()
    rescore_here(run, Progress(1, None, stream=stream), ("stages",))
    skipped = run.store.get_meta("rescore_skip")
    if always:
        assert built == [("stages",)] and not skipped
        assert "Re-scoring 3 finalists" in stream.getvalue()
        return
    assert built == [] and run.store.get_meta("rescore") is None
    assert skipped["case"] == TIED and skipped["finalists"][0] == "00"
    assert "Finalists not re-scored: all within the split's noise" in stream.getvalue()
    from mcunas.boards.catalog import load_board

    result = compute_result(run.store, run.config, load_board("esp32s3"), None)
    assert result.rescore is None and result.rescore_skipped is not None
    assert result.to_dict()["rescore_skipped"]["case"] == TIED
    assert "Finalists not re-scored" in result.text()


def test_always_rescore_reaches_the_settings_from_the_command_line() -> None:
    from mcunas.commands.search import _config, cli

    def settings(*args: str):  # noqa: ANN202
        ctx = cli.make_context("search", ["--board", "esp32s3", *args])
        with ctx:
            options = dict(ctx.params)
            options.pop("as_json"), options.pop("overwrite")
            return _config(ctx, options)

    assert settings().always_rescore is False
    config = settings("--always-rescore")
    assert config.always_rescore is True
    assert type(config).from_dict(config.to_dict()).always_rescore is True

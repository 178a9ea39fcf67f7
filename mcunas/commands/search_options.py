"""The options of ``mcunas search``: their declarations, apart from the command's body.

:func:`search_options` puts every option on the command in the order ``--help`` lists
them; :mod:`mcunas.commands.search` turns the values into a search and runs it.
``--strategy``'s choices and each strategy's own options come from the strategy
registry (:mod:`mcunas.search.settings.plugins`, filled by :mod:`mcunas.engine`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import Field
from typing import Any, TypeVar

import click

from mcunas.commands import SECONDS, Ranged, ranged_help
from mcunas.limits import LIMITS, MAX_WAV_SECONDS, read_bound_text
from mcunas.search.results.pareto import DEFAULT_OBJECTIVES
from mcunas.search.settings import plugins
from mcunas.search.settings.config import (
    DEFAULT_EPOCHS,
    DEFAULT_FINALISTS,
    DEFAULT_MAX_TRIALS,
    DEFAULT_STRATEGY,
    ENSEMBLE_CHOICES,
    FRONTEND_SPACES,
    MEASURES,
    REFIT_CHOICES,
)

F = TypeVar("F", bound=Callable[..., object])

# In --help order, top to bottom: these, --strategy, TRAINING, each strategy's own, the rest.
HEAD: tuple[Callable[[F], F], ...] = (
    click.option("--board", "-b", help="Board profile name or path (see `mcunas boards`)."),
    click.option(
        "--out",
        "-o",
        type=click.Path(file_okay=False),
        help="Output folder [default: runs/<board>-<date>-<time>].",
    ),
)
TRAINING: tuple[Callable[[F], F], ...] = (
    click.option(
        "--max-trials",
        type=Ranged("max_trials"),
        default=DEFAULT_MAX_TRIALS,
        show_default=True,
        help=ranged_help(
            "max_trials",
            "Candidates to train at most (draws refused before training are drawn again).",
        ),
    ),
    click.option(
        "--max-draws",
        type=Ranged("max_draws"),
        default=None,
        help=ranged_help(
            "max_draws",
            "Candidates drawn at most, counting those refused before training "
            "[default: 10 x --max-trials].",
        ),
    ),
    click.option(
        "--epochs",
        type=Ranged("epochs"),
        default=DEFAULT_EPOCHS,
        show_default=True,
        help=ranged_help(
            "epochs", "Training epochs per candidate (early stopping on validation loss)."
        ),
    ),
    click.option(
        "--batch-size",
        type=Ranged("batch_size"),
        default=None,
        help=ranged_help(
            "batch_size", "Training batch size [default: the power of two nearest N/40, 16 to 128]."
        ),
    ),
    click.option(
        "--augment",
        type=click.Choice(["auto", "flip", "off"]),
        default="auto",
        show_default=True,
        help="Training augmentation by input kind (images: crop and shift; audio: time shift "
        "and _background_noise_; series: shift and jitter); flip adds mirrored images.",
    ),
    click.option(
        "--frontend",
        type=click.Choice(["numpy", "tflm"]),
        default="numpy",
        show_default=True,
        help="WAV datasets: features by the numpy log-mel, or by the audio front end as a "
        "TFLite Micro graph (run in the host runtime; exported as best/frontend.tflite).",
    ),
    click.option(
        "--frontend-space",
        type=click.Choice(FRONTEND_SPACES),
        default=FRONTEND_SPACES[0],
        show_default=True,
        help="With --frontend tflm: keep one front end (30 ms frame / 20 ms hop, 40 mel bands), "
        "or search frame/hop (30/20, 40/20, 25/10 ms), mel bands (40, 32, 20), PCAN on/off and "
        "the input length (whole clip, 3/4, 1/2) with the network, each costed in the budgets.",
    ),
)
REST: tuple[Callable[[F], F], ...] = (
    click.option(
        "--seed",
        type=Ranged("seed"),
        default=0,
        show_default=True,
        help=ranged_help("seed", "Random seed."),
    ),
    click.option(
        "--finalists",
        type=Ranged("finalists"),
        default=DEFAULT_FINALISTS,
        show_default=True,
        help=ranged_help(
            "finalists",
            "Top models (the highest validation scores, within the split's noise of the best, "
            "and the --seed-arch design's largest fitting variant unless clearly worse) "
            "re-trained and re-scored before export "
            "(k-fold cross-validation under 2,000 training samples, else 3 seeds); the choice "
            "uses their mean accuracy and its standard error. 0: choose on the search's scores.",
        ),
    ),
    click.option("--no-rescore", is_flag=True, help="Same as --finalists 0."),
    click.option(
        "--early-stop/--no-early-stop",
        default=True,
        show_default=True,
        help="Stop a candidate at a rung of its schedule (epochs E/9 and E/3) when its "
        "validation curve, given the largest gain any finished candidate made from there, "
        "cannot reach a trained trial that costs no more; the summary says how many and the "
        "steps saved. --no-early-stop trains every candidate to its end (the validation-loss "
        "stop in the schedule's second half stays).",
    ),
    click.option(
        "--always-rescore",
        is_flag=True,
        help="Re-score the finalists even when their validation scores already decide: "
        "the top leads by more than the split's noise, or all tie within it with the "
        "--seed-arch design chosen (by default re-scoring is then skipped and the summary "
        "says why).",
    ),
    click.option(
        "--refit",
        type=click.Choice(list(REFIT_CHOICES)),
        default="auto",
        show_default=True,
        help="Train the chosen design once more on training + validation samples and export "
        "that model (same graph, same cost); auto: under 2,000 training samples.",
    ),
    click.option(
        "--ensemble",
        type=click.Choice(list(ENSEMBLE_CHOICES)),
        default="auto",
        show_default=True,
        help="Export an average of refits of the chosen design from other seeds (each "
        "trained like the refit; their own graph, measured and checked against the budgets); "
        "auto: as many (up to 4) as --max-latency-ms holds at the design's latency, where "
        "the search refits; off: the design alone.",
    ),
    click.option(
        "--distill",
        is_flag=True,
        help="The refit learns from a teacher too: the reference design at full size, trained "
        "on the same samples, lends it half its targets (one more training; experimental).",
    ),
    click.option(
        "--dataset",
        help="A .npz, a folder of class subfolders of images or WAV files; "
        f"default: built-in digits. Regular files only: an .npz up to {read_bound_text('npz')}, "
        f"a WAV clip up to {read_bound_text('wav')} and {MAX_WAV_SECONDS:g} s, an image up to "
        f"{read_bound_text('image')}; a clip or image that is not one refuses the dataset.",
    ),
    click.option(
        "--families", help="Comma-separated: dsconv,mbconv,transformer,hybrid,stages [all]."
    ),
    click.option(
        "--seed-arch",
        default="auto",
        show_default=True,
        help="The first trial: a known-good design scaled to the dataset (kws-dscnn, "
        "vww-mobilenet, ic-resnet8, series-s4 for long series); auto picks one by input "
        "kind (one-channel series of 256+ steps: series-s4; other series and audio: kws-dscnn; "
        "images: ic-resnet8, or vww-mobilenet from 64 px); "
        "none starts at random.",
    ),
    click.option(
        "--clock-mhz",
        type=Ranged("clock_mhz"),
        help=ranged_help(
            "clock_mhz",
            "Core clock the board runs at, if below its profile's (above it needs --overclock).",
        ),
    ),
    click.option(
        "--overclock",
        is_flag=True,
        help="Allow a --clock-mhz above the board profile's clock (a board run out of its spec).",
    ),
    click.option(
        "--max-latency-ms",
        type=Ranged("max_latency_ms"),
        help=ranged_help("max_latency_ms", "Latency budget."),
    ),
    click.option(
        "--max-sram-kb",
        type=Ranged("max_sram_kb"),
        help=ranged_help("max_sram_kb", "Peak SRAM budget."),
    ),
    click.option(
        "--max-flash-kb",
        type=Ranged("max_flash_kb"),
        help=ranged_help("max_flash_kb", "Flash budget."),
    ),
    click.option(
        "--max-energy-uj",
        type=Ranged("max_energy_uj"),
        help=ranged_help(
            "max_energy_uj",
            "Energy budget per inference: supply V x active current x latency, or a "
            "power meter's measurement (mcunas bench --power).",
        ),
    ),
    click.option(
        "--objectives",
        default=",".join(DEFAULT_OBJECTIVES),
        show_default=True,
        help="What the Pareto front trades off: accuracy and any of latency, sram, flash, energy.",
    ),
    click.option(
        "--safe-latency",
        is_flag=True,
        help="Check estimated latencies (and energies) with their stated error added (e.g. "
        "4 ms +-50% counts as 6 ms); measured ones as they are.",
    ),
    click.option(
        "--measure",
        type=click.Choice(MEASURES),
        default="simulator",
        show_default=True,
        help="hybrid: simulate all, measure promising candidates on the board.",
    ),
    click.option("--port", help="Serial port of the board (--measure board|hybrid) [auto]."),
    click.option("--rack", type=click.Path(dir_okay=False), help="rack.toml: measure on a rack."),
    click.option(
        "--time-budget",
        "time_budget_s",
        type=Ranged("time_budget_s"),
        help=ranged_help(
            "time_budget_s",
            "Seconds for this run (a --resume gets its own); stop cleanly after the current "
            "trial and report.",
        ),
    ),
    click.option(
        "--serve",
        metavar="HOST:PORT",
        help="Distributed search: be its chief on HOST:PORT (oracle, trial store, report); "
        "`mcunas worker --connect HOST:PORT` on any machine runs the trials.",
    ),
    click.option(
        "--worker-timeout",
        "worker_timeout_s",
        type=Ranged("worker_timeout_s"),
        help=ranged_help(
            "worker_timeout_s",
            "With --serve: seconds a worker may be silent before its trial goes to another "
            "[default: 60].",
        ),
    ),
    click.option(
        "--wait",
        "wait_s",
        type=SECONDS,
        help=ranged_help(
            "timeout_s",
            "With --serve: seconds a trial handed back from a lost worker waits with no worker "
            "connected; then the chief stops with the line that resumes it [default: 900].",
        ),
    ),
    click.option(
        "--token-file",
        type=click.Path(dir_okay=False),
        help="With --serve: the shared token workers must show (made, mode 0600, if missing; "
        f"a regular file of at most {read_bound_text('token')}, printable ASCII) "
        "[default: MCUNAS_TOKEN; off loopback without either, <out>/serve.token is made].",
    ),
    click.option(
        "--tls-cert",
        type=click.Path(dir_okay=False),
        help="With --serve: serve TLS with this certificate (PEM); workers give --tls-ca.",
    ),
    click.option("--tls-key", type=click.Path(dir_okay=False), help="The --tls-cert's key (PEM)."),
    click.option("--resume", is_flag=True, help="Continue the search in --out."),
    click.option(
        "--overwrite",
        is_flag=True,
        help="Start over in --out: delete the earlier search's trials, models and report first.",
    ),
    click.option("--json", "as_json", is_flag=True, help="Print a machine-readable summary."),
)


def strategy_choice() -> Callable[[F], F]:
    """``--strategy``: the registered names, and what each registration says of itself."""
    words = "; ".join(p.help for p in plugins.plugins() if p.help)
    return click.option(
        "--strategy",
        type=click.Choice(plugins.names()),
        default=DEFAULT_STRATEGY,
        show_default=True,
        help=f"Search strategy ({words})." if words else "Search strategy.",
    )


def strategy_option(each: Field[Any]) -> Callable[[F], F]:
    """The CLI option of one field of a strategy's options dataclass (see its plugin).

    A field named in :data:`mcunas.limits.LIMITS` is ranged; ``choices`` in its
    metadata make a choice; a bool is a flag; its default is shown when it has one.
    """
    default = plugins.default_of(each)
    text, choices = each.metadata["help"], each.metadata.get("choices")
    flag = "--" + each.name.replace("_", "-")
    if isinstance(default, bool):
        return click.option(flag, is_flag=True, default=default, help=text)
    kind: Any = None
    if choices is not None:
        kind = click.Choice(tuple(choices))
    elif each.name in LIMITS:
        kind, text = Ranged(each.name), ranged_help(each.name, text)
    elif default is not None:
        kind = type(default)
    shown = default is not None
    return click.option(flag, type=kind, default=default, show_default=shown, help=text)


def options() -> tuple[Callable[[F], F], ...]:
    """Every option of ``mcunas search`` in ``--help`` order, with the registered strategies'."""
    import mcunas.engine  # noqa: F401  (the strategies' registrations)

    own = tuple(strategy_option(each) for each in plugins.option_fields())
    return (*HEAD, strategy_choice(), *TRAINING, *own, *REST)


def search_options(command: F) -> F:
    """Put every option of ``mcunas search`` on ``command``.

    Args:
        command (Callable): the command's function, before ``click.command`` wraps it.

    Returns:
        Callable: the same function, carrying the options in :func:`options` order.
    """
    for option in reversed(options()):  # decorators apply bottom-up
        command = option(command)
    return command

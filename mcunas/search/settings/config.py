"""Search settings: :class:`SearchConfig` and the defaults behind ``mcunas search``."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from mcunas.errors import UserError
from mcunas.jsontext import JsonObject
from mcunas.limits import LIMITS, check_number
from mcunas.search.results.budgets import Budgets
from mcunas.search.results.pareto import DEFAULT_OBJECTIVES, check_objectives

__all__ = [
    "DEFAULT_EPOCHS",
    "DEFAULT_FINALISTS",
    "DEFAULT_MAX_TRIALS",
    "DEFAULT_SUBNETS",
    "MEASURES",
    "SUPERNET_SCHEDULES",
    "SearchConfig",
    "WARM_START_ENV",
    "default_finetune_epochs",
    "warm_start_default",
]

# --strategy names: the registry's (mcunas.search.settings.plugins), filled by mcunas.engine.
# --strategy supernet: subnets scored with inherited weights by default, and the
# supernet's epochs as a multiple of --epochs (each step trains four subnets).
DEFAULT_SUBNETS = 300
SUPERNET_EPOCHS_PER_EPOCH = 2
FINETUNE_SHARE = 0.2  # fine-tuning epochs as a share of --epochs
# How the supernet's subnets are drawn while it trains (mcunas.supernet.train).
SUPERNET_SCHEDULES = ("sandwich", "progressive")
# Defaults measured so that `mcunas search --board esp32s3` finishes in under
# 10 minutes on 2 cores and reaches >= 95% INT8 accuracy on digits
# (docs/benchmarks/demo.md).
DEFAULT_MAX_TRIALS = 15
DEFAULT_EPOCHS = 30
DEFAULT_STRATEGY = "evolution"
# Finalists re-scored before export (--finalists; 0 or --no-rescore: none).
DEFAULT_FINALISTS = 3
# --refit: the chosen design trained again on training + validation samples before export
# (auto: below 2,000 training samples; mcunas.search.finish.refit)
REFIT_CHOICES = ("auto", "on", "off")
# --ensemble: refits of the chosen design from other seeds, averaged in the latency budget
# it leaves (auto: where the search refits and a latency budget is given; up to 4 members;
# mcunas.search.finish.ensemble)
MAX_MEMBERS = 4
ENSEMBLE_CHOICES = ("auto", "off", *(str(k) for k in range(2, MAX_MEMBERS + 1)))
# Without --max-draws, a search may draw this many candidates per trial it trains: the
# draws refused before training (about a second each) are drawn again up to this cap.
DRAWS_PER_TRIAL = 10
MEASURES = ("simulator", "board", "hybrid")
# Set to "0" to train Hyperband's promoted trials from scratch (for comparisons).
WARM_START_ENV = "MCUNAS_WARM_START"
# Settings that must match when resuming (the rest, e.g. --max-trials, may change).
IDENTITY = (
    "board",
    "clock_mhz",
    "strategy",
    "seed",
    "dataset",
    "families",
    "epochs",
    "max_latency_ms",
    "max_sram_kb",
    "max_flash_kb",
    "max_energy_uj",
    "measure",
    "safe_latency",
    "seed_arch",
    "batch_size",
    "augment",
    "supernet_epochs",
    "supernet_schedule",
    "finetune_epochs",
    "frontend",
    "frontend_space",
)
FRONTENDS = ("numpy", "tflm")  # WAV features: numpy log-mel, or the front-end graph in TFLM
# --frontend tflm: one front end, or its parameters searched (mcunas.search.frontends.searched)
FRONTEND_SPACES = ("fixed", "search")


def warm_start_default() -> bool:
    """``warm_start`` when not given: on unless ``MCUNAS_WARM_START`` is "0"."""
    return os.environ.get(WARM_START_ENV, "1").strip() != "0"


def default_finetune_epochs(epochs: int) -> int:
    """The supernet strategy's fine-tuning epochs without ``--finetune-epochs``."""
    return max(1, round(FINETUNE_SHARE * epochs))


@dataclass
class SearchConfig:
    """Everything a search needs; the CLI flags map one to one onto these fields."""

    board: str
    out: str | None = None
    clock_mhz: float | None = None  # the board's clock, when not its profile's
    strategy: str = DEFAULT_STRATEGY
    max_trials: int = DEFAULT_MAX_TRIALS
    max_draws: int | None = None
    epochs: int = DEFAULT_EPOCHS
    seed: int = 0
    dataset: str | None = None
    families: tuple[str, ...] | None = None
    seed_arch: str | None = "auto"
    max_latency_ms: float | None = None
    max_sram_kb: float | None = None
    max_flash_kb: float | None = None
    max_energy_uj: float | None = None
    objectives: tuple[str, ...] = DEFAULT_OBJECTIVES  # what the Pareto front is over
    safe_latency: bool = False
    measure: str = "simulator"
    port: str | None = None
    rack: str | None = None
    time_budget_s: float | None = None
    resume: bool = False
    batch_size: int | None = None
    augment: str = "auto"
    supernet_epochs: int | None = None  # --strategy supernet; default 2 x epochs
    supernet_schedule: str = SUPERNET_SCHEDULES[0]  # --strategy supernet
    subnets: int = DEFAULT_SUBNETS  # --strategy supernet: subnets scored in the search
    finetune_epochs: int | None = None  # --strategy supernet; default 20% of epochs
    serve: str | None = None  # HOST:PORT: a distributed search's chief (mcunas.distributed)
    worker_timeout_s: float | None = None  # chief: silence after which a trial is handed on
    wait_s: float | None = None  # chief: how long work handed back waits for a worker
    token_file: str | None = None  # chief: the shared token workers must show
    tls_cert: str | None = None  # chief: TLS certificate (PEM)
    tls_key: str | None = None  # chief: TLS private key (PEM)
    overclock: bool = False  # allow a clock_mhz above the profile's
    # Hyperband's promoted trials start from their parent's weights (no flag: the
    # environment's MCUNAS_WARM_START=0 turns it off, for comparisons)
    warm_start: bool = field(default_factory=warm_start_default)
    # stop a candidate on a rung when its curve cannot reach the front at its cost
    # (mcunas.search.results.curves); --no-early-stop trains every one to its end
    early_stop: bool = True
    finalists: int = DEFAULT_FINALISTS  # re-scored before export (mcunas.search.finish.rescore)
    always_rescore: bool = False  # re-score even where it cannot change the choice (finish.skip)
    refit: str = "auto"  # the chosen design refitted on every sample (mcunas.search.finish.refit)
    distill: bool = False  # the refit learns from a teacher too (mcunas.search.finish.distill)
    ensemble: str = "auto"  # refits averaged in the budget left (mcunas.search.finish.ensemble)
    frontend: str = FRONTENDS[0]  # WAV features: "numpy" log-mel or "tflm" (the graph)
    frontend_space: str = FRONTEND_SPACES[0]  # "fixed" front end, or "search" its parameters
    # a registered strategy's own options that have no field above (mcunas.search.settings.plugins)
    options: JsonObject = field(default_factory=dict)

    @property
    def supernet_plan(self) -> tuple[int, int]:
        """(supernet epochs, fine-tuning epochs) of ``--strategy supernet``."""
        supernet = self.supernet_epochs or SUPERNET_EPOCHS_PER_EPOCH * self.epochs
        finetune = self.finetune_epochs
        if finetune is None:
            finetune = default_finetune_epochs(self.epochs)
        return supernet, finetune

    @property
    def draw_cap(self) -> int:
        """Candidates drawn at most, trained or refused before training."""
        return self.max_draws if self.max_draws is not None else DRAWS_PER_TRIAL * self.max_trials

    @property
    def budgets(self) -> Budgets:
        """The user's budgets."""
        return Budgets(
            self.max_latency_ms,
            self.max_sram_kb,
            self.max_flash_kb,
            self.safe_latency,
            self.max_energy_uj,
        )

    def dataset_sha256(self) -> str:
        """The dataset's content hash (the built-in digits: its name)."""
        if not self.dataset or self.dataset == "digits":
            return "digits"
        from pathlib import Path

        from mcunas.files import content_sha256

        return content_sha256(Path(self.dataset).expanduser())

    def to_dict(self) -> JsonObject:
        """JSON-ready dict (kept in the store for ``--resume``)."""
        data = asdict(self)
        data["families"] = list(self.families) if self.families else None
        data["objectives"] = list(self.objectives)
        return data

    @classmethod
    def from_dict(cls, data: JsonObject) -> SearchConfig:
        """Inverse of :meth:`to_dict` (unknown keys ignored)."""
        names = {f.name for f in fields(cls)}
        clean = {k: v for k, v in data.items() if k in names}
        if clean.get("families"):
            clean["families"] = tuple(clean["families"])
        if clean.get("objectives"):
            clean["objectives"] = tuple(clean["objectives"])
        clean["options"] = dict(clean.get("options") or {})
        return cls(**clean)

    @classmethod
    def resumed(cls, out: str, given: JsonObject) -> SearchConfig:
        """The settings of the search in ``out``, with the ``given`` options over them.

        ``given`` holds only the options the user set (the rest keep the stored
        values); a ``MCUNAS_WARM_START`` in the environment counts as given.

        Raises:
            UserError: ``out`` holds no mcunas search.
        """
        from mcunas.search.results.store import STORE_NAME, TrialStore

        stored: JsonObject = {}
        if TrialStore.exists_in(Path(out)):
            store = TrialStore.open(Path(out))
            stored = store.get_meta("config") or {}
            store.close()
            if not stored:
                raise UserError(
                    f"Nothing to resume: {Path(out) / STORE_NAME} holds no search settings "
                    "(empty, or cut short). Restore it from a copy, or start over with "
                    "--board and --overwrite."
                )
        if not stored:
            raise UserError(
                f"Nothing to resume: {out} holds no mcunas search. "
                "Start one with --board (and this --out)."
            )
        merged = {**stored, **given, "resume": True, "out": out}
        merged["options"] = {**(stored.get("options") or {}), **given.get("options", {})}
        if WARM_START_ENV in os.environ:
            merged["warm_start"] = warm_start_default()
        return cls.from_dict(merged)

    def _check_frontend(self) -> None:
        if self.frontend_space not in FRONTEND_SPACES:
            raise UserError(
                f"Unknown --frontend-space '{self.frontend_space}'; "
                f"choose {', '.join(FRONTEND_SPACES)}."
            )
        if self.frontend_space == "fixed":
            return
        if self.frontend != "tflm":
            raise UserError("--frontend-space search needs --frontend tflm (the front-end graph).")

    def validate(self) -> None:
        """Raise :class:`UserError` for values that cannot work."""
        from mcunas.search.settings.plugins import plugin_for

        plugin = plugin_for(self.strategy)  # the registered strategy's own check below
        if self.measure not in MEASURES:
            raise UserError(f"Unknown --measure '{self.measure}'; choose {', '.join(MEASURES)}.")
        if plugin.validate is not None:
            plugin.validate(self)
        if self.measure == "simulator" and (self.port or self.rack):
            raise UserError(
                "--port and --rack need --measure board or hybrid; "
                "the default --measure simulator uses no board."
            )
        self._check_frontend()
        check_number("finalists", self.finalists)
        if self.refit not in REFIT_CHOICES:
            raise UserError(f"Unknown --refit '{self.refit}'; choose {', '.join(REFIT_CHOICES)}.")
        if self.ensemble not in ENSEMBLE_CHOICES:
            raise UserError(
                f"Unknown --ensemble '{self.ensemble}'; choose {', '.join(ENSEMBLE_CHOICES)}."
            )
        if self.refit == "off" and self.ensemble not in ("auto", "off"):
            raise UserError(
                f"--ensemble {self.ensemble} averages refits of the chosen design and --refit off "
                "makes none: give --refit on (or auto), or leave --ensemble out."
            )
        check_number("max_trials", self.max_trials)
        check_number("epochs", self.epochs)
        if self.max_draws is not None and self.max_draws < self.max_trials:
            raise UserError(
                f"--max-draws ({self.max_draws}) must be at least --max-trials ({self.max_trials})."
            )
        check_objectives(self.objectives)
        door: dict[str, object] = {"token-file": self.token_file, "tls-cert": self.tls_cert}
        door.update({"tls-key": self.tls_key, "wait": self.wait_s})
        if self.serve is None and any(door.values()):
            given = ", ".join(f"--{k}" for k, v in door.items() if v)
            raise UserError(f"{given}: only with --serve (the chief's options)")
        for each in fields(self):
            if each.name in LIMITS:  # every number in its range (mcunas.limits)
                check_number(each.name, getattr(self, each.name))
        for name, value in self.options.items():
            if name in LIMITS:
                check_number(name, value)

"""The rank check's figures: Kendall taus of other scores, the truth's noise ceiling, one line.

Used by ``scripts/bench supernet --part rank`` (``bench_supernet.py``); no training here.
"""

from __future__ import annotations

import numpy as np


def proxy_taus(nets, scored, tests, alone) -> dict:  # noqa: ANN001
    """Kendall tau against the stand-alone truth of scores other than inherited test accuracy.

    ``test_loss``: inherited test cross-entropy (negated: lower ranks higher), a score
    not quantised to whole test samples. ``search_key``: what the search sorts by,
    validation accuracy then loss, as a rank. ``val_loss``: validation loss alone.
    """
    from scipy.stats import kendalltau

    from mcunas.supernet.evolve import fitness_key

    keys = sorted(range(len(nets)), key=lambda i: fitness_key((scored[i].accuracy, scored[i].loss)))
    order = np.empty(len(nets))
    order[keys] = np.arange(len(nets), 0, -1)
    return {
        "tau_test_loss": float(kendalltau([-t[1] for t in tests], alone).statistic),
        "tau_search_key": float(kendalltau(order, alone).statistic),
        "tau_val_loss": float(kendalltau([-v.loss for v in scored], alone).statistic),
    }


def within_resolution(nets, inherited, alone) -> dict[str, float]:  # noqa: ANN001
    """Kendall tau inside each input resolution with 3 or more of the subnets.

    Resolution moves accuracy most; this says whether inherited accuracy also
    orders the subnets that share one, where they differ by less.
    """
    from scipy.stats import kendalltau

    groups: dict[int, list[int]] = {}
    for i, n in enumerate(nets):
        groups.setdefault(n.resolution, []).append(i)
    return {
        f"r{res}": float(kendalltau([inherited[i] for i in ix], [alone[i] for i in ix]).statistic)
        for res, ix in sorted(groups.items())
        if len(ix) >= 3
    }


def noise_ceiling(runs: list[list[float]]) -> tuple[float | None, float | None]:
    """The stand-alone means' reliability, and the tau a perfect predictor would score.

    Reliability is the share of the means' variance across subnets that is not
    seed noise (within-subnet variance / seeds). A predictor equal to the true
    accuracy correlates with the noisy means at sqrt(reliability), and for a
    normal pair Kendall's tau is 2/pi * arcsin(correlation): the ceiling the
    truth's own noise puts on the measured tau. None with one seed.
    """
    if min(len(r) for r in runs) < 2:
        return None, None
    noise = float(np.mean([np.var(r, ddof=1) / len(r) for r in runs]))
    between = float(np.var([np.mean(r) for r in runs], ddof=1))
    reliability = max(0.0, 1.0 - noise / between) if between > 0 else 0.0
    return reliability, float(2 / np.pi * np.arcsin(np.sqrt(reliability)))


def one_training_tau(runs: list[list[float]]) -> float | None:
    """How well one stand-alone training ranks the subnets: the yardstick for the supernet.

    Each seed's accuracies against the mean of the other seeds, Kendall's tau averaged
    over the seeds. The per-trial search ranks its candidates by one training each, so
    an inherited-weight score this close to the truth is as good as training them all.
    None with fewer than two seeds.
    """
    from scipy.stats import kendalltau

    n = min(len(r) for r in runs)
    if n < 2:
        return None
    table = np.array([r[:n] for r in runs])
    taus = [
        kendalltau(table[:, k], np.delete(table, k, axis=1).mean(axis=1)).statistic
        for k in range(n)
    ]
    return float(np.mean(taus))


def _ceiling_text(r: dict) -> str:
    if r["tau_ceiling"] is None:
        return "one seed: no noise ceiling"
    return (
        f"their reliability {r['truth_reliability']:.2f} caps tau near {r['tau_ceiling']:.2f}; "
        f"one training of each ranks them at tau {r['one_training_tau']:.2f}"
    )


def rank_line(task: str, r: dict) -> str:
    """The rank check's summary line."""
    return (
        f"RANK {task}: Kendall tau {r['tau']:.2f} (p={r['p']:.3f}) over {r['subnets']} "
        f"subnets (stand-alone: mean of {r['seeds']} seeds, +/-{r['alone_spread']:.3f}; "
        f"{_ceiling_text(r)}); inherited test loss tau {r['tau_test_loss']:.2f}, "
        f"the search's key (validation) tau {r['tau_search_key']:.2f}, validation "
        f"loss alone {r['tau_val_loss']:.2f}, fine-tuned {r['finetune_epochs']} epochs "
        f"as the search's finalists {r['tau_finetuned']:.2f}; "
        f"within one input resolution {within_text(r)}; "
        f"{r['inherited_s_per_subnet']:.2f} s inherited vs "
        f"{r['standalone_s_per_subnet']:.1f} s trained per subnet; supernet "
        f"{r['supernet_s']:.0f} s"
    )


def within_text(r: dict) -> str:
    """``r2 0.22 (5 subnets)``-style figures of the rank check's per-resolution taus."""
    within = r.get("tau_within_resolution") or {}
    counts: dict[str, int] = {}
    for pair in r["pairs"]:
        res = pair[0].split()[0]
        counts[res] = counts.get(res, 0) + 1
    parts = [f"{res} {tau:.2f} ({counts.get(res, 0)} subnets)" for res, tau in within.items()]
    return ", ".join(parts) or "(no resolution with 3 subnets)"

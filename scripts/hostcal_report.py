"""Printing for scripts/bench_hostcal.py: error summaries, fitted costs, per-model tables."""

from __future__ import annotations

import dataclasses
from typing import Any

from mcunas.measure.calibrate import error_summary
from mcunas.tflite.reader import read_graph


def err_pct(pred: float, meas: float) -> float:
    """Signed error of a prediction, in percent of the measurement."""
    return (pred / meas - 1.0) * 100.0


def summary_line(label: str, pairs: list[tuple[float, float]]) -> str:
    """One line of error statistics over (predicted, measured) pairs."""
    s = error_summary(pairs)
    if not s["n"]:
        return f"  {label:<34} (no models)"
    return (
        f"  {label:<34} n={s['n']:<3} median |err| {s['median_abs_pct']:5.1f}%  "
        f"within 10% {s['within_10']:4.0%}  within 25% {s['within_25']:4.0%}  "
        f"worst {s['worst_pct']:6.1f}%"
    )


def _variant_table(board: Any, fitted: dict[str, Any], factor: float) -> None:
    from mcunas.cost.latency import resolve

    prior = resolve(board, "reference")
    new = resolve(dataclasses.replace(board, latency=fitted["tables"]), "reference")
    errs = fitted["report"].op_error_pct.get("reference", {})
    print(
        "\nFitted reference-kernel costs on the host (cycles at 1 GHz = ns) vs the default "
        "table x the one factor:"
    )
    print(f"  {'variant':<14} {'default x f':>12} {'fitted':>10} {'ratio':>7} {'op fit |err|':>13}")
    for v in fitted["report"].variants.get("reference", []):
        p = prior.table.mac.get(v, prior.table.mac.get("other", 40.0)) * prior.scale * factor
        f = new.table.mac[v]
        print(
            f"  {v:<14} {p:12.4f} {f:10.4f} {f / p if p else float('nan'):7.2f} "
            f"{errs.get(v, float('nan')):12.1f}%"
        )
    for key in ("requant", "op_overhead", "invoke_overhead"):
        p, f = getattr(prior.table, key) * prior.scale * factor, getattr(new.table, key)
        print(f"  {key:<14} {p:12.1f} {f:10.1f} {f / p if p else float('nan'):7.2f}")


def _breakdown(board: Any, model: Any) -> str:
    """The fitted prediction's top variants by share of the model's time."""
    from mcunas.cost.latency import predict_latency

    est = predict_latency(read_graph(model.model_bytes), board)
    share: dict[str, float] = {}
    for op in est.ops:
        share[op.variant] = share.get(op.variant, 0.0) + op.ms / est.ms
    top = sorted(share.items(), key=lambda kv: -kv[1])[:3]
    return ", ".join(f"{v} {s:.0%}" for v, s in top)


def report(
    board: Any,
    models: list[Any],
    timings: dict[str, Any],
    fitted: dict[str, Any],
    preds: dict[str, dict[str, float]],
    show_all: bool,
) -> None:
    """Print the figures: error summaries, CV, fitted costs, per-model table."""
    factor = preds["factor"]["value"]
    held = _error_summaries(models, timings, fitted, preds)
    cv = fitted["cv"]
    print("\nK-fold cross_validate (5 folds) over the models with op records (single-op suite):")
    print(summary_line("cross_validate", [(p, r.latency_ms) for r, p in cv]))
    cv_worst = sorted(cv, key=lambda rp: -abs(err_pct(rp[1], rp[0].latency_ms)))[:3]
    print("  worst: " + ", ".join(f"{r.id} {err_pct(p, r.latency_ms):+.0f}%" for r, p in cv_worst))
    _variant_table(board, fitted, factor)
    worst = sorted(held, key=lambda m: -abs(err_pct(preds["fit"][m.name], timings[m.name].ms)))
    print(
        "\nWorst 3 held-out after the fit: "
        + ", ".join(
            f"{m.name} {err_pct(preds['fit'][m.name], timings[m.name].ms):+.1f}%" for m in worst[:3]
        )
    )
    _model_table(board, models if show_all else held, timings, fitted, preds)


def _error_summaries(
    models: list[Any],
    timings: dict[str, Any],
    fitted: dict[str, Any],
    preds: dict[str, dict[str, float]],
) -> list[Any]:
    """Whole-model error before and after each fit, by suite; returns the held-out models."""
    factor = preds["factor"]["value"]
    by_kind = {
        k: [m for m in models if m.kind == k and m.name in timings]
        for k in ("single", "block", "real")
    }
    held = by_kind["block"] + by_kind["real"]
    print(
        f"\nWhole-model error (one factor on the default tables: x{factor:.4f}; "
        f"fit scale {fitted['fit'].get('reference', {}).get('scale', 1.0)}):"
    )
    for label, key in (
        ("before: default tables x factor", "before"),
        ("after: kernel_fit.fit_op_tables", "opfit"),
        ("after: board_fit.fit_board (calibrate)", "fit"),
    ):
        print(f" {label}")
        for group, ms in (
            ("single-op suite (fitted on)", by_kind["single"]),
            ("held-out suite blocks", by_kind["block"]),
            ("held-out real models", by_kind["real"]),
            ("HELD-OUT blocks + real", held),
        ):
            pairs = [(preds[key][m.name], timings[m.name].ms) for m in ms]
            print(summary_line(group, pairs))
    return held


def _model_table(
    board: Any,
    rows: list[Any],
    timings: dict[str, Any],
    fitted: dict[str, Any],
    preds: dict[str, dict[str, float]],
) -> None:
    """One line per model: host time, spread, error before and after, top variants."""
    fitted_board = dataclasses.replace(board, latency=fitted["fit"])
    print(
        f"\n  {'model':<30} {'kind':<6} {'host ms':>9} {'spread':>7} {'before':>8} "
        f"{'after':>8}  fitted prediction's top variants"
    )
    for m in rows:
        if m.name not in timings:
            continue
        t = timings[m.name]
        print(
            f"  {m.name[:30]:<30} {m.kind:<6} {t.ms:9.4f} {t.spread_pct:6.1f}% "
            f"{err_pct(preds['before'][m.name], t.ms):+7.1f}% "
            f"{err_pct(preds['fit'][m.name], t.ms):+7.1f}%  {_breakdown(fitted_board, m)}"
        )


def op_report(
    board: Any,
    models: list[Any],
    ops: list[Any],
    timings: dict[str, Any],
    overhead_ms: float,
    fitted: dict[str, Any],
) -> None:
    """Real models op by op: additivity of isolated op times, fitted per-op error by variant."""
    from mcunas.cost.latency import predict_latency

    fitted_board = dataclasses.replace(board, latency=fitted["fit"])
    print(
        "\nReal models op by op (each op timed alone with the model's own tensors; "
        "op time = time - per-invoke overhead):"
    )
    print(f"  {'model':<24} {'ops':>4} {'whole ms':>9} {'overhead + sum of ops':>22} {'gap':>7}")
    by_variant: dict[str, list[tuple[float, float]]] = {}
    for m in models:
        mine = [o for o in ops if o.name.startswith(m.name + "#") and o.name in timings]
        if m.kind != "real" or m.name not in timings or not mine:
            continue
        total = overhead_ms
        for o in mine:
            measured = timings[o.name].ms - overhead_ms
            total += measured
            est = predict_latency(read_graph(o.model_bytes), fitted_board).ops[0]
            if measured > 0 and est.variant != "free":
                by_variant.setdefault(est.variant, []).append((est.ms, measured))
        whole = timings[m.name].ms
        print(
            f"  {m.name[:24]:<24} {len(mine):4d} {whole:9.4f} {total:22.4f} "
            f"{err_pct(total, whole):+6.1f}%"
        )
    print("  fitted per-op prediction of those ops (held out), by variant:")
    everything = [pair for pairs in by_variant.values() for pair in pairs]
    for variant, pairs in sorted(by_variant.items(), key=lambda kv: -sum(m for _, m in kv[1])):
        print(summary_line(f"  {variant}", pairs))
    print(summary_line("  all real-model ops", everything))

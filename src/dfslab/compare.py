"""`dfslab compare A B`: every summary metric both runs measured, B/A with a 95 % interval."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from .analysis import excludes_one, mean_ci95, ratio_ci95
from .labels import SUMMARY_METRICS, params_label, varying_keys
from .results import RunDir


def _groups(rows: list[dict[str, Any]], varying: dict[str, set[str]]) -> dict[tuple, list[float]]:
    groups: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        if r["t"] is None:  # summary rows; per-second samples are not compared
            groups[(r["workload"], params_label(r["params"], varying[r["workload"]]), r["metric"], r["unit"])].append(r["value"])
    return groups


def _pooled(runs: Path | list[Path]) -> list[dict[str, Any]]:
    """Every summary row of one run, or of several runs of the same thing pooled (ABBA orders)."""
    return [row for run in ([runs] if isinstance(runs, Path) else runs) for row in RunDir(run).rows()]


def compare_runs(a: Path | list[Path], b: Path | list[Path]) -> list[dict[str, Any]]:
    rows_a, rows_b = _pooled(a), _pooled(b)
    varying = varying_keys(rows_a + rows_b)
    ga, gb = _groups(rows_a, varying), _groups(rows_b, varying)
    out = []
    for key in sorted(set(ga) & set(gb)):
        ratio, interval = ratio_ci95(ga[key], gb[key])
        workload, params, metric, unit = key
        out.append({"workload": workload, "params": params, "metric": metric, "unit": unit,
                    "mean_a": sum(ga[key]) / len(ga[key]), "mean_b": sum(gb[key]) / len(gb[key]),
                    "n_a": len(ga[key]), "n_b": len(gb[key]), "ratio": ratio,
                    "low": interval[0] if interval else None, "high": interval[1] if interval else None,
                    "significant": excludes_one(interval)})
    return out


def headline(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of the metrics a report's summary shows (bandwidth, IOPS, mean and p99 latency...)."""
    return [r for r in rows if r["metric"] in SUMMARY_METRICS]


def verdict(rows: list[dict[str, Any]]) -> str:
    """How many differences are significant, next to how many chance alone would flag."""
    top = headline(rows)
    tested = [r for r in rows if r["low"] is not None]
    return (f"{sum(r['significant'] for r in top)} of {len(top)} headline metrics and "
            f"{sum(r['significant'] for r in rows)} of {len(rows)} metrics in all differ significantly "
            f"(95 % interval of B/A excludes 1, marked *); with {len(tested)} intervals at 95 %, "
            f"about {len(tested) / 20:.0f} would by chance alone")


# Lower is better for these; higher for every other headline metric (bandwidth, IOPS, ops, qps).
LOWER_IS_BETTER = ("latency", "time")


def rank_settings(groups: dict[str, list[Path]]) -> list[dict[str, Any]]:
    """For each headline metric, the settings (label -> its runs, pooled) from best to worst with
    mean and 95 % interval, and a winner only when the best one's ratio to the runner-up has a
    95 % interval that excludes 1; otherwise no winner (no setting beat the noise)."""
    rows = {label: _pooled(runs) for label, runs in groups.items()}
    varying = varying_keys([r for rs in rows.values() for r in rs])
    return rank({label: _groups(rs, varying) for label, rs in rows.items()})


def rank(grouped: dict[str, dict[tuple, list[float]]]) -> list[dict[str, Any]]:
    """`rank_settings` on values already grouped: {setting: {(workload, params, metric, unit): values}}."""
    labels = list(grouped)
    keys = sorted(set.intersection(*(set(g) for g in grouped.values()))) if grouped else []
    out = []
    for key in keys:
        workload, params, metric, unit = key
        if metric not in SUMMARY_METRICS:
            continue
        lower = metric.startswith(LOWER_IS_BETTER)
        ranked = sorted(labels, key=lambda lab: sum(grouped[lab][key]) / len(grouped[lab][key]), reverse=not lower)
        entries = []
        for lab in ranked:
            mean, half = mean_ci95(grouped[lab][key])
            entries.append({"settings": lab, "mean": mean, "ci95": half, "n": len(grouped[lab][key])})
        winner = effect = None
        if len(ranked) > 1:
            ratio, interval = ratio_ci95(grouped[ranked[1]][key], grouped[ranked[0]][key])  # best / runner-up
            if excludes_one(interval):
                winner, effect = ranked[0], ratio
        out.append({"workload": workload, "params": params, "metric": metric, "unit": unit, "ranking": entries,
                    "winner": winner, "best_over_runner_up": effect})
    return out

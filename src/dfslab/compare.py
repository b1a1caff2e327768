"""`dfslab compare A B`: every summary metric both runs measured, B/A with a 95 % interval."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from .analysis import ratio_ci95
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
                    "significant": bool(interval and (interval[0] > 1 or interval[1] < 1))})
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

"""`dfslab compare A B`: every summary metric both runs measured, B/A with a 95 % interval."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from .analysis import excludes_one, mean_ci95, ratio_ci95, run_means
from .labels import SUMMARY_METRICS, params_label, varying_keys
from .results import RunDir


def _groups(rows: list[dict[str, Any]], varying: dict[str, set[str]]) -> dict[tuple, list[float]]:
    groups: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        if r["t"] is None:  # summary rows; per-second samples are not compared
            groups[(r["workload"], params_label(r["params"], varying[r["workload"]]), r["metric"], r["unit"])].append(r["value"])
    return groups


def _run_rows(runs: Path | list[Path]) -> list[list[dict[str, Any]]]:
    """The summary rows of each run: one run, or several runs of the same thing (ABBA orders)."""
    return [RunDir(run).rows() for run in ([runs] if isinstance(runs, Path) else runs)]


def _per_run(run_rows: list[list[dict[str, Any]]], varying: dict[str, set[str]]) -> dict[tuple, list[list[float]]]:
    """Per metric, each run's repetitions (a list per run that measured it)."""
    out: dict[tuple, list[list[float]]] = defaultdict(list)
    for rows in run_rows:
        for key, values in _groups(rows, varying).items():
            out[key].append(values)
    return out


def _flat(runs: list[list[float]]) -> list[float]:
    """Every repetition of every run, one list."""
    return [v for run in runs for v in run]


def _side(runs: list[list[float]], over_runs: bool) -> list[float]:
    """What an interval counts: each run's geometric mean when both sides have 2 or more runs,
    else the repetitions of the one run (which cannot see run-to-run variation)."""
    return run_means(runs) if over_runs else _flat(runs)


def compare_runs(a: Path | list[Path], b: Path | list[Path]) -> list[dict[str, Any]]:
    rows_a, rows_b = _run_rows(a), _run_rows(b)
    varying = varying_keys([r for rows in rows_a + rows_b for r in rows])
    ga, gb = _per_run(rows_a, varying), _per_run(rows_b, varying)
    out = []
    for key in sorted(set(ga) & set(gb)):
        flat_a, flat_b = _flat(ga[key]), _flat(gb[key])
        ratio, interval = ratio_ci95(flat_a, flat_b)
        over_runs = len(ga[key]) >= 2 and len(gb[key]) >= 2
        if over_runs:
            interval = ratio_ci95(run_means(ga[key]), run_means(gb[key]))[1]
        workload, params, metric, unit = key
        out.append({"workload": workload, "params": params, "metric": metric, "unit": unit,
                    "mean_a": sum(flat_a) / len(flat_a), "mean_b": sum(flat_b) / len(flat_b),
                    "n_a": len(flat_a), "n_b": len(flat_b), "runs_a": len(ga[key]), "runs_b": len(gb[key]),
                    "over": "runs" if over_runs else "repetitions", "ratio": ratio,
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
            f"about {len(tested) / 20:.0f} would by chance alone; {_unit(tested)}")


def _unit(tested: list[dict[str, Any]]) -> str:
    """What the intervals counted, so a reader knows what they can see."""
    if tested and all(r.get("over") == "runs" for r in tested):
        runs = sorted({(r["runs_a"], r["runs_b"]) for r in tested})
        sides = ", ".join(f"{a} and {b}" for a, b in runs)
        return f"intervals over runs ({sides} per side, each run its repetitions' geometric mean)"
    return ("intervals over the repetitions of one run per side: they do not see run-to-run variation, "
            "which on a shared machine can be larger (compare several runs per side, e.g. runtimes: [a, b, b, a])")


# Lower is better for these; higher for every other headline metric (bandwidth, IOPS, ops, qps).
LOWER_IS_BETTER = ("latency", "time")


def rank_settings(groups: dict[str, list[Path]]) -> list[dict[str, Any]]:
    """For each headline metric, the settings (label -> its runs) from best to worst with mean and
    95 % interval (over runs when every setting has 2 or more, see `_side`), and a winner only
    when the best one's ratio to the runner-up has a 95 % interval that excludes 1; otherwise no
    winner (no setting beat the noise)."""
    rows = {label: _run_rows(runs) for label, runs in groups.items()}
    varying = varying_keys([r for runs in rows.values() for rs in runs for r in rs])
    per_run = {label: _per_run(runs, varying) for label, runs in rows.items()}
    over_runs = all(len(runs) >= 2 for runs in groups.values())
    return rank({label: {key: _side(values, over_runs) for key, values in g.items()} for label, g in per_run.items()})


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

"""`dfslab compare A B`: every metric both sides measured, B/A with a 95 % interval and a verdict
(different / same within a margin / can't tell, see dfslab.ratios), a regression gate, and the
ranking of swept settings, all counting runs the same way."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scipy import special

from .analysis import mean_ci95
from .ledger import FROM_STORAGE_FLOOR
from .labels import SUMMARY_METRICS, params_label, varying_keys
from .ratios import ALPHA, geometric_mean, ratio_test, run_values
from .results import RunDir
from .workloads import MIN_PHASE_SECONDS


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


def storage_share(grouped: dict[tuple, list[list[float]]], key: tuple) -> float | None:
    """The byte ledger's `from_storage` of the step a metric came from (its mean over runs and
    repetitions), None where it was not counted."""
    values = [v for run in grouped.get((key[0], key[1], "from_storage", "ratio"), []) for v in run]
    return sum(values) / len(values) if values else None


def not_from_storage(shares: dict[str, float | None]) -> list[str]:
    """The sides (or settings) whose value came less than FROM_STORAGE_FLOOR from the storage:
    a cache's number, which a comparison or ranking must carry marked."""
    return [side for side, share in shares.items() if share is not None and share < FROM_STORAGE_FLOOR]


def compare_runs(a: Path | list[Path], b: Path | list[Path], margin: float = 0.10,
                 alpha: float = ALPHA) -> list[dict[str, Any]]:
    """Every metric both sides measured: B/A with its interval and verdict (see dfslab.ratios:
    over runs where a side has 2 or more, within one run otherwise), and each side's byte-ledger
    share (`from_storage_a/b`, `not_from_storage`: the sides under the floor)."""
    rows_a, rows_b = _run_rows(a), _run_rows(b)
    varying = varying_keys([r for rows in rows_a + rows_b for r in rows])
    ga, gb = _per_run(rows_a, varying), _per_run(rows_b, varying)
    rounds = made_in_rounds(a, b)
    out = []
    for key in sorted(set(ga) & set(gb)):
        # paired only where every run of both sides measured the metric (run i of each is round i)
        test = ratio_test(ga[key], gb[key], margin, alpha, rounds and len(ga[key]) == len(gb[key]) == len(rows_a))
        workload, params, metric, unit = key
        shares = {"A": storage_share(ga, key), "B": storage_share(gb, key)}
        out.append({"workload": workload, "params": params, "metric": metric, "unit": unit,
                    "too_short": too_short(ga, key) or too_short(gb, key),
                    "mean_a": _centre(ga[key]), "mean_b": _centre(gb[key]),
                    "from_storage_a": shares["A"], "from_storage_b": shares["B"],
                    "not_from_storage": not_from_storage(shares),
                    "reps_a": sum(map(len, ga[key])), "reps_b": sum(map(len, gb[key])),
                    "runs_a": len(ga[key]), "runs_b": len(gb[key]), **test.fields()})
    return out


def made_in_rounds(a: Path | list[Path], b: Path | list[Path]) -> bool:
    """Whether run i of A and run i of B were made in round i: as many runs a side (2 or more),
    and every run of round i started after both runs of round i - 1 (`runs:` and
    `--until-decided` run A B, then B A, ...). Runs listed by hand in another order are not paired."""
    if isinstance(a, Path) or isinstance(b, Path) or len(a) != len(b) or len(a) < 2:
        return False
    started = [(RunDir(x).read_json("provenance.json").get("start"), RunDir(y).read_json("provenance.json").get("start"))
               for x, y in zip(a, b)]
    if any(t is None for pair in started for t in pair):
        return False
    return all(min(now) > max(before) for before, now in zip(started, started[1:]))


def _centre(runs: list[list[float]]) -> float:
    """A side's value as its ratio counts it: the geometric mean of its runs' geometric means
    (the arithmetic mean where a value is 0 or below, which has no ratio)."""
    values = [v for run in runs for v in run]
    return geometric_mean(run_values(runs)) if min(values) > 0 else sum(values) / len(values)


def too_short(grouped: dict[tuple, list[list[float]]], key: tuple) -> bool:
    """Whether the phase a metric came from was timed under MIN_PHASE_SECONDS in any repetition of
    any run: a burst of a few I/Os (its p99 is its maximum), no headline of a comparison."""
    durations = [v for run in grouped.get((key[0], key[1], "duration", "s"), []) for v in run]
    return bool(durations) and min(durations) < MIN_PHASE_SECONDS


def headline(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of the metrics a report's summary shows (bandwidth, IOPS, mean and p99 latency...),
    but for phases too short to time (they stay in `--all`)."""
    return [r for r in rows if r["metric"] in SUMMARY_METRICS and not r.get("too_short")]


def verdict(rows: list[dict[str, Any]], margin: float = 0.10) -> str:
    """The verdicts counted over the headline metrics, and what the intervals counted."""
    top = headline(rows) or rows
    different, same, unsure = (sum(r["verdict"] == v for r in top) for v in ("different", "same", "can't tell"))
    over_runs = [r for r in top if r["over"] == "runs"]
    short = sum(1 for r in rows if r["metric"] in SUMMARY_METRICS and r.get("too_short"))
    text = (f"of {len(top)} headline metrics: {different} different (95 % interval of B/A excludes 1, *), "
            f"{same} the same within ±{margin * 100:g} % (=), {unsure} can't tell"
            + (f" ({short} more of phases timed under {MIN_PHASE_SECONDS:g} s left out: too short to time)" if short else ""))
    if not over_runs:
        return text + ("; one run per side: intervals are within one run and cannot see run-to-run variation, so "
                       "no difference is claimed (compare 2 or more runs per side: dfslab run EXP --runs 3)") + cached_note(top)
    sides = ", ".join(sorted({f"{r['runs_a']} and {r['runs_b']}" for r in over_runs}))
    needed = [r["runs_needed"] for r in top if r["runs_needed"]]
    more = f"; about {max(needed)} runs per side would decide every can't tell" if needed else ""
    return text + f"; tested over runs ({sides} runs per side, each run its repetitions' geometric mean){more}" + cached_note(top)


def cached_note(rows: list[dict[str, Any]]) -> str:
    """What a verdict must say of the rows a cache served on either side (byte ledger)."""
    cached = [r for r in rows if r.get("not_from_storage")]
    if not cached:
        return ""
    return (f"; {len(cached)} of them not from the storage on side {'/'.join(sorted({s for r in cached for s in r['not_from_storage']}))} "
            f"(the clients' links carried under {FROM_STORAGE_FLOOR:g} of the bytes the tool counted: a cache's number, "
            f"marked 'not from the storage')")


GATE_ALPHA = 0.05  # the gate's family-wise error: a comparison with no such regression fails at most this often


@dataclass
class Gate:
    """`--fail-if-worse`: which headline metrics it could test (over runs), which it could not, and
    the ones shown worse by more than the threshold, each with its one-sided p-value."""
    worse_by: float
    tested: list[dict[str, Any]] = field(default_factory=list)
    untested: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)


def gate(rows: list[dict[str, Any]], worse_by: float, alpha: float = GATE_ALPHA) -> Gate:
    """Fail the headline metrics that runs show worse than A by more than `worse_by` (0.05: 5 %) in
    the metric's own direction (bandwidth or IOPS down, latency or time up), holding the chance of
    failing a comparison with no such regression to `alpha` over all of them (Holm's step-down on
    the one-sided t-tests of log(B/A) against the threshold: it holds the family-wise error under
    any dependence between metrics, and at 57 metrics 28 % of null comparisons once failed a gate
    without it). Only intervals over runs are tested: within one run they cannot see run-to-run
    variation; metrics with no such interval are `untested`, never passed."""
    result = Gate(worse_by)
    bound = math.log1p(worse_by)
    for r in headline(rows):
        if r.get("over") != "runs" or not r.get("se"):
            result.untested.append(r)
            continue
        if lower_is_better(r["metric"]):  # worse: log(B/A) above +bound
            p = float(special.stdtr(r["df"], -(r["log_ratio"] - bound) / r["se"]))  # t's upper tail
        else:  # worse: log(B/A) below -bound
            p = float(special.stdtr(r["df"], (r["log_ratio"] + bound) / r["se"]))  # t's lower tail (t.cdf)
        result.tested.append({**r, "p_worse": p})
    ordered = sorted(result.tested, key=lambda r: r["p_worse"])
    for k, r in enumerate(ordered):  # Holm: the k-th smallest p against alpha / (m - k)
        if r["p_worse"] > alpha / (len(ordered) - k):
            break
        result.failed.append(r)
    return result


# Lower is better for these; higher for every other headline metric (bandwidth, IOPS, ops, qps).
LOWER_IS_BETTER = ("latency", "time")


def lower_is_better(metric: str) -> bool:
    return metric.startswith(LOWER_IS_BETTER)


def rank_settings(groups: dict[str, list[Path]]) -> list[dict[str, Any]]:
    """For each headline metric, the settings (label -> its runs) from best to worst, and a
    winner only when best / runner-up is "different" by `ratio_test`: over runs, so one run per
    setting names no winner (with a run effect, one run per setting gave 19-36 % false winners)."""
    rows = {label: _run_rows(runs) for label, runs in groups.items()}
    varying = varying_keys([r for runs in rows.values() for rs in runs for r in rs])
    return rank({label: _per_run(runs, varying) for label, runs in rows.items()})


def rank(grouped: dict[str, dict[tuple, list[list[float]]]]) -> list[dict[str, Any]]:
    """`rank_settings` on values already grouped: {setting: {(workload, params, metric, unit): runs}},
    each run a list of repetitions."""
    labels = list(grouped)
    keys = sorted(set.intersection(*(set(g) for g in grouped.values()))) if grouped else []
    out = []
    for key in keys:
        workload, params, metric, unit = key
        if metric not in SUMMARY_METRICS:
            continue
        ranked = sorted(labels, key=lambda lab: _centre(grouped[lab][key]), reverse=not lower_is_better(metric))
        entries = [{**_entry(lab, grouped[lab][key]), "from_storage": storage_share(grouped[lab], key)} for lab in ranked]
        winner = effect = None
        why = "one setting"
        if len(ranked) > 1:
            test = ratio_test(grouped[ranked[1]][key], grouped[ranked[0]][key])  # best / runner-up
            why = test.why
            if test.verdict == "different":
                winner, effect = ranked[0], test.ratio
        out.append({"workload": workload, "params": params, "metric": metric, "unit": unit, "ranking": entries,
                    "winner": winner, "best_over_runner_up": effect, "why": why,
                    "not_from_storage": not_from_storage({e["settings"]: e["from_storage"] for e in entries})})
    return out


def _entry(label: str, runs: list[list[float]]) -> dict[str, Any]:
    """A setting's mean and 95 % half-width: over its runs' values when it has 2 or more runs,
    else over the repetitions of its one run (labelled so)."""
    over_runs = len(runs) >= 2
    values = run_values(runs) if over_runs and min(min(r) for r in runs) > 0 else [v for r in runs for v in r]
    mean, half = mean_ci95(values)
    return {"settings": label, "mean": mean, "ci95": half, "n": len(values),
            "over": "runs" if over_runs else "repetitions of one run"}

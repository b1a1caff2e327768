"""Campaigns: one experiment run many times (`--runs`, `runtimes:`, swept cluster settings,
`--until-decided`), interleaved so that drift over time cancels, and the runs compared with
verdicts (comparison.json and the report of each later side). Each run is `run.run_experiment`;
this module decides which runs, in what order, and what they add up to.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import cluster, report
from .backends import Progress, backend_class
from .compare import compare_runs, rank_settings
from .experiment import Experiment
from .phases import RunOutcome
from .run import run_experiment
from .results import RunDir
from .sequential import FIRST_LOOK, Decisions, look_alphas, look_rounds, looks, looks_text, planned_rounds
from .spec import ClusterSpec, SpecError
from .units import clock_text


def interleaved(order: list[Any], runs: int) -> list[Any]:
    """`order` `runs` times, every other time backwards (A B, B A, A B...): a drift over the
    whole session (the machine warming, its page cache filling) falls on every side alike."""
    return [item for i in range(runs) for item in (order if i % 2 == 0 else order[::-1])]


def runtime_order(exp: Experiment) -> list[str]:
    return interleaved(list(exp.file.runtimes), exp.file.runs)


def settings_order(exp: Experiment) -> list[Any]:
    return interleaved(exp.variants + (exp.variants[::-1] if exp.file.mirrored else []), exp.file.runs)


def run_repeated(exp: Experiment, progress: Progress, runs_root: Path | None = None) -> list[RunOutcome]:
    """`runs: N` with nothing swept: N runs of the experiment, each on a fresh cluster, to compare
    as one side with several runs (dfslab compare runs/a1,runs/a2,runs/a3 runs/b1,...)."""
    outcomes = []
    for i in range(1, exp.file.runs + 1):
        progress("run", f"run {i}/{exp.file.runs} of the experiment")
        outcomes.append(run_experiment(exp, progress, runs_root=runs_root, label=f"{exp.name}-run{i}"))
    return outcomes


def run_across_runtimes(exp: Experiment, progress: Progress, runs_root: Path | None = None) -> list[RunOutcome]:
    """The experiment once per entry of `runtimes:`, in that order, each on a fresh cluster. The
    runs of each later runtime are compared with the first runtime's (runs of one runtime pooled,
    so [local, docker, docker, local] cancels a drift over time): the last run of each gets
    comparison.json (B/A per metric, 95 % intervals) and a report section on significance."""
    return _run_across(exp, [(rt, exp.on_runtime(rt), None) for rt in runtime_order(exp)], "runtime", progress, runs_root)


def run_across_settings(exp: Experiment, progress: Progress, runs_root: Path | None = None) -> list[RunOutcome]:
    """The experiment once per combination of the cluster's swept settings, each on a fresh
    cluster (forward, then backward too with `mirrored: true`), each compared with the first."""
    return _run_across(exp, [(v.label, _with_settings(exp, v), v.settings) for v in settings_order(exp)],
                       "settings", progress, runs_root)


def _with_settings(exp: Experiment, variant: Any) -> Experiment:
    """The experiment on one combination of its cluster's swept settings."""
    return replace(exp, cluster=variant.cluster, variants=[])


def _write_comparison(what: str, base: str, label: str, runs_a: list[Path], runs_b: list[Path],
                      rows: list[dict[str, Any]], **extra: Any) -> None:
    """comparison.json (B = `label`'s runs against A = `base`'s) in B's last run, and its report again."""
    RunDir(runs_b[-1]).write_json("comparison.json", {
        "what": what, "baseline_runtime": base, "baseline_runs": [p.name for p in runs_a],
        "runtime": label, "runs": [p.name for p in runs_b], **extra, "rows": rows})
    report.build(runs_b[-1])


def decision_sides(exp: Experiment) -> list[tuple[str, Experiment]]:
    """The sides `--until-decided` adds runs to, each compared with the first: the runtimes of
    `runtimes:`, or the values of the cluster's swept settings (each run on a fresh cluster);
    an experiment with one side is refused, saying what it takes."""
    if len(exp.file.runtimes) >= 2:
        return [(rt, exp.on_runtime(rt)) for rt in exp.file.runtimes]
    if len(exp.variants) >= 2 and not exp.file.runtimes:
        return [(v.label, _with_settings(exp, v)) for v in exp.variants]
    raise SpecError([("runtimes", "--until-decided compares two sides or more: list two runtimes (runtimes: "
                                  "[local, docker]) or sweep a setting of the cluster over two values (a list of two "
                                  "at its path in the cluster spec)")], exp.name)


@dataclass
class UntilDecided:
    """What `run_until_decided` made: its runs, the last look's rows of every side (each with its
    side and decided_at), and the looks it made ("looks after rounds 4 and 8 at ...")."""
    outcomes: list[RunOutcome]
    rows: list[dict[str, Any]]
    looks: str


def side_kind(exp: Experiment) -> str:
    """What `decision_sides` compares, as a comparison's heading says it: "runtime" or "settings"."""
    return "runtime" if len(exp.file.runtimes) >= 2 else "settings"


def run_until_decided(exp: Experiment, progress: Progress, budget: float, max_runs: int,
                      runs_root: Path | None = None) -> UntilDecided:
    """Runs of every side in rounds (forward, then backward: A B B A), as many rounds as the
    budget allows at the first round's pace (at most `max_runs`), every headline metric of every
    side against the first tested half way and at the last round (sequential.py: the two looks
    share the error), stopping early once every one is decided, or before a round that would pass
    `budget` seconds (the last look made there). Each later side's last run gets comparison.json
    and its report."""
    sides = decision_sides(exp)
    base = sides[0][0]
    decisions: dict[str, Decisions] = {}
    paths: dict[str, list[Path]] = {label: [] for label, _ in sides}
    outcomes: list[RunOutcome] = []
    last: dict[str, list[dict[str, Any]]] = {}
    started, round_took, planned, looked, schedule = time.monotonic(), 0.0, max_runs, 0, []
    for n in range(1, max_runs + 1):
        if n > planned:
            break
        round_start = time.monotonic()
        for label, variant in (sides if n % 2 else sides[::-1]):
            progress(f"run {n}", f"{label}: run {n} of {planned} planned per side" if n > 1 else
                     f"{label}: run 1 (its round's time plans the rest: the budget's rounds, at most {max_runs})")
            outcomes.append(run_experiment(variant, progress, runs_root=runs_root, label=f"{exp.name}-{label}"))
            paths[label].append(outcomes[-1].path)
        round_took = time.monotonic() - round_start
        if n == 1:
            planned = planned_rounds(budget, round_took, max_runs)
            decisions = {label: Decisions(planned) for label, _ in sides[1:]}
            schedule = look_rounds(planned)  # every side's looks are the same
            progress("plan", f"{planned} rounds per side fit the budget at {clock_text(round_took)} a round (at most "
                             f"{max_runs}): {looks_text(list(zip(schedule, look_alphas(planned))))}, planned")
            continue
        stopping = n >= FIRST_LOOK and n < planned and time.monotonic() - started + round_took > budget
        if stopping:
            progress("warning", f"budget: the next round would pass {clock_text(budget)}; stopping at {n} runs per "
                                f"side, the last look made now")
        if n not in schedule and not stopping:
            continue
        left, looked = 0, n
        for label, decided in decisions.items():
            alpha = decided.alpha_at(n, last=stopping)
            last[label] = compare_runs(paths[base], paths[label], alpha=alpha)
            left += len(decided.look(last[label], n, alpha))
        progress("decided", f"{sum(len(d.decided) for d in decisions.values())} headline metrics decided, {left} not, "
                            f"after {n} runs per side")
        if not left or stopping:
            break
    rows, levels = [], []
    for label, decided in decisions.items():
        if label not in last:
            continue
        final = [{**r, "side": label} for r in decided.final_rows(last[label])]
        levels = decided.levels
        _write_comparison(side_kind(exp), base, label, paths[base], paths[label], final,
                          sequential={"max_runs": max_runs, "planned_rounds": planned, "look_rounds": decided.schedule,
                                      "looks": looks(planned), "levels": decided.levels, "last_look": looked,
                                      "text": looks_text(decided.levels)})
        rows += final
    return UntilDecided(outcomes, rows, looks_text(levels) if levels else "no look made")


def _run_across(exp: Experiment, plan: list[tuple[str, Experiment, dict | None]], what: str, progress: Progress,
                runs_root: Path | None) -> list[RunOutcome]:
    outcomes = []
    if what == "settings":
        outcomes = _run_settings(exp, plan, progress, runs_root)
    for i, (label, variant, settings) in enumerate(plan if what == "runtime" else [], 1):
        progress(f"{what} {label}", f"run {i}/{len(plan)} of the experiment, {what} {label}")
        outcomes.append(run_experiment(variant, progress, runs_root=runs_root, label=f"{exp.name}-{label}"))
    if what == "settings" and outcomes:
        by_label: dict[str, list[Path]] = {}
        for (label, _, _), outcome in zip(plan, outcomes):
            by_label.setdefault(label, []).append(outcome.path)
        RunDir(outcomes[-1].path).write_json("settings.json", {"runs": {k: [p.name for p in v] for k, v in by_label.items()},
                                                               "settings": {label: s for label, _, s in plan},
                                                               "ranking": rank_settings(by_label)})
    for base, label, runs_a, runs_b in runtime_pairs([p[0] for p in plan], [o.path for o in outcomes]):
        _write_comparison(what, base, label, runs_a, runs_b, compare_runs(runs_a, runs_b))
    return outcomes


def _run_settings(exp: Experiment, plan: list[tuple[str, Experiment, dict | None]], progress: Progress,
                  runs_root: Path | None, live: bool = True) -> list[RunOutcome]:
    """Each combination on the cluster of the one before, changed in place where the filesystem
    can (Ceph options it updates at run time), else on a fresh cluster; provenance says which."""
    outcomes = []
    with SettingsCluster(exp.cluster.name, progress, live) as switcher:
        for i, (label, variant, settings) in enumerate(plan, 1):
            progress("settings", f"run {i}/{len(plan)} of the experiment: {label}")
            how = switcher.use(variant.cluster)
            outcomes.append(run_experiment(variant, progress, cluster_name=switcher.name, runs_root=runs_root,
                                           settings={**(settings or {}), "applied": how}, label=f"{exp.name}-v{i}"))
    return outcomes


class SettingsCluster:
    """One cluster that moves from setting to setting: changed in place where the filesystem or
    runtime can (`live`), else replaced by a fresh one; removed at the end."""

    def __init__(self, name: str, progress: Progress, live: bool = True):
        self.name, self.progress, self.live, self.up = name, progress, live, False

    def use(self, spec: ClusterSpec) -> str:
        """Make the cluster `spec`; say how ("fresh cluster", "changed in place: ...", "unchanged")."""
        if self.up:
            applied = cluster.apply_live(self.name, spec) if self.live else None
            if applied is not None:
                return "changed in place: " + "; ".join(applied) if applied else "unchanged"
            cluster.down(self.name)
            self.up = False
        cluster.up(spec, self.progress)
        self.up = True
        return "fresh cluster"

    def __enter__(self) -> "SettingsCluster":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.up:
            self.progress("tearing down", self.name)
            cluster.down(self.name, missing_ok=True)
            self.up = False


def provenance_changes(original: Path, spec: ClusterSpec) -> list[str]:
    """What differs between a stored run's provenance and this machine now (a re-run's caveats)."""
    import platform

    from . import __version__
    before = RunDir(original).read_json("provenance.json")
    now = {"dfslab version": __version__, "kernel": platform.release(), **backend_class(spec).versions(spec)}
    then = {"dfslab version": before.get("dfslab_version"), "kernel": before.get("kernel"),
            **before.get("filesystem_versions", {})}
    return [f"{key}: {then.get(key)} then, {value} now" for key, value in now.items() if then.get(key) != value]


def runtime_pairs(runtimes: list[str], paths: list[Path]) -> list[tuple[str, str, list[Path], list[Path]]]:
    """(first runtime, other runtime, the first's runs, the other's runs) for each other runtime."""
    by_runtime: dict[str, list[Path]] = {}
    for runtime, path in zip(runtimes, paths):
        by_runtime.setdefault(runtime, []).append(path)
    base = runtimes[0]
    return [(base, rt, by_runtime[base], runs) for rt, runs in by_runtime.items() if rt != base]

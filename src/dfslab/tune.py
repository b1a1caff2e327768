"""`dfslab tune`: search an experiment's swept cluster settings for the one that maximizes (or
minimizes) one metric of one workload step, within a time budget, then measure the winner again
beside the default configuration, in interleaved runs (default, best, best, default), and compare
the two over runs with a 95 % interval.

Optuna runs the search (a maintained library: its SuccessiveHalvingPruner is asynchronous
successive halving, its GridSampler walks a small space once and its TPE sampler searches spaces
larger than the budget; an optimiser is easy to get subtly wrong by hand). A trial is one
combination of settings; its resource is repetitions of the objective step: after each one the
running mean is reported, and the pruner stops the setting when it is not in the best 1/η of the
settings that reached that many repetitions. The setting is applied in place where the cluster
can change live (Ceph run-time options, GlusterFS volume options, link caps), else on a fresh
cluster. The best of several noisy means is biased upwards (it won partly by luck), so the winner
is measured afresh beside the default before anything is claimed about it.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from . import report
from .backends import Progress
from .compare import compare_runs
from .experiment import Experiment, Step, cluster_axes, set_at, parse_experiment
from .ratios import ratio_test
from .results import RunDir
from .campaign import SettingsCluster
from .run import run_experiment
from .spec import SpecError, parse_spec, read_yaml
from .workloads import Measurement, current_name

FRESH_CLUSTER_GUESS = 60.0  # seconds to bring a cluster up on a runtime run --dry-run has no figure for
GRID_LIMIT = 64  # up to this many combinations the grid is walked; beyond, TPE samples it

# The default and the best measured afresh as runs, interleaved (a drift over them cancels), so
# the confirmation is tested over runs: one run each could not see run-to-run variation.
CONFIRMATION = ("default", "best", "best", "default")


class TuneError(ValueError):
    """The tuning cannot go on (a metric that is not measured, a budget too small)."""


@dataclass
class Objective:
    """What to optimize: `WORKLOAD [PARAM=VALUE ...] METRIC`, e.g. "fio bs=4KiB rw=randwrite iops"."""

    text: str
    workload: str
    filters: dict[str, Any]
    metric: str
    maximize: bool

    @classmethod
    def parse(cls, text: str, maximize: bool) -> "Objective":
        flag = "--maximize" if maximize else "--minimize"
        words = text.split()
        if len(words) < 2 or any("=" not in w for w in words[1:-1]) or "=" in words[-1] or "=" in words[0]:
            raise SpecError([(flag, f"{text!r}: write WORKLOAD [PARAM=VALUE ...] METRIC, e.g. "
                                    "\"fio bs=4KiB rw=randwrite iops\" or \"radosbench mode=write bandwidth\"")])
        # values read as YAML reads them in an experiment (4096 a number, 4KiB a size, true a bool)
        filters = {k: yaml.safe_load(v) for k, v in (w.split("=", 1) for w in words[1:-1])}
        return cls(text, current_name(words[0]), filters, words[-1], maximize)

    @property
    def flag(self) -> str:
        return "--maximize" if self.maximize else "--minimize"

    def _normalized(self, step: Step, key: str, value: str) -> Any:
        """`value` as the step's workload reads it (4KiB -> 4096); the text when it is no parameter."""
        fields = step.workload.Params.model_fields
        if key not in fields or "list" in str(fields[key].annotation):
            return value
        try:
            return getattr(step.workload.Params.model_validate({**step.given, key: value}), key)
        except ValidationError as exc:
            raise SpecError([(self.flag, f"{key}={value} is not a valid {step.workload.name} {key}: "
                                         f"{exc.errors()[0]['msg']}")]) from None

    def matches_step(self, step: Step) -> bool:
        if step.workload.name != self.workload:
            return False
        fields = step.workload.Params.model_fields
        return all(getattr(step.params, k) == self._normalized(step, k, v) for k, v in self.filters.items()
                   if k in fields and "list" not in str(fields[k].annotation))

    def step_of(self, exp: Experiment) -> Step:
        steps = [s for s in exp.steps if self.matches_step(s)]
        if len(steps) != 1:
            listing = "; ".join(s.label for s in exp.steps)
            raise SpecError([(self.flag, f"{self.text!r} matches {len(steps)} of the experiment's workload steps, "
                                         f"it must match one (add PARAM=VALUE): the steps are {listing}")])
        return steps[0]

    def value(self, step: Step, rows: list[Measurement]) -> float:
        """The objective's value in one repetition's rows."""
        def fits(row: Measurement) -> bool:
            return all(str(row.params[k]) in (str(v), str(self._normalized(step, k, v)))
                       for k, v in self.filters.items() if k in row.params)
        picked = [r for r in rows if r.t is None and r.metric == self.metric and fits(r)]
        if len(picked) != 1:
            metrics = sorted({r.metric for r in rows if r.t is None})
            raise TuneError(f"{self.flag} {self.text!r}: {len(picked)} measurement(s) of {step.label} match, "
                            f"one must; its metrics are {', '.join(metrics)}"
                            + ("; narrow it with PARAM=VALUE" if len(picked) > 1 else ""))
        return picked[0].value


@dataclass
class Trial:
    number: int
    settings: dict[str, Any]
    values: list[float] = field(default_factory=list)
    state: str = "running"
    run: str = ""
    applied: str = ""
    seconds: float = 0.0

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.values) if self.values else None


def _without(data: dict[str, Any], path: tuple) -> dict[str, Any]:
    out = dict(data)
    if len(path) == 1:
        out.pop(path[0], None)
    else:
        out[path[0]] = _without(out[path[0]], path[1:])
    return out


def default_settings(data: dict[str, Any], axes: list[tuple[tuple, list]], source: str) -> tuple[dict[str, Any], dict]:
    """The default configuration: each swept path as if it were not written (dfslab's or the
    filesystem's default), or its first value where the spec needs one. ({path: shown}, data)."""
    shown, out = {}, data
    for path, values in axes:
        trial = _without(out, path)
        try:
            parse_spec(_fixed(trial, axes, path), source)
            out, shown[".".join(path)] = trial, "default"
        except SpecError:
            out = set_at(out, path, values[0])
            shown[".".join(path)] = values[0]
    return shown, out


def _fixed(data: dict[str, Any], axes: list[tuple[tuple, list]], skip: tuple) -> dict[str, Any]:
    """`data` with every other axis still a list pinned to its first value (to validate one path)."""
    for path, values in axes:
        if path == skip:
            continue
        node = data
        for key in path[:-1]:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict) and node.get(path[-1]) == values:
            data = set_at(data, path, values[0])
    return data


def _trial_experiment(exp: Experiment, step: Step, cluster: dict[str, Any], reps: int, base_dir: Path,
                      source: str) -> Experiment:
    """The experiment a trial runs: the objective step alone, `reps` times, on one setting."""
    raw = {k: v for k, v in exp.raw.items() if k not in ("faults", "runtimes", "mirrored", "time_budget", "integrity")}
    raw.update(cluster=cluster, workloads=[{"type": step.workload.name, **step.given}], repetitions=reps,
               baselines={"network": False, "disk": False})
    return parse_experiment(raw, base_dir, source)


@dataclass
class TuneOutcome:
    best: Trial
    default: dict[str, Any]
    trials: list[Trial]
    run: Path  # the winner's confirmation run: report, tune.json, best-spec.yaml
    confirmation: dict[str, Any]  # best / default of the objective, 95 % interval
    failures: list[str]


@dataclass
class _Search:
    """What the tuning works with: the experiment, its axes and the clock."""

    exp: Experiment
    step: Step
    objective: Objective
    data: dict[str, Any]  # the cluster mapping as written, axes and all
    axes: list[tuple[tuple, list]]
    reps: int
    budget: float
    source: str
    base_dir: Path
    runs_root: Path | None
    start: float = field(default_factory=time.monotonic)
    fresh: list[float] = field(default_factory=list)  # seconds each fresh cluster took to come up

    @property
    def rep_cost(self) -> float:
        return self.step.workload.estimate(self.step.params) * 1.2 + 2

    @property
    def deploy_guess(self) -> float:
        """What `run --dry-run` expects a deploy on this runtime to take."""
        from .dryrun import deploy_seconds
        return deploy_seconds(self.exp.cluster)

    def setting_cost(self) -> float:
        """A setting's repetitions and, at most, a fresh cluster: the slowest one timed so far, or
        the deploy guess until one is."""
        return self.reps * self.rep_cost + (max(self.fresh) if self.fresh else self.deploy_guess)

    def left(self) -> float:
        return self.budget - (time.monotonic() - self.start)

    def cluster_with(self, settings: dict[str, Any]) -> dict[str, Any]:
        out = self.data
        for (path, _), value in zip(self.axes, settings.values()):
            out = set_at(out, path, value)
        return out

    def measure(self, switcher: SettingsCluster, progress: Progress, cluster_data: dict[str, Any], label: str,
                settings: dict[str, Any], report_to: Any = None) -> tuple[list[float], Any, str, float]:
        """The objective step on one setting: (values, the run's outcome, how it was applied, seconds).
        `report_to` (an Optuna trial) hears each repetition and may stop the rest."""
        trial_exp = _trial_experiment(self.exp, self.step, cluster_data, self.reps, self.base_dir, self.source)
        values: list[float] = []

        def after_rep(s: Step, rep: int, rows: list[Measurement]) -> bool:
            return heard(values, self.objective.value(s, rows), report_to)

        t0 = time.monotonic()
        applied = switcher.use(trial_exp.cluster)
        if applied == "fresh cluster":
            self.fresh.append(time.monotonic() - t0)
        outcome = run_experiment(trial_exp, progress, cluster_name=switcher.name, runs_root=self.runs_root,
                                 label=f"{self.exp.name}-{label}", after_rep=after_rep,
                                 settings={**settings, "applied": applied, "tune": label})
        return values, outcome, applied, time.monotonic() - t0


def heard(values: list[float], value: float, report_to: Any) -> bool:
    """One more repetition's value: told to the Optuna trial as the running mean at that many
    repetitions; True when its pruner stops the setting there."""
    values.append(value)
    if report_to is None:
        return False
    report_to.report(statistics.fmean(values), len(values))
    return report_to.should_prune()


def confirmed(verdict: str, ratio: float | None, maximize: bool) -> tuple[str, bool]:
    """The confirmation in words with its direction, and whether the best setting really is better:
    a real difference can be a loss (the search's best on fewer repetitions, worse measured afresh)."""
    if verdict == "different" and ratio is not None:
        better = (ratio > 1) == maximize
        return ("better than the default" if better else "worse than the default: keep the default"), better
    return {"same": "the same as the default"}.get(verdict, "can't tell"), False


def _prepare(path: Path, objective: Objective, budget: float, reps: int, runs_root: Path | None) -> _Search:
    source, base_dir = str(path), path.parent
    exp = parse_experiment(read_yaml(path), base_dir, source)
    if not exp.variants:
        raise SpecError([("cluster", "nothing to tune: no cluster setting is swept; write a list at a cluster path, "
                                     "e.g. ceph: {conf: {osd: {osd_op_num_shards: [2, 8]}}}")], source)
    if exp.file.faults:
        raise SpecError([("faults", "tune measures settings, not faults: remove faults from this experiment")], source)
    data = exp.file.cluster if isinstance(exp.file.cluster, dict) else read_yaml(base_dir / exp.file.cluster)
    search = _Search(exp, objective.step_of(exp), objective, data, cluster_axes(data), reps, budget, source, base_dir,
                     runs_root)
    need = (1 + len(CONFIRMATION)) * search.setting_cost() + 20  # one setting, then the confirmation runs
    if budget < need:
        raise SpecError([("--budget", f"{budget / 60:.1f} min is too small for one setting and the final comparison "
                                      f"(about {need / 60:.1f} min here); give more, or fewer --reps")], source)
    return search


def rungs(reps: int, reduction: int) -> list[int]:
    """The repetition counts after which successive halving may stop a setting (Optuna's rungs at
    min_resource 1: 1, R, R², ...), those before a setting's last repetition."""
    out, r = [], 1
    while r < reps:
        out.append(r)
        r *= reduction
    return out


def rungs_text(reps: int, reduction: int) -> str:
    found = [str(r) for r in rungs(reps, reduction)]
    return ", ".join(found[:-1]) + (" and " if len(found) > 1 else "") + found[-1] if found else "none"


def plan(path: Path, objective: Objective, budget: float, reps: int = 3, reduction: int = 2) -> list[str]:
    """`dfslab tune --dry-run`: what the search would measure within the budget, by the rule the
    search stops by (one more setting only while the rest of the budget holds it and the final
    comparison); nothing is started."""
    search = _prepare(path, objective, budget, reps, None)
    combinations = math.prod(len(values) for _, values in search.axes)
    deploy = search.deploy_guess
    measured, cost = reps * search.rep_cost, search.setting_cost()
    reserve = (1 + len(CONFIRMATION)) * cost + 20

    def fits(per_setting: float) -> int:
        return min(combinations, max(0, int((budget - reserve) // per_setting) + 1)) if budget >= reserve else 0
    sampler = "grid: every combination once" if combinations <= GRID_LIMIT else "TPE: samples the space"
    return [
        f"objective: {'maximize' if objective.maximize else 'minimize'} {objective.metric} of step "
        f"{search.step.index} ({search.step.label})",
        *(f"setting {'.'.join(path)}: {', '.join(map(str, values))}" for path, values in search.axes),
        f"{combinations} combination(s); {sampler}; successive halving after {rungs_text(reps, reduction)} of {reps} repetitions",
        f"one setting: about {measured:.0f} s ({reps} x {search.rep_cost:.0f} s), {deploy:.0f} s more where it needs "
        f"a fresh cluster (runtime {search.exp.cluster.runtime})",
        f"the final comparison, default vs best afresh: {len(CONFIRMATION)} runs, about "
        f"{len(CONFIRMATION) * cost / 60:.1f} min",
        f"budget {budget / 60:.1f} min: {fits(measured)} of {combinations} setting(s) measured whole if they change "
        f"in place, {fits(cost)} with a fresh cluster each"
        + (" (more when halving stops some early)" if fits(cost) < combinations else ""),
        "nothing was started (dry run)",
    ]


def tune(path: Path, objective: Objective, budget: float, progress: Progress, reps: int = 3,
         reduction: int = 2, seed: int = 0, runs_root: Path | None = None, live: bool = True) -> TuneOutcome:
    search = _prepare(path, objective, budget, reps, runs_root)
    with SettingsCluster(search.exp.cluster.name, progress, live) as switcher:
        trials, failures, how = _search(search, switcher, progress, reduction, seed)
        complete = [t for t in trials if t.state == "complete"]
        if not complete:
            raise TuneError("no setting was measured to the end: " + "; ".join(failures or ["the budget ran out"]))
        best = (max if objective.maximize else min)(complete, key=lambda t: t.mean or 0.0)
        default_shown, default_data = default_settings(search.data, search.axes, search.source)
        best_data = search.cluster_with(best.settings)
        configs = {"default": (default_data, default_shown), "best": (best_data, best.settings)}
        measured: dict[str, tuple[list[list[float]], list[Path]]] = {"default": ([], []), "best": ([], [])}
        for i, role in enumerate(CONFIRMATION, 1):
            progress("confirming", f"run {i}/{len(CONFIRMATION)}: the {role} configuration afresh, {reps} repetitions: "
                                   f"{_shown(configs[role][1])}")
            values, outcome, _, _ = search.measure(switcher, progress, configs[role][0], f"{role}-{i}", configs[role][1])
            measured[role][0].append(values)
            measured[role][1].append(outcome.path)
            failures += [f"{role}: {f}" for f in outcome.failures]
    test = ratio_test(measured["default"][0], measured["best"][0])
    rows = compare_runs(measured["default"][1], measured["best"][1])
    # A side whose objective a cache served (byte ledger) is said with the verdict, never left out.
    cached = sorted({side for r in rows if r["workload"] == search.step.workload.name and r["metric"] == objective.metric
                     for side in r["not_from_storage"]})
    said, better = confirmed(test.verdict, test.ratio, objective.maximize)
    confirmation = {"metric": objective.metric, "default": measured["default"][0], "best": measured["best"][0],
                    "best_over_default": test.ratio, "low": test.low, "high": test.high,
                    "significant": test.significant, "verdict": test.verdict, "why": test.why,
                    "said": said, "better": better,
                    "not_from_storage": [{"A": "default", "B": "best"}[side] for side in cached]}
    target = RunDir(measured["best"][1][-1])
    target.write_json("comparison.json", {
        "what": "settings", "baseline_runtime": f"default ({_shown(default_shown)})",
        "baseline_runs": [p.name for p in measured["default"][1]], "runtime": f"best ({_shown(best.settings)})",
        "runs": [p.name for p in measured["best"][1]], "rows": rows})
    target.write_spec(parse_spec(best_data, search.source).model_dump(mode="json"), "best-spec.yaml")
    target.write_spec({**search.exp.raw, "cluster": best_data}, "best-experiment.yaml")
    target.write_json("tune.json", {
        "objective": {"text": objective.text, "metric": objective.metric, "maximize": objective.maximize,
                      "step": search.step.label},
        "search": {**how, "repetitions": reps, "seed": seed},
        "budget_seconds": budget, "elapsed_seconds": time.monotonic() - search.start,
        "trials": [t.__dict__ | {"mean": t.mean} for t in trials],
        "best": best.settings, "default": default_shown, "confirmation": confirmation,
        "reproduce": "dfslab run best-experiment.yaml (its cluster is best-spec.yaml)"})
    report.build(target.path)
    return TuneOutcome(best, default_shown, trials, target.path, confirmation, failures)


class _SettingFailed(Exception):
    """A setting whose run measured nothing (recorded; the search goes on)."""


def _search(search: _Search, switcher: SettingsCluster, progress: Progress, reduction: int,
            seed: int) -> tuple[list[Trial], list[str], dict[str, Any]]:
    """Optuna's study over the settings, stopped when every combination was measured or the
    budget no longer holds one more setting and the confirmation runs."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    labels = [".".join(p) for p, _ in search.axes]
    space = {label: list(range(len(values))) for label, (_, values) in zip(labels, search.axes)}
    combinations = math.prod(len(v) for v in space.values())
    grid = combinations <= GRID_LIMIT
    sampler = optuna.samplers.GridSampler(space, seed=seed) if grid else optuna.samplers.TPESampler(seed=seed)
    study = optuna.create_study(direction="maximize" if search.objective.maximize else "minimize", sampler=sampler,
                                pruner=optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=reduction))
    trials: list[Trial] = []
    failures: list[str] = []
    seen: dict[tuple, Trial] = {}
    stopped = {"why": "every combination measured"}

    def objective(ask: Any) -> float:
        combo = tuple(ask.suggest_categorical(label, space[label]) for label in labels)
        if combo in seen:  # TPE may propose a known setting again: what it gave is known
            known = seen[combo]
            if known.state != "complete":
                raise optuna.TrialPruned()
            return known.mean or 0.0
        trial = seen[combo] = Trial(len(trials) + 1, {label: axis[1][k] for label, axis, k in zip(labels, search.axes, combo)})
        trials.append(trial)
        progress("tuning", f"setting {trial.number} of ≤ {combinations}: {_shown(trial.settings)} · "
                           f"{search.left() / 60:.1f} min of the budget left")
        trial.values, outcome, trial.applied, trial.seconds = search.measure(
            switcher, progress, search.cluster_with(trial.settings), f"t{trial.number}", trial.settings, report_to=ask)
        trial.run = outcome.path.name
        if not trial.values:
            trial.state = "failed"
            failures.extend(f"setting {trial.number} ({_shown(trial.settings)}): {f}" for f in outcome.failures)
            raise _SettingFailed(trial.number)
        if len(trial.values) < search.reps:
            trial.state = "pruned"
            raise optuna.TrialPruned()
        trial.state = "complete"
        return statistics.fmean(trial.values)

    def budget(study: Any, _: Any) -> None:
        if search.left() < (1 + len(CONFIRMATION)) * search.setting_cost() + 20 and len(seen) < combinations:
            stopped["why"] = "time budget"
            study.stop()

    # GridSampler stops the study itself after the last combination; TPE gets a bound on proposals.
    study.optimize(objective, n_trials=None if grid else combinations * 3, callbacks=[budget],
                   catch=(_SettingFailed,))
    how = {"sampler": "grid (every combination once)" if grid else "TPE", "combinations": combinations,
           "pruner": f"successive halving (reduction factor {reduction}, 1 to {search.reps} repetitions)",
           "stopped": stopped["why"]}
    return trials, failures, how


def _shown(settings: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in settings.items())

"""`dfslab run`: an experiment's plan, its run (or resume, or runtimes compared) and its results table."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Optional

import typer

from .. import cluster
from ..terminal import LiveProgress, console
from ..spec import SpecError
from .common import RUNTIME_HELP, runtime_option, USER_ERRORS, _cluster_name, app, fail
from .common import RESULTS_FIT

# --until-decided's runs per side at most: without --budget, what bounds its time; with one, the
# budget does (50: where a "can't tell" says "more than 50 runs per side would be needed").
UNTIL_DECIDED_RUNS, UNTIL_DECIDED_MOST = 10, 50


@app.command()
def run(
    experiment: Path = typer.Argument(..., help="experiment file (YAML; see examples/quickstart.yaml), or a run "
                                                 "directory runs/<id>/ to re-run it and compare with it"),
    cluster_name: Optional[str] = typer.Option(None, "--cluster", callback=_cluster_name,
                                               help="run against this cluster, already up (not torn down)"),
    keep: bool = typer.Option(False, help="leave the cluster up after the run"),
    runtime: Optional[str] = typer.Option(None, help=RUNTIME_HELP, callback=runtime_option),
    resume: bool = typer.Option(False, "--resume", help="EXPERIMENT is an interrupted run directory: keep its "
                                "completed steps, run the rest on a fresh cluster, append them to it"),
    runs: Optional[int] = typer.Option(None, "--runs", min=1, max=20,
                                       help="the whole experiment N times on fresh clusters (the experiment's `runs:`); "
                                            "swept runtimes or settings interleaved A B B A..., compared over runs"),
    until_decided: bool = typer.Option(False, "--until-decided", help="add runs to both sides of the comparison (two "
                                       "runtimes, or one cluster setting's two values), A B then B A, until every "
                                       "headline metric is decided (different, or the same within ±10 %), --max-runs, "
                                       "or --budget; tested half way and at the last round the budget allows (sized "
                                       "from the first round), the two looks sharing the 5 % error (most of it at the last, as "
                                       "O'Brien-Fleming's spending function); exit 3 when some metric is still "
                                       "undecided at the end or none could be compared (0 when every one is decided, 1 "
                                       "when a step failed)"),
    budget: Optional[str] = typer.Option(None, "--budget", help="with --until-decided: no pair of runs starts past "
                                         "this much time (e.g. 30min, 2h); default: no limit but --max-runs"),
    max_runs: Optional[int] = typer.Option(None, "--max-runs", min=2, max=UNTIL_DECIDED_MOST,
                                           help="with --until-decided: runs per side at most (default: "
                                           f"{UNTIL_DECIDED_RUNS} without --budget; with one, what the budget allows, up to "
                                           f"{UNTIL_DECIDED_MOST})"),
    as_json: bool = typer.Option(False, "--json", help="at the end, one JSON object on stdout (each run's directory, "
                                 "report, failures and results table) instead of the table and report lines"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print the plan (each phase and step with its expected time, "
                                 "the data each step writes against what the cluster holds) and every problem; "
                                 "start nothing"),
) -> None:
    """Deploy → baselines → workloads (with a resource sampler) → report → teardown.

    Every run is a directory runs/<id>/ with the spec, provenance, raw tool output,
    results.csv, timeseries.csv and report.html. Exits 1 if any workload failed.
    """
    from ..experiment import load_experiment, load_run
    from ..phases import RunInterrupted
    from ..campaign import provenance_changes, run_across_runtimes, run_repeated, runtime_order, settings_order
    from ..run import ResumeError, run_experiment
    original = experiment if experiment.is_dir() else None
    if runs is not None and (resume or cluster_name):
        fail(ValueError("--runs makes a fresh cluster for each run: drop --cluster / --resume"))
    if resume and (original is None or cluster_name or runtime):
        fail(ValueError("--resume takes a run directory (runs/<id>/) and no --cluster or --runtime: the rest of the "
                        "run goes on a fresh cluster of the run's own spec"))
    try:
        running = cluster.load(cluster_name)[1] if cluster_name else None
        exp = _every_problem(lambda: load_run(original, runtime) if original else
                             load_experiment(experiment, runtime, running), running)
        if runs is not None:
            exp = replace(exp, file=exp.file.model_copy(update={"runs": runs}))
        if resume:
            with LiveProgress() as progress:
                outcome = run_experiment(exp, progress, resume=original)
            for failure in outcome.failures:
                console.print(f"[red]failed:[/] {failure}")
            for short in outcome.not_as_asked:
                console.print(f"[yellow]not as asked:[/] {short}")
            print(f"report: {outcome.report.resolve()}")
            raise typer.Exit(1 if outcome.failures or outcome.not_as_asked else 0)
        if original:
            console.print(f"re-running {original.name}: its experiment on its own spec, then compared with it")
            for change in provenance_changes(original, exp.cluster):
                console.print(f"[yellow]differs from the original run:[/] {change}")
        for notice in exp.notices:
            console.print(f"[yellow]note:[/] {notice}")
        if dry_run:
            _print_plan(exp, running)
        from ..dryrun import fill_problems
        too_big = fill_problems(exp, running or exp.cluster)
        if too_big:
            raise SpecError(too_big, str(experiment))
        if until_decided:
            _until_decided(exp, budget, max_runs, cluster_name or (runs is not None and "--runs") or None)
        across = exp.file.runtimes and runtime is None
        if (across or exp.variants or exp.file.runs > 1) and cluster_name:
            fail(ValueError(f"{experiment}: swept runtimes or cluster settings, or runs: {exp.file.runs}, make a fresh "
                            "cluster each; drop --cluster (or pick one runtime with --runtime)"))
        order = runtime_order(exp) if across else [v.label for v in settings_order(exp)]
        times = len(order) or exp.file.runs
        console.print(f"{exp.name}: {len(exp.steps)} combination(s) × {exp.file.repetitions} repetition(s)"
                      + (f" × runs {', '.join(order)}" if order else f" × {times} runs" if times > 1 else "")
                      + f", about {times * exp.estimate() / 60:.1f} min of workloads")
        with LiveProgress() as progress:
            if across:
                outcomes = run_across_runtimes(exp, progress)
            elif exp.variants:
                from ..campaign import run_across_settings
                outcomes = run_across_settings(exp, progress)
            elif exp.file.runs > 1:
                outcomes = run_repeated(exp, progress)
            else:
                outcomes = [run_experiment(exp, progress, cluster_name, keep=keep)]
    except (*USER_ERRORS, ResumeError) as exc:
        fail(exc)
    except RunInterrupted as stop:
        for line in stop.lines():
            console.print(f"[yellow]{line}[/]", highlight=False, soft_wrap=True)
        raise typer.Exit(130)
    except KeyboardInterrupt:  # before a run directory was made
        console.print("[yellow]interrupted before the run began: nothing was measured, and a cluster dfslab was "
                      "making for it was removed[/]")
        raise typer.Exit(130)
    failed = False
    for outcome in outcomes:
        for failure in outcome.failures:
            console.print(f"[red]failed:[/] {failure}")
        for short in outcome.not_as_asked:
            console.print(f"[yellow]not as asked:[/] {short}")
        failed = failed or bool(outcome.failures) or bool(outcome.not_as_asked)
    if len(outcomes) > 1 and order:
        from ..campaign import runtime_pairs
        for _, _, runs_a, runs_b in runtime_pairs(order, [o.path for o in outcomes]):
            from .runs import _print_comparison  # runs' commands are registered after run's
            _print_comparison(runs_a, runs_b)
    elif len(outcomes) > 1:
        print(f"{len(outcomes)} runs, one side of a comparison over runs: dfslab compare "
              f"{','.join(str(o.path) for o in outcomes)} OTHER_RUNS")  # unwrapped: a command to copy
    if as_json:
        print(json.dumps({"runs": [{"run": str(o.path.resolve()), "report": str(o.report.resolve()),
                                    "failures": o.failures, "results": _results(o.path)} for o in outcomes]}, indent=2))
        raise typer.Exit(1 if failed else 0)
    if original:
        from .runs import _print_comparison  # runs' commands are registered after run's
        _print_comparison(original, outcomes[-1].path)
    if len(outcomes) == 1:
        _print_results(outcomes[0].path)
    for outcome in outcomes:
        print(f"report: {outcome.report.resolve()}")
    if failed:
        raise typer.Exit(1)


def _until_decided(exp, budget: str | None, max_runs: int | None, conflicting: str | None) -> None:
    """--until-decided: runs of both sides until every headline metric is decided; each metric's
    verdict with the runs it took, or why it was not decided; exit 0 when every one was."""
    from ..campaign import decision_sides, run_until_decided
    from ..units import parse_duration
    if conflicting:
        fail(ValueError(f"--until-decided makes a fresh cluster for each run and decides how many: drop {conflicting}"))
    decision_sides(exp)  # two sides, or refused before anything starts
    seconds = parse_duration(budget) if budget else float("inf")
    with LiveProgress() as progress:
        # A budget is the limit the user set: rounds are not capped below what it holds.
        most = max_runs or (UNTIL_DECIDED_MOST if budget else UNTIL_DECIDED_RUNS)
        made = run_until_decided(exp, progress, seconds, most)
    outcomes, rows = made.outcomes, made.rows
    from ..compare import headline
    top = headline(rows)
    for row in top:
        took = f"after {row['decided_at']} runs per side" if row.get("decided_at") else "not decided"
        console.print(f"{row['side']}: {row['workload']} {row['params']} {row['metric']}: [bold]{row['verdict']}[/] "
                      f"{took} ({row['why']})", highlight=False, soft_wrap=True)
    left = [r for r in top if not r.get("decided_at")]
    if top:
        console.print(f"{len(top) - len(left)} of {len(top)} headline metrics decided; {made.looks}",
                      highlight=False)
    if not top:
        console.print("[yellow]no headline metric could be compared (every phase too short to time, or failed)[/]")
    for outcome in outcomes:
        for problem in outcome.failures + outcome.not_as_asked:
            console.print(f"[yellow]{outcome.path.name}:[/] {problem}", highlight=False, soft_wrap=True)
        print(f"report: {outcome.report.resolve()}")
    # 1: a step failed or ran not as asked; 3: measured as asked, but not every metric was decided
    raise typer.Exit(1 if any(o.failures or o.not_as_asked for o in outcomes) else 3 if left or not top else 0)


def _every_problem(load, running):
    """The experiment `load()` reads, or every mistake in it at once: what the file says wrong and
    what the cluster would refuse of the rest of it (run.check_against_cluster), in one error."""
    from ..run import check_against_cluster
    try:
        return load()
    except SpecError as err:
        if err.partial is None:
            raise
        try:
            check_against_cluster(err.partial, running or err.partial.cluster)
        except SpecError as more:
            raise SpecError(list(dict.fromkeys(err.problems + more.problems)), err.source) from None
        raise


def _print_plan(exp, running) -> None:
    """--dry-run: the plan on stdout, then exit 0, or 2 with every problem (nothing started).
    `running`: the spec of the cluster given with --cluster (None: the run makes its own)."""
    from ..dryrun import plan, run_seconds
    from ..run import check_against_cluster
    from ..spec import SpecError
    spec = running or exp.cluster
    p = plan(exp, spec, owned=running is None, check=check_against_cluster)
    holds = f", holds {p.usable / 2**30:.1f} GiB of data" if p.usable else ""
    runs = run_seconds(exp, spec, p)
    print(f"{exp.name} on {spec.name} ({spec.filesystem}, runtime {spec.runtime}{holds}): about "
          f"{p.seconds / 60:.1f} min" + (f" a run; {len(runs)} runs, about {sum(s for _, s in runs) / 60:.1f} min in all: "
                                         + ", ".join(f"{label} {s / 60:.1f}" for label, s in runs) if len(runs) > 1 else ""))
    for what, seconds in p.phases:
        print(f"  {seconds:7.1f} s  {what}")
    print("steps (seconds over all repetitions, data each leaves on the cluster):")
    for s in p.steps:
        writes = "?" if s["writes"] is None else f"{s['writes'] / 2**20:.0f} MiB"
        print(f"  {s['seconds']:7.1f} s  {writes:>9}  workloads[{s['index']}] {s['label']}")
    if p.problems:
        fail(SpecError(p.problems, exp.source))
    raise typer.Exit(0)


def _results_table(run_path: Path) -> tuple[list[dict], list[tuple[str, str]]]:
    """The report's Workloads table of a run: (lines, columns); see report.summarize."""
    from ..labels import SUMMARY_METRICS
    from ..report import summarize
    from ..results import RunDir
    rows = [r for r in RunDir(run_path).rows() if r["workload"] != "baseline"]
    return summarize(rows, SUMMARY_METRICS + ["from_storage"])


def _results(run_path: Path) -> list[dict]:
    """--json: each line of the results table as {workload, parameters, n, column: {mean, ci95}}
    (ci95: the half-width of the 95 % interval over repetitions; null with one)."""
    lines, columns = _results_table(run_path)
    return [{"workload": line["workload"], "parameters": line["params"], "n": line["n"],
             **{head: dict(zip(("mean", "ci95"), line["numbers"][key])) for key, head in columns if key in line["numbers"]}}
            for line in lines]


# How the results and compare tables fit a narrow terminal: (columns that wrap, columns left out
# first). Every row keeps its throughput numbers; latencies and notes go before them.


def _print_results(run_path: Path) -> None:
    """The run's results on the terminal, as the report's Workloads table has them (mean ± 95 %
    over repetitions; every metric is in results.csv), rows under the byte ledger's floor and rows
    timed over less than MIN_PHASE_SECONDS marked."""
    from ..ledger import FROM_STORAGE_FLOOR
    from ..report import mark_untimed, short_phases
    from ..workloads import MIN_PHASE_SECONDS
    from ..results import RunDir
    lines, columns = _results_table(run_path)
    if not lines:
        return
    short = short_phases([r for r in RunDir(run_path).rows() if r["workload"] != "baseline"])
    for line in lines:
        share = line["numbers"].get("from_storage (ratio)")
        line["note"] = "; ".join(note for note in (
            "not from the storage" if share and share[0] < FROM_STORAGE_FLOOR else "",) if note)
    untimed = mark_untimed(lines, short)
    from .runs import _print_rows
    _print_rows(["workload", "parameters", *(head for _, head in columns), "note"],
                 [[line["workload"], line["params"], *(line["cells"].get(k, "") for k, _ in columns), line["note"]]
                  for line in lines], "results (mean ± 95 % interval over repetitions)", *RESULTS_FIT)
    if untimed:
        console.print(f"[yellow]–: {untimed} row(s) timed under {MIN_PHASE_SECONDS:g} s, too short to time (a burst, not a "
                      "rate): no number shown; they are in results.csv, and the report says how long each ran[/]",
                      highlight=False)

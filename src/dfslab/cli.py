"""The `dfslab` command: thin, it parses arguments and shows progress; the work is elsewhere."""

from __future__ import annotations

import inspect
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import List, Optional

import typer
from typer.core import TyperOption
from rich.console import Console
from rich.table import Table

from . import __version__, cluster
from .terminal import LiveProgress, console
from .backends import BackendError, backend_class
from .runtime import RuntimeError_
from .safety import BadName, check_name
from .spec import SpecError, load_spec
from .state import list_clusters, teardown_order
from .units import UnitError, human_bytes, parse_percent, si

app = typer.Typer(
    help="Deploy, measure and break distributed filesystems from one declarative file.\n\n"
    "Typical session:  dfslab up examples/ceph-small.yaml;  dfslab status;  "
    "dfslab exec small -- ceph -s;  dfslab down small",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
)


def _terminated(signum, frame):  # noqa: ARG001
    # SIGTERM/SIGHUP unwind like Ctrl-C, so every `finally` runs: a run tears down the cluster
    # it made, stops its sampler and writes what it measured.
    raise KeyboardInterrupt(f"signal {signum}")


def _print_version(value: bool) -> None:
    if value:
        print(__version__)
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True, help="print dfslab's version and exit"),
) -> None:
    signal.signal(signal.SIGTERM, _terminated)
    signal.signal(signal.SIGHUP, _terminated)


def _cluster_name(value: Optional[str]) -> Optional[str]:
    """Every cluster name from the command line is checked before any path is built from it."""
    if value is None:
        return None
    try:
        return check_name(value, "cluster")
    except BadName as exc:
        raise typer.BadParameter(str(exc)) from None


def NameArg(help: str = "cluster name", optional: bool = False):  # noqa: N802 (a parameter factory)
    return typer.Argument(None if optional else ..., help=help, callback=_cluster_name)


RUNTIME_HELP = ("override the spec's runtime: local (network namespaces) or docker (every daemon in its own "
                "container; the image is built on first use, see `dfslab images build`)")
USER_ERRORS = (SpecError, cluster.ClusterError, BackendError, RuntimeError_, BadName)


def fail(exc: Exception, code: int = 2) -> None:
    """One line naming what is wrong; exit 2 (bad input) unless a finding (1) says otherwise: an
    unknown cluster name is one on every command (README's exit codes)."""
    console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
    raise typer.Exit(1 if isinstance(exc, cluster.UnknownCluster) else code)


@app.command()
def up(
    spec_file: Path = typer.Argument(..., help="cluster spec (YAML); every field: docs/spec.md, or dfslab schema spec"),
    name: Optional[str] = typer.Option(None, callback=_cluster_name, help="override the spec's name (run several copies side by side)"),
    timeout: float = typer.Option(300, help="seconds to wait for HEALTH_OK before giving up and tearing down"),
    keep_on_failure: bool = typer.Option(False, help="leave a failed cluster in place to debug it (remove with `dfslab down`)"),
    runtime: Optional[str] = typer.Option(None, help=RUNTIME_HELP),
) -> None:
    """Bring a real cluster up from SPEC_FILE and wait until it is healthy.

    Nothing is started if the spec is invalid. If anything fails, or you press Ctrl-C,
    everything made so far is removed and the daemons' logs are kept for you.
    """
    try:
        spec = load_spec(spec_file, name, runtime)
        with LiveProgress() as progress:
            addresses = cluster.up(spec, progress, timeout, keep_on_failure)
            elapsed = time.monotonic() - progress.start
    except USER_ERRORS as exc:
        fail(exc)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: everything started was removed[/]")
        raise typer.Exit(130)
    console.print(f"[bold green]cluster {spec.name} is up[/] (HEALTH_OK in {elapsed:.1f}s) — "
                  f"nodes: {', '.join(f'{n}={a}' for n, a in addresses.items())}")
    peek = backend_class(spec).peek
    console.print(f"next: dfslab status {spec.name} · dfslab exec {spec.name} -- {peek} · dfslab down {spec.name}")


@app.command()
def status(
    name: Optional[str] = NameArg("cluster name (may be left out when only one is up)", optional=True),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Health, every daemon (pid, node, address, RSS), pools and PG states."""
    try:
        info = cluster.status(cluster.resolve_name(name))
    except USER_ERRORS as exc:
        fail(exc)
    if as_json:
        print(json.dumps(info, indent=2))
        return
    out = Console()
    colour = {"HEALTH_OK": "green", "HEALTH_WARN": "yellow"}.get(info.get("health", ""), "red")
    out.print(f"[bold]{info['name']}[/] ({info['filesystem']} on {info['runtime']}) "
              f"[{colour}]{info.get('health', info.get('phase'))}[/]  state: {info['state_dir']}")
    for check, msg in info.get("checks", {}).items():
        out.print(f"  [yellow]{check}[/]: {msg}")
    table = Table("daemon", "node", "address", "pid", "state", "RSS", box=None)
    for d in info["daemons"]:
        table.add_row(d["name"], d["node"], d["address"], str(d["pid"]),
                      "[green]running[/]" if d["alive"] else "[red]dead[/]",
                      human_bytes(d["rss_bytes"]) if d["rss_bytes"] else "-")
    out.print(table)
    for line in info.get("summary", []):
        out.print(line)
    for tab in info.get("tables", []):
        _print_table(out, tab)


# Cell words that say a part is working or not, coloured in every backend's tables.
_GOOD, _BAD = {"online", "running", "connected", "up"}, {"offline", "dead", "DISCONNECTED", "down"}


def _print_table(out: Console, tab: dict) -> None:
    rendered = Table(*tab["columns"], box=None, title=tab["title"], title_justify="left")
    for row in tab["rows"]:
        rendered.add_row(*(f"[green]{c}[/]" if c in _GOOD else f"[red]{c}[/]" if c in _BAD else c for c in row))
    out.print(rendered)


@app.command()
def scale(
    name: str = NameArg(),
    add_bricks: int = typer.Option(..., "--add-bricks", help="bricks to add (whole replica / disperse sets)"),
    timeout: float = typer.Option(1800, help="seconds to wait for the rebalance"),
) -> None:
    """Grow a GlusterFS volume: add-brick, then rebalance, and wait until it has completed.

    New bricks go round-robin onto the nodes with the fewest bricks, so each new replica or
    disperse set spans distinct servers. dfslab scale small --add-bricks 3
    """
    try:
        attached = cluster.attach(name)
    except USER_ERRORS as exc:
        fail(exc)
    try:
        with LiveProgress() as progress:
            result = attached.backend.add_bricks(add_bricks, progress, timeout)
    except USER_ERRORS as exc:
        fail(exc)
    finally:
        attached.close()
    console.print(f"[bold green]added {len(result['added'])} brick(s)[/]; rebalance moved {result['files']} file(s) "
                  f"({human_bytes(result['bytes'])}) in {result['seconds']:.1f} s, {result['scanned']} scanned")


@app.command()
def down(
    name: Optional[str] = NameArg("cluster name (may be left out when only one is up)", optional=True),
    all_: bool = typer.Option(False, "--all", help="tear down every cluster dfslab knows of"),
) -> None:
    """Remove every process, mount, namespace, bridge and data file of a cluster.

    Works from the state directory alone, so it also cleans up after a dfslab that was killed.
    It removes only what the cluster's state directory records as dfslab's, inside dfslab's own
    directories; a name with no state directory is an error (exit 1), never a guess.
    """
    try:
        names = teardown_order(list_clusters()) if all_ else [name or cluster.resolve_name(None)]
    except USER_ERRORS as exc:
        fail(exc)
    failed = False
    for n in names:
        try:
            result = cluster.down(n)
        except USER_ERRORS as exc:  # the next cluster may still come down
            console.print(f"[bold red]error:[/] {n}: {exc}", highlight=False, soft_wrap=True)
            failed = True
            continue
        left = cluster.leftovers(n) + result["refused"]
        console.print(f"[green]✓[/] {n}: stopped {len(result['killed'])} process(es), removed "
                      f"{len(result['namespaces'])} resource(s) (namespaces, containers, networks)"
                      + (f"; [red]left: {'; '.join(left)}[/]" if left else ""), highlight=False)
        failed = failed or bool(left)
    if not names:
        console.print("no clusters")
    if failed:
        raise typer.Exit(1)


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json", help="name, filesystem, runtime, phase and state directory of each")) -> None:
    """Clusters that are up (or half-made) on this machine."""
    from .state import ClusterState
    if not as_json:
        for name in list_clusters():
            print(name)
        if not list_clusters():
            console.print("no clusters up (dfslab up SPEC makes one; dfslab run EXPERIMENT makes its own)")
        return
    out = []
    for name in list_clusters():
        state = ClusterState(name)
        info = state.read()
        out.append({"name": name, "filesystem": info.get("spec", {}).get("filesystem"), "runtime": info.get("runtime_kind"),
                    "phase": info.get("phase"), "state_dir": str(state.dir)})
    print(json.dumps(out, indent=2))


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def exec(
    ctx: typer.Context,
    name: str = NameArg(),
    node: str = typer.Option("client", help="node to run on (default: the client node)"),
) -> None:
    """Run a command on a node of a cluster, with the cluster's client config.

    On runtime kubernetes a tool runs as a Job in a pod on that node; the filesystem's admin CLIs
    (ceph, rbd, s3cmd) run on the client node itself (on a Kubernetes you run: Rook's toolbox pod). For example:

    dfslab exec small -- ceph -s;   dfslab exec small -- rados -p dfslab bench 10 write
    """
    argv = list(ctx.args)
    if not argv:
        fail(ValueError("give a command after --, e.g. dfslab exec NAME -- ceph -s"))
    try:
        wrapped, env = cluster.client_command(name, argv, node)
    except USER_ERRORS as exc:
        fail(exc)
    raise typer.Exit(subprocess.call(wrapped, env=env))


@app.command()
def run(
    experiment: Path = typer.Argument(..., help="experiment file (YAML; see examples/quickstart.yaml), or a run "
                                                 "directory runs/<id>/ to re-run it and compare with it"),
    cluster_name: Optional[str] = typer.Option(None, "--cluster", callback=_cluster_name,
                                               help="run against this cluster, already up (not torn down)"),
    keep: bool = typer.Option(False, help="leave the cluster up after the run"),
    runtime: Optional[str] = typer.Option(None, help=RUNTIME_HELP),
    resume: bool = typer.Option(False, "--resume", help="EXPERIMENT is an interrupted run directory: keep its "
                                "completed steps, run the rest on a fresh cluster, append them to it"),
    runs: Optional[int] = typer.Option(None, "--runs", min=1, max=20,
                                       help="the whole experiment N times on fresh clusters (the experiment's `runs:`); "
                                            "swept runtimes or settings interleaved A B B A..., compared over runs"),
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
    from .experiment import load_experiment, load_run
    from .run import (ResumeError, RunInterrupted, provenance_changes, run_across_runtimes, run_experiment,
                      run_repeated, runtime_order, settings_order)
    original = experiment if experiment.is_dir() else None
    if runs is not None and (resume or cluster_name):
        fail(ValueError("--runs makes a fresh cluster for each run: drop --cluster / --resume"))
    if resume and (original is None or cluster_name or runtime):
        fail(ValueError("--resume takes a run directory (runs/<id>/) and no --cluster or --runtime: the rest of the "
                        "run goes on a fresh cluster of the run's own spec"))
    try:
        running = cluster.load(cluster_name)[1] if cluster_name else None
        exp = load_run(original, runtime) if original else load_experiment(experiment, runtime, running)
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
        from .dryrun import fill_problems
        too_big = fill_problems(exp, running or exp.cluster)
        if too_big:
            raise SpecError(too_big, str(experiment))
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
                from .run import run_across_settings
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
        from .run import runtime_pairs
        for _, _, runs_a, runs_b in runtime_pairs(order, [o.path for o in outcomes]):
            _print_comparison(runs_a, runs_b)
    elif len(outcomes) > 1:
        print(f"{len(outcomes)} runs, one side of a comparison over runs: dfslab compare "
              f"{','.join(str(o.path) for o in outcomes)} OTHER_RUNS")  # unwrapped: a command to copy
    if as_json:
        print(json.dumps({"runs": [{"run": str(o.path.resolve()), "report": str(o.report.resolve()),
                                    "failures": o.failures, "results": _results(o.path)} for o in outcomes]}, indent=2))
        raise typer.Exit(1 if failed else 0)
    if original:
        _print_comparison(original, outcomes[-1].path)
    if len(outcomes) == 1:
        _print_results(outcomes[0].path)
    for outcome in outcomes:
        print(f"report: {outcome.report.resolve()}")
    if failed:
        raise typer.Exit(1)


def _print_plan(exp, running) -> None:
    """--dry-run: the plan on stdout, then exit 0, or 2 with every problem (nothing started).
    `running`: the spec of the cluster given with --cluster (None: the run makes its own)."""
    from .dryrun import plan, run_seconds
    from .run import check_against_cluster
    from .spec import SpecError
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
        fail(SpecError(p.problems, exp.name))
    raise typer.Exit(0)


def _results_table(run_path: Path) -> tuple[list[dict], list[tuple[str, str]]]:
    """The report's Workloads table of a run: (lines, columns); see report.summarize."""
    from .labels import SUMMARY_METRICS
    from .report import summarize
    from .results import RunDir
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
RESULTS_FIT = (("parameters", "note"),
               ("note", "from storage (ratio)", "time avg (ms)", "latency p99 (ms)", "latency avg (ms)"))
COMPARE_FIT = (("parameters", "why"), ("why", "A", "B"))


def _print_results(run_path: Path) -> None:
    """The run's results on the terminal, as the report's Workloads table has them (mean ± 95 %
    over repetitions; every metric is in results.csv), rows under the byte ledger's floor and rows
    timed over less than MIN_PHASE_SECONDS marked."""
    from .ledger import FROM_STORAGE_FLOOR
    from .report import short_phases
    from .results import RunDir
    lines, columns = _results_table(run_path)
    if not lines:
        return
    short = short_phases([r for r in RunDir(run_path).rows() if r["workload"] != "baseline"])
    for line in lines:
        share = line["numbers"].get("from_storage (ratio)")
        seconds = short.get((line["workload"], line["params"]))
        line["note"] = "; ".join(note for note in (
            "not from the storage" if share and share[0] < FROM_STORAGE_FLOOR else "",
            f"too short to time ({seconds:.2g} s)" if seconds is not None else "") if note)
    _print_rows(["workload", "parameters", *(head for _, head in columns), "note"],
                 [[line["workload"], line["params"], *(line["cells"].get(k, "") for k, _ in columns), line["note"]]
                  for line in lines], "results (mean ± 95 % interval over repetitions)", *RESULTS_FIT)


@app.command()
def quickstart(spec_file: Path = typer.Argument(Path("examples/quickstart.yaml"), help="experiment file")) -> None:
    """What `make demo` runs: the quickstart experiment (same as `dfslab run examples/quickstart.yaml`)."""
    run(spec_file, None, False, None, resume=False, runs=None)


@app.command()
def tune(
    experiment: Path = typer.Argument(..., help="experiment file whose cluster has swept settings (lists), e.g. "
                                                 "examples/tuning.yaml"),
    maximize: Optional[str] = typer.Option(None, help="WORKLOAD [PARAM=VALUE ...] METRIC to make as large as "
                                           "possible, e.g. \"fio bs=4KiB rw=randwrite iops\""),
    minimize: Optional[str] = typer.Option(None, help="... or as small, e.g. \"fio rw=randwrite latency_p99\""),
    budget: str = typer.Option("30min", help="wall-clock time for the whole search, final comparison included"),
    reps: int = typer.Option(3, min=2, max=20, help="repetitions a setting gets at most (and the final two runs get)"),
    reduction: int = typer.Option(2, min=2, max=8, help="successive halving keeps the best 1/REDUCTION of the "
                                                         "settings at each number of repetitions"),
    seed: int = typer.Option(0, help="the search's random seed (order of the grid, TPE's draws)"),
    redeploy: bool = typer.Option(False, "--redeploy", help="a fresh cluster for every setting, even where it "
                                  "could change in place"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print what the search would measure within the budget "
                                 "(settings, costs, how many fit) and exit; nothing is started"),
) -> None:
    """Search the swept cluster settings for the best one within a time budget.

    Each setting runs the one workload step the objective names, repeated up to --reps times;
    successive halving (Optuna) stops settings that fall behind after 1, 2, 4... repetitions.
    The winner and the default configuration are then measured afresh, side by side, and
    compared with a 95 % interval: a winner of a noisy search is not claimed on its own numbers.
    The last run directory holds tune.json, best-spec.yaml, best-experiment.yaml and the report.
    """
    from .tune import Objective, TuneError, plan as tune_plan, tune as run_tune
    from .units import parse_duration
    if (maximize is None) == (minimize is None):
        fail(ValueError("give one objective: --maximize \"WORKLOAD [PARAM=VALUE ...] METRIC\" or --minimize ..."))
    try:
        seconds = parse_duration(budget)
    except ValueError as exc:
        fail(ValueError(f"--budget: {exc}"))
    try:
        objective = Objective.parse(maximize or minimize or "", maximize is not None)
        if dry_run:
            print("\n".join(tune_plan(experiment, objective, seconds, reps=reps)))  # the plan on stdout, as run --dry-run's
            return
        with LiveProgress() as progress:
            outcome = run_tune(experiment, objective, seconds, progress, reps=reps, reduction=reduction, seed=seed,
                               live=not redeploy)
    except (*USER_ERRORS, TuneError) as exc:
        fail(exc)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: every setting measured so far has its run directory; the cluster was removed[/]")
        raise typer.Exit(130)
    table = Table("#", "settings", "reps", f"mean {objective.metric}", "state", "applied", box=None)
    for t in outcome.trials:
        table.add_row(str(t.number), ", ".join(f"{k}={v}" for k, v in t.settings.items()), str(len(t.values)),
                      f"{t.mean:.4g}" if t.mean is not None else "", t.state, t.applied)
    console.print(table)
    from .ledger import FROM_STORAGE_FLOOR
    c = outcome.confirmation
    interval = f"95 % interval {c['low']:.3f} – {c['high']:.3f}" if c["low"] is not None else "no interval"
    best = ", ".join(f"{k}={v}" for k, v in outcome.best.settings.items())
    style = "green" if c["better"] else "red" if c["verdict"] == "different" else "yellow"
    console.print(f"best: [bold]{best}[/] · measured again beside the default, runs interleaved: best/default = "
                  f"{c['best_over_default']:.3f}, {interval}: [{style}]{c['said']}[/] ({c['why']})")
    if c.get("not_from_storage"):
        console.print(f"[yellow]not from the storage:[/] the {' and '.join(c['not_from_storage'])} configuration's "
                      f"{objective.metric} came from a cache (byte ledger: the clients' links carried under "
                      f"{FROM_STORAGE_FLOOR:g} of the bytes the tool counted); it ranks a cache, not the cluster")
    for failure in outcome.failures:
        console.print(f"[red]failed:[/] {failure}")
    print(f"spec to reproduce: {(outcome.run / 'best-spec.yaml').resolve()}")
    print(f"report: {(outcome.run / 'report.html').resolve()}")
    if outcome.failures:
        raise typer.Exit(1)


@app.command()
def runs(
    root: Path = typer.Option(None, help="runs directory (default: $DFSLAB_RUNS or ./runs)"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """List stored runs, newest last. Run ids are printed whole: they are what you copy."""
    from .results import list_runs
    infos = list(list_runs(root))
    columns = ["id", "experiment", "cluster", "started", "duration", "rows", "state"]
    if as_json:
        print(json.dumps(infos, indent=2, default=str))
        return
    if not sys.stdout.isatty():  # pipes and scripts get plain lines, nothing cut
        print("\t".join(columns))
        for info in infos:
            print("\t".join(str(info[c]) for c in columns))
        return
    table = Table(box=None)
    table.add_column("run", no_wrap=True, min_width=max((len(i["id"]) for i in infos), default=3))
    for head in ("experiment", "cluster", "started", "s", "rows", "state"):
        table.add_column(head, overflow="fold")
    for info in infos:
        table.add_row(*(str(info[c]) for c in columns))
    Console().print(table)


@app.command()
def compare(
    run_a: str = typer.Argument(..., help="baseline run directory, or several runs of the same thing joined by commas "
                                          "(runs/a1,runs/a2)"),
    run_b: str = typer.Argument(..., help="run(s) to compare with it, the same way"),
    as_json: bool = typer.Option(False, "--json", help="the rows as JSON (B/A, interval, verdict per metric) instead "
                                                        "of the table"),
    all_metrics: bool = typer.Option(False, "--all", help="every metric (latency percentiles, stddevs...), not only the headline ones"),
    margin: str = typer.Option("10%", help="what counts as the same: B/A within ±MARGIN (two one-sided tests)"),
    fail_if_worse: Optional[str] = typer.Option(
        None, "--fail-if-worse", metavar="PERCENT",
        help="a CI gate: exit 1 when runs show B worse than A by more than PERCENT in a headline metric's own "
             "direction (bandwidth, IOPS down; latency, time up), naming the metrics; 5 % family-wise over the "
             "metrics it tests (Holm). Needs 2 or more runs on a side (exit 2 otherwise)"),
) -> None:
    """B/A per metric with a 95 % interval and a verdict: different (*), the same within ±10 % (=), or can't tell.

    The unit is the run: runs of one spec on fresh clusters differ by more than the repetitions inside one run. With one run per side the interval is within that run and no difference is claimed; with 2 or more runs on a side (2 vs 2, 2 vs 1, 3 vs 2) each run is one value and the test is over runs, e.g. dfslab compare runs/L1,runs/L2 runs/D1,runs/D2. `dfslab run EXP --runs 3` makes such runs. A "can't tell" says how many runs per side would decide it."""
    from .compare import compare_runs
    try:
        share = parse_percent(margin) / 100
        worse = parse_percent(fail_if_worse) / 100 if fail_if_worse is not None else None
    except UnitError as exc:
        fail(ValueError(f"--margin / --fail-if-worse: {exc}"))
    side_a, side_b = _run_list(run_a), _run_list(run_b)
    rows = compare_runs(side_a, side_b, share)
    if not rows:
        fail(ValueError(f"nothing in common to compare: A measured {_measured(side_a)}; B measured {_measured(side_b)}"),
             code=1)
    if as_json:
        print(json.dumps(rows, indent=2))
    else:
        _print_comparison(side_a, side_b, all_metrics, share, rows)
    if worse is not None:
        _gate(rows, worse)


def _gate(rows: list[dict], worse: float) -> None:
    """--fail-if-worse: exit 1 naming what runs show worse, 2 when nothing could be tested."""
    from .compare import GATE_ALPHA, gate
    result = gate(rows, worse)
    if not result.tested:
        fail(ValueError(f"--fail-if-worse: none of the {len(result.untested)} headline metrics can be tested: with one "
                        "run per side the interval is within that run and cannot see run-to-run variation, so passing "
                        "would mean nothing; give 2 or more runs on a side (dfslab run EXP --runs 3, then dfslab compare "
                        "runs/a1,runs/a2,runs/a3 runs/b1,runs/b2,runs/b3)"))
    for r in result.failed:
        console.print(f"[red]worse by more than {worse * 100:g} %:[/] {r['workload']} {r['params']} {r['metric']} "
                      f"B/A {r['ratio']:.3f} (95 % interval {r['low']:.3f}-{r['high']:.3f}, over runs; one-sided "
                      f"p {r['p_worse']:.2g})", highlight=False)
    untested = f"; {len(result.untested)} could not be (no interval over runs)" if result.untested else ""
    console.print(f"--fail-if-worse {worse * 100:g} %: tested {len(result.tested)} headline metrics over runs, at "
                  f"{GATE_ALPHA * 100:g} % family-wise (Holm){untested}: "
                  + (f"{len(result.failed)} worse" if result.failed else "none worse"), highlight=False)
    if result.failed:
        raise typer.Exit(1)


def _run_path(text: str) -> Path:
    """A run directory as given, or a bare run id as `dfslab runs` prints it (found in the runs
    directory; a name with no '/' only, so no path is built from anything else)."""
    from .results import runs_root
    path = Path(text)
    if not path.exists() and "/" not in text and text not in (".", "..") and (runs_root() / text).exists():
        return runs_root() / text
    return path


def _run_list(text: str) -> Path | list[Path]:
    """'runs/a', a run id as `dfslab runs` and compare's title print it, or several joined by
    commas: each checked."""
    paths = []
    for part in (p for p in text.split(",") if p):
        path = _run_path(part)
        if not (path / "results.csv").exists():
            fail(ValueError(f"{part} is not a run directory with results (no results.csv); give runs/<id>, a run id "
                            f"from `dfslab runs`, or several joined by commas"))
        paths.append(path)
    if not paths:
        fail(ValueError("no run directory given: name one (runs/<id>) or several joined by commas"))
    return paths[0] if len(paths) == 1 else paths


MARKS = {"different": "*", "same": "="}


def _measured(runs: Path | list[Path]) -> str:
    """What a side of a comparison has: its workloads and their summary metrics."""
    from .results import RunDir
    found: dict[str, set[str]] = {}
    for run in runs if isinstance(runs, list) else [runs]:
        for r in RunDir(run).rows():
            if r["t"] is None:
                found.setdefault(r["workload"], set()).add(r["metric"])
    return "; ".join(f"{w} ({', '.join(sorted(m)[:6])}{', ...' if len(m) > 6 else ''})" for w, m in sorted(found.items())) or "nothing"


def _print_rows(headers: list[str], lines: list[list[str]], title: str, wrap: tuple[str, ...] = (),
                drop: tuple[str, ...] = ()) -> None:
    """A table on a terminal, fitted to its width (dfslab.terminal: `wrap` columns wrap, `drop`
    columns are left out in that order where it is narrow); piped, for scripts: the title, then
    tab-separated lines with every column, nothing padded."""
    if not sys.stdout.isatty():
        print(title)
        for line in [headers, *lines]:
            print("\t".join(line))
        sys.stdout.flush()  # before what the console (unbuffered) says next
        return
    from .terminal import print_table
    print_table(headers, lines, title, wrap, drop)


def _print_comparison(run_a: Path | list[Path], run_b: Path | list[Path], all_metrics: bool = False,
                      margin: float = 0.10, rows: list | None = None) -> None:
    from .compare import compare_runs, headline, verdict
    rows = rows if rows is not None else compare_runs(run_a, run_b, margin)
    shown = rows if all_metrics else headline(rows)
    names = lambda runs: " + ".join(p.name for p in (runs if isinstance(runs, list) else [runs]))  # noqa: E731
    lines = []
    for r in shown:
        interval = f"{r['low']:.3f} – {r['high']:.3f}" if r["low"] is not None else "none"
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "-"
        why = r["why"] if r["over"] != "one run" else "within one run"
        if r.get("not_from_storage"):
            why = f"not from the storage on {' and '.join(r['not_from_storage'])}; {why}"
        lines.append([r["workload"], r["params"], r["metric"], r["unit"], si(r["mean_a"]), si(r["mean_b"]), ratio,
                      interval, MARKS.get(r["verdict"], ""), why])
    _print_rows(["workload", "parameters", "metric", "unit", "A", "B", "B/A", "95 % interval", "", "why"], lines,
                 f"A = {names(run_a)} · B = {names(run_b)}", *COMPARE_FIT)
    print(verdict(rows, margin) + ("" if all_metrics else " (`dfslab compare A B --all` lists every metric)"))


@app.command()
def report(run: str = typer.Argument(..., help="a run directory (runs/<id>/), or a run id as `dfslab runs` prints it")) -> None:
    """(Re)build report.html from a run directory."""
    from . import report as rep
    run_dir = _run_path(run)
    if not (run_dir / "provenance.json").exists():
        fail(ValueError(f"{run} is not a run directory (no provenance.json); give runs/<id>/ or a run id from "
                        "`dfslab runs`"))
    from .results import RunDir
    if not (run_dir / "results.parquet").exists():  # runs made before Parquet existed
        RunDir(run_dir).write_parquet()
    print(rep.build(run_dir))


def _fault_kinds() -> str:
    from .chaos import FAULTS
    return " | ".join(sorted(FAULTS))


@app.command()
def fault(
    name: str = NameArg(),
    kind: str = typer.Argument(..., help=f"{_fault_kinds()}, or: restore, list"),
    target: Optional[str] = typer.Argument(None, help="osd.1, mon.b, mds.a, mgr.x, a node name, node2/b0 (brick), or rook (fault operator)"),
    option: List[str] = typer.Option([], "--set", help="fault option KEY=VALUE, e.g. --set bandwidth=100mbit "
                                                       "(`dfslab fault NAME list` shows each kind's options)"),
    as_json: bool = typer.Option(False, "--json", help="with list: active faults and every kind as JSON"),
) -> None:
    """Break a running cluster on purpose, and put it back.

    dfslab fault small kill osd.1 · dfslab fault small partition node2 ·
    dfslab fault small degrade node3 --set bandwidth=100mbit · dfslab fault small fill osd.0 ·
    dfslab fault small restore
    """
    from . import chaos
    bad = [o for o in option if "=" not in o or not o.split("=", 1)[0]]
    if bad:
        fail(ValueError(f"--set takes KEY=VALUE, e.g. --set bandwidth=100mbit; got {', '.join(map(repr, bad))}"))
    options = dict(o.split("=", 1) for o in option)
    try:
        if kind not in ("list", "restore"):
            fault = chaos.fault_class(kind)  # an unknown kind is named before a missing target
            if not target:
                raise chaos.FaultInputError(f"fault {kind} needs a target, e.g. dfslab fault {name} {kind} osd.1")
            effective = fault.check_options(options)  # nothing is touched before this passes
        attached = cluster.attach(name)
    except (*USER_ERRORS, chaos.FaultError) as exc:
        fail(exc)
    try:
        if kind == "list" and as_json:
            kinds = {k: {"help": chaos.fault_class(k).help, "options": chaos.fault_class(k).option_defaults()}
                     for k in sorted(chaos.FAULTS)}
            print(json.dumps({"active": chaos.active(attached), "kinds": kinds}, indent=2))
        elif kind == "list":
            for f in chaos.active(attached):
                print(f"active: {f['kind']} {f['target']}")
            for k in sorted(chaos.FAULTS):
                cls = chaos.fault_class(k)
                opts = ", ".join(f"{o}={d}" for o, d in cls.option_defaults().items())
                print(f"{k:<10} {cls.help}" + (f" [options: {opts}]" if opts else ""))
        elif kind == "restore":
            undone = chaos.restore_all(attached)
            console.print(f"[green]✓[/] undid {len(undone)} fault(s): " + ", ".join(f"{f['kind']} {f['target']}" for f in undone))
        else:
            done = chaos.inject(attached, kind, target, **options)
            shown = ", ".join(f"{k}={v}" + ("" if k in options else " (default)") for k, v in effective.items() if v is not None)
            console.print(f"[yellow]injected[/] {done.kind} {done.target}" + (f" ({shown})" if shown else "")
                          + f"; undo with: dfslab fault {name} restore", highlight=False)
    except chaos.FaultError as exc:
        fail(exc)
    finally:
        attached.close()


@app.command()
def verify(
    name: str = NameArg(),
    manifest: Path = typer.Argument(..., help="manifest.json of a seeded dataset (runs/<id>/integrity/)"),
    journals: List[Path] = typer.Argument(None, help="journals of acknowledged writes"),
    timeout: float = typer.Option(30, help="seconds a read may take before the object counts as lost"),
) -> None:
    """Read back every seeded and acknowledged object; exit 1 if any is lost or corrupt."""
    argv = [sys.executable, "-m", "dfslab.chaos.integrity", "verify", str(manifest.resolve()),
            *[str(j.resolve()) for j in journals or []]]
    try:
        wrapped, env = cluster.client_command(name, argv)
    except USER_ERRORS as exc:
        fail(exc)
    res = subprocess.run(wrapped, env={**env, "DFSLAB_VERIFY_TIMEOUT": str(timeout)}, capture_output=True, text=True)
    if res.returncode != 0:
        fail(RuntimeError(f"verify failed: {res.stderr.strip()[-500:]}"))
    result = json.loads(res.stdout)
    print(json.dumps(result, indent=2))
    if result["lost"] or result["corrupt"]:
        console.print(f"[bold red]{result['lost']} lost, {result['corrupt']} corrupt[/] of {result['checked']}")
        raise typer.Exit(1)
    console.print(f"[green]✓[/] all {result['checked']} intact")


@app.command()
def render(
    spec_file: Path = typer.Argument(..., help="cluster spec or experiment (YAML): ceph with runtime kubernetes and "
                                               "kubernetes.kubeconfig, or external with external.posix"),
    out: Path = typer.Option(..., "-o", "--out", help="a new or empty directory for the YAML files"),
    image: Optional[str] = typer.Option(None, help="dfslab's image as your nodes pull it (default: kubernetes.image)"),
    kubeconfig: Optional[Path] = typer.Option(None, help="also have this cluster's API server judge every object "
                                                        "(server-side dry run: nothing is made)"),
    context: Optional[str] = typer.Option(None, help="the kubeconfig context (default: its current one)"),
) -> None:
    """Write every Kubernetes manifest SPEC_FILE stands for, to review and apply yourself.

    Ceph: Rook's CRDs, RBAC and operator, the tuning override and the CephCluster, pools and
    CephFilesystem that `dfslab up` would apply. A mounted Lustre, GPFS, BeeGFS or NFS path
    (filesystem external, external.posix): a DaemonSet of `fio --server` pods on the nodes
    labelled dfslab.io/fio-client=true, each mounting the path from its node; list those nodes
    under external.clients and `dfslab run` drives them all at once.

    Every object is checked against Kubernetes 1.34's schema (strict: an unknown field is an
    error) before anything is written; with --kubeconfig the API server judges them too.
    """
    from . import render as rendering
    try:
        spec = rendering.load_cluster_spec(spec_file)
        with LiveProgress() as progress:
            done = rendering.render(spec, out, image, str(kubeconfig.expanduser().absolute()) if kubeconfig else None,
                                    context, progress)
    except USER_ERRORS as exc:
        fail(exc)
    for path in done.files:
        console.print(f"[green]✓[/] {path}", highlight=False)
    console.print(f"{done.objects} objects; {done.offline_checked} checked against Kubernetes "
                  f"{rendering.KUBERNETES_VERSION}'s schema (strict)", highlight=False)
    if done.offline_skipped:
        console.print(f"  no built-in schema (a CRD defines them): {', '.join(done.offline_skipped)}", highlight=False)
    if kubeconfig:
        console.print(f"{done.server_checked} judged by the API server (dry run)", highlight=False)
        if done.server_skipped:
            console.print(f"  [yellow]not served there[/] (their CRD is not installed): {', '.join(done.server_skipped)}",
                          highlight=False)
    console.print(f"apply: kubectl apply --server-side -f {out}  (CRDs first where the set holds them)", highlight=False)


data_app = typer.Typer(help="Datasets for query pushdown: columnar RADOS objects with a manifest.", no_args_is_help=True)
app.add_typer(data_app, name="data")


def _engine(name: str):
    """A pushdown engine on the cluster's client node, with cls_dfslab built for the OSDs."""
    from . import native
    from .pushdown import ENGINE, TARGET, Engine
    from .registry import TARGETS
    try:
        native.build_class()
        state, spec = cluster.load(name)
        if TARGET not in backend_class(spec).targets_for(spec):
            raise cluster.ClusterError(f"cluster {name!r} runs {spec.filesystem}; query pushdown needs "
                                       f"{TARGETS[TARGET].says} (target {TARGET})")
        argv, env = cluster.client_command(name, ENGINE)
    except (native.BuildError, *USER_ERRORS) as exc:
        fail(exc)
    return Engine.start(argv, env)


@data_app.command("load")
def data_load(
    name: str = NameArg("cluster name (Ceph)"),
    rows: int = typer.Option(1_000_000, help="synthetic rows (columns id, a, b, c, qty, cat; c uniform in [0, 1))"),
    objects: int = typer.Option(16, help="RADOS objects (one row group each)"),
    dataset: str = typer.Option("ds", "--name", help="dataset name, used as the table in queries"),
    seed: int = typer.Option(0, help="seed of the synthetic data"),
    source: Optional[Path] = typer.Option(None, "--from", help="a Parquet or CSV file instead of synthetic data"),
) -> None:
    """Write a dataset into the cluster's `dfslab` pool: one object per row group plus a manifest.

    dfslab data load small --rows 1000000 --objects 16 · dfslab data load small --from trips.parquet --name trips
    """
    from .pushdown import QueryError
    from .pushdown.query import check_dataset_name
    if rows < 1 or objects < 1 or objects > rows:
        fail(ValueError("--rows and --objects must be positive, with at least one row per object"))
    try:
        check_dataset_name(dataset)
    except QueryError as exc:
        fail(ValueError(f"--name: {exc}"))
    request = {"op": "load", "dataset": dataset, "rows": rows, "objects": objects, "seed": seed}
    if source is not None:
        if not source.is_file():
            fail(ValueError(f"--from: no such file {source}"))
        request["path"] = str(source.resolve())
    with _engine(name) as engine, console.status(f"writing {objects} objects"):
        try:
            answer = engine.call(**request)
        except QueryError as exc:
            fail(exc)
    m = answer["manifest"]
    console.print(f"[green]dataset {dataset}[/]: {m['rows']} rows in {len(m['objects'])} objects, "
                  f"{human_bytes(m['bytes'])}, columns {', '.join(f'{n}:{t}' for n, t in m['types'].items())} "
                  f"({answer['seconds']:.1f} s)")


@app.command()
def query(
    name: str = NameArg("cluster name (Ceph)"),
    sql: str = typer.Argument(..., help="SELECT cols | count/sum/min/max/avg(col) FROM ds [WHERE col op value AND ...] [GROUP BY col]"),
    where: str = typer.Option("storage", help="storage: run inside the OSDs (cls_dfslab); client: read whole objects and compute here"),
    limit: Optional[int] = typer.Option(None, min=0, help="rows to return (all are counted); default 20 on the "
                                                          "terminal, every row with --json"),
    as_json: bool = typer.Option(False, "--json", help="the answer as JSON"),
) -> None:
    """Run a query on a dataset, inside the storage or on the client; same answer either way.

    dfslab query small "SELECT id, a FROM ds WHERE c < 0.01" --where storage
    dfslab query small "SELECT cat, count(*), avg(a) FROM ds WHERE c < 0.1 GROUP BY cat" --where client
    """
    from .pushdown import QueryError
    if where not in ("storage", "client"):
        fail(ValueError(f"--where: storage or client, got {where!r}"))
    with _engine(name) as engine:
        try:
            # The limit goes to the engine: rows nobody shows never cross the pipe.
            answer = engine.call(op="query", sql=sql, where=where, limit=limit if limit is not None or as_json else 20)
        except QueryError as exc:
            fail(exc)
    if as_json:
        print(json.dumps(answer, indent=2))
        return
    table = Table(*answer["columns"], box=None)
    for row in answer["rows"]:
        table.add_row(*[f"{v:.6g}" if isinstance(v, float) else str(v) for v in row])
    Console().print(table)
    share = answer["bytes_moved"] / answer["dataset_bytes"] if answer["dataset_bytes"] else 0
    shown = f" (first {len(answer['rows'])} shown; --limit N)" if len(answer["rows"]) < answer["nrows"] else ""
    console.print(f"{answer['nrows']} row(s){shown} · {human_bytes(answer['bytes_moved'])} moved ({share:.1%} of the "
                  f"dataset's {human_bytes(answer['dataset_bytes'])}) · {answer['seconds']:.3f} s · where={where}")


images_app = typer.Typer(help="Container images for `runtime: docker`, built here from Debian's mirror (no registry).",
                         no_args_is_help=True)
app.add_typer(images_app, name="images")


@images_app.command("build")
def images_build(rebuild: bool = typer.Option(False, help="build even if an image for the current package versions exists")) -> None:
    """Build the storage image: debootstrap Debian 12 with Ceph and GlusterFS from Debian's packages,
    import it into dfslab's own dockerd. Skipped while apt offers the same versions (~1.5 min when it runs)."""
    from . import deps
    from .runtime import engine, images
    try:
        with LiveProgress() as progress:
            deps.ensure_runtime("docker", progress)
            image = images.ensure(progress, rebuild=rebuild)
            elapsed = time.monotonic() - progress.start
    except USER_ERRORS as exc:
        fail(exc)
    finally:
        engine.stop_if_unused()  # the engine runs while docker clusters do, not after a build
    print(f"{image} ({elapsed:.1f}s)")


@images_app.command("list")
def images_list() -> None:
    """The images dfslab's engine holds, and which one the current package versions select."""
    from . import deps
    from .runtime import engine, images
    try:
        deps.ensure_runtime("docker", lambda step, detail: print(f"{step} {detail}", file=sys.stderr))
        engine.start()
        print(engine.docker("images", images.REPO).stdout, end="")
        print(f"current: {images.built_for(images.candidate_versions()) or 'none (dfslab images build)'}")
    except USER_ERRORS as exc:
        fail(exc)
    finally:
        engine.stop_if_unused()


@app.command()
def plan(
    layout: Path = typer.Argument(..., help="a layout file: racks, hosts (OSDs, sizes, NIC, disk speed), pools, failures"),
    compare_with: Optional[Path] = typer.Option(None, "--compare", help="a second layout, shown side by side"),
) -> None:
    """Placement, balance, failures and growth of a Ceph cluster too big for this box.

    Ceph's own tools do the work: crushtool compiles the CRUSH map, a scratch ceph-mon makes the
    OSDs and pools, osdmaptool maps every PG, runs the upmap balancer and takes OSDs out. Writes
    runs/plan-<name>-<time>/ with plan.json and report.html (see examples/plan-1000.yaml).
    """
    from .plan.analysis import plan as make_plan
    from .plan.layout import Layout
    from .plan.report import save, summary_lines, write
    from .results import runs_root
    from .spec import _problems, read_yaml
    from pydantic import ValidationError
    layouts = []
    for path in [layout] + ([compare_with] if compare_with else []):
        try:
            layouts.append(Layout.model_validate(read_yaml(path)))
        except ValidationError as exc:
            fail(SpecError(_problems(exc), str(path)))
        except SpecError as exc:
            fail(exc)
    out = runs_root() / f"plan-{'-vs-'.join(l.name for l in layouts)}-{time.strftime('%Y%m%d-%H%M%S')}"
    plans = []
    with LiveProgress() as progress:
        for lay in layouts:
            try:
                plans.append(make_plan(lay, out / lay.name, progress))
            except ValueError as exc:  # a failure naming a host or OSD the layout does not have
                fail(SpecError([("", str(exc))], lay.name))
            save(plans[-1], out / lay.name)
    for line in (line for p in plans for line in summary_lines(p)):
        console.print(line)
    print(f"report: {write(plans, out).resolve()}")


@app.command()
def schema(
    kind: str = typer.Argument(..., metavar="spec|experiment", help="which file's schema"),
) -> None:
    """Print the JSON Schema of a cluster spec or an experiment (from the models that validate them).

    Save it and point your editor at it, and files are completed and checked while you type: with the YAML language server (VS Code's YAML extension, Neovim, Emacs), dfslab schema experiment > .dfslab-experiment.json, then a first line # yaml-language-server: $schema=.dfslab-experiment.json in the file."""
    from .schema import SCHEMAS
    if kind not in SCHEMAS:
        fail(ValueError(f"no schema {kind!r}; give one of: {', '.join(SCHEMAS)}"))
    print(json.dumps(SCHEMAS[kind](), indent=2))


@app.command()
def capabilities(
    spec_file: Optional[Path] = typer.Argument(None, metavar="[SPEC]", help="a cluster spec: judge that cluster "
                                                                            "(default: every kind of cluster)"),
    as_json: bool = typer.Option(False, "--json", help="one object per cell: cluster, filesystem, capability, ok, reason"),
) -> None:
    """What each kind of cluster can do: every workload and target, fault kind, the checksummed
    integrity check, the byte ledger and the step watch, yes or the reason it is refused.

    Computed from the declarations that refuse a run before it starts (a backend's targets, a
    runtime's clients, each fault's check), so a run is refused exactly where this says no. The
    kinds: local, docker, kubernetes (the local one), kubernetes-yours (kubernetes.kubeconfig),
    external-ceph, external-posix, external-s3, each judged on a spec with every optional daemon
    on; give SPEC to judge yours, e.g. dfslab capabilities examples/rook-yours.yaml."""
    from . import capabilities as caps
    try:
        specs = [(spec.name, spec) for spec in [load_spec(spec_file)]] if spec_file else None
        found = caps.matrix(specs)
    except USER_ERRORS as exc:
        fail(exc)
    if as_json:
        print(json.dumps([c.as_json() for c in found], indent=1))
        return
    for line in caps.text(found):
        console.print(line, highlight=False, soft_wrap=True)


@app.command()
def version() -> None:
    """Print dfslab's version."""
    print(__version__)


def _log_unexpected(exc: BaseException) -> Path:
    """The traceback goes to a file; the user gets one line with its path."""
    from .state import dfslab_home
    import tempfile
    import traceback
    for folder in (dfslab_home() / "logs", Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"dfslab-error-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
            path.write_text(f"dfslab {' '.join(sys.argv[1:])}\n\n" + "".join(traceback.format_exception(exc)))
            return path
        except OSError:
            continue
    return Path("/dev/null")


def whole_paragraphs(doc: str) -> str:
    """A docstring's paragraphs each on one line: the help renderer keeps a docstring's line breaks
    and wraps again at the terminal's width, which cut sentences mid-line (`raw tool output,⏎results.csv`)."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def _whole_help(*groups: typer.Typer) -> None:
    for group in groups:
        for info in group.registered_commands:
            if info.callback is not None and info.callback.__doc__:
                info.callback.__doc__ = whole_paragraphs(info.callback.__doc__)


_whole_help(app, data_app, images_app)


def _help_value(option: TyperOption, ctx: typer.Context) -> str | None:
    """What an option's help shows after it: nothing for a flag (typer shows `<bool>`), the option's
    own name for free text (`--cluster CLUSTER`, where typer shows `<str>`), typer's own otherwise."""
    if option.is_flag:
        return None
    shown = _typer_help_value(option, ctx)
    return option.name.upper() if shown == "<str>" and option.name else shown


_typer_help_value = TyperOption.display_type_rich
TyperOption.display_type_rich = _help_value  # type: ignore[method-assign]


def main() -> None:
    """Exit codes: 0 done; 1 a run, a check or a teardown found a problem (a failed workload, lost
    data, an unknown cluster, something left behind), or dfslab itself failed unexpectedly;
    2 bad input (spec, name, option), refused before anything changed; 130 interrupted."""
    try:
        app(prog_name="dfslab")
    except SystemExit:
        raise
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the one place that turns any failure into one line
        log = _log_unexpected(exc)
        console.print(f"[bold red]error:[/] unexpected {type(exc).__name__}: {exc} (traceback in {log}; please report it)",
                      highlight=False, soft_wrap=True)
        sys.exit(1)


if __name__ == "__main__":
    main()

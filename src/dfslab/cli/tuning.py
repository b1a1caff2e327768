"""`dfslab quickstart` and `dfslab tune`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from .. import cluster
from ..terminal import LiveProgress, console
from .common import USER_ERRORS, app, fail
from .running import run


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
                                                         "settings at each rung: after 1, REDUCTION, REDUCTION² ... "
                                                         "repetitions, those below --reps"),
    seed: int = typer.Option(0, help="the search's random seed (order of the grid, TPE's draws)"),
    redeploy: bool = typer.Option(False, "--redeploy", help="a fresh cluster for every setting, even where it "
                                  "could change in place"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print what the search would measure within the budget "
                                 "(settings, costs, how many fit) and exit; nothing is started"),
) -> None:
    """Search the swept cluster settings for the best one within a time budget.

    Each setting runs the one workload step the objective names, repeated up to --reps times;
    successive halving (Optuna) stops settings that fall behind after 1, then 2 repetitions (at the
    default --reps 3; 1, 2, 4, 8 ... below --reps, by --reduction 2).
    The winner and the default configuration are then measured afresh, side by side, and
    compared with a 95 % interval: a winner of a noisy search is not claimed on its own numbers.
    The last run directory holds tune.json, best-spec.yaml, best-experiment.yaml and the report.
    """
    from ..tune import Objective, TuneError, plan as tune_plan, tune as run_tune
    from ..units import parse_duration
    if (maximize is None) == (minimize is None):
        fail(ValueError("give one objective: --maximize \"WORKLOAD [PARAM=VALUE ...] METRIC\" or --minimize ..."))
    try:
        seconds = parse_duration(budget)
    except ValueError as exc:
        fail(ValueError(f"--budget: {exc}"))
    try:
        objective = Objective.parse(maximize or minimize or "", maximize is not None)
        if dry_run:
            print("\n".join(tune_plan(experiment, objective, seconds, reps=reps, reduction=reduction)))  # the plan on stdout, as run --dry-run's
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
    from ..ledger import FROM_STORAGE_FLOOR
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

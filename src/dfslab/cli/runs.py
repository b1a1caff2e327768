"""Commands on run directories: runs, compare (and its --fail-if-worse gate), report."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from .. import cluster
from ..terminal import console
from ..units import UnitError, parse_percent, si
from .common import COMPARE_FIT, app, fail


@app.command()
def runs(
    root: Path = typer.Option(None, help="runs directory (default: $DFSLAB_RUNS or ./runs)"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """List stored runs, newest last. Run ids are printed whole: they are what you copy."""
    from ..results import list_runs
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
    from ..compare import compare_runs
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
    from ..compare import GATE_ALPHA, gate
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
    from ..results import runs_root
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
        if any(path.resolve() == p.resolve() for p in paths):
            # counted twice it would pass for two runs: intervals too narrow, a gate failing too often
            fail(ValueError(f"{part} is given twice in {text}: each run counts once; name different runs"))
        paths.append(path)
    if not paths:
        fail(ValueError("no run directory given: name one (runs/<id>) or several joined by commas"))
    return paths[0] if len(paths) == 1 else paths


MARKS = {"different": "*", "same": "="}


def _measured(runs: Path | list[Path]) -> str:
    """What a side of a comparison has: its workloads and their summary metrics."""
    from ..results import RunDir
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
    from ..terminal import print_table
    print_table(headers, lines, title, wrap, drop)


def _print_comparison(run_a: Path | list[Path], run_b: Path | list[Path], all_metrics: bool = False,
                      margin: float = 0.10, rows: list | None = None) -> None:
    from ..compare import compare_runs, headline, verdict
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
    from .. import report as rep
    run_dir = _run_path(run)
    if not (run_dir / "provenance.json").exists():
        fail(ValueError(f"{run} is not a run directory (no provenance.json); give runs/<id>/ or a run id from "
                        "`dfslab runs`"))
    from ..results import RunDir
    if not (run_dir / "results.parquet").exists():  # runs made before Parquet existed
        RunDir(run_dir).write_parquet()
    print(rep.build(run_dir))

"""Commands on clusters: up, status, scale, down, list, exec."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from .. import cluster
from ..terminal import LiveProgress, console
from ..backends import backend_class, require
from ..backends.abilities import Grows
from ..spec import load_spec
from ..state import list_clusters, teardown_order
from ..units import human_bytes
from .common import NameArg, RUNTIME_HELP, runtime_option, USER_ERRORS, _cluster_name, app, fail


@app.command()
def up(
    spec_file: Path = typer.Argument(..., help="cluster spec (YAML); every field: docs/spec.md, or dfslab schema spec"),
    name: Optional[str] = typer.Option(None, callback=_cluster_name, help="override the spec's name (run several copies side by side)"),
    timeout: float = typer.Option(300, help="seconds to wait for HEALTH_OK before giving up and tearing down"),
    keep_on_failure: bool = typer.Option(False, help="leave a failed cluster in place to debug it (remove with `dfslab down`)"),
    runtime: Optional[str] = typer.Option(None, help=RUNTIME_HELP, callback=runtime_option),
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
    peek = backend_class(spec).facts.peek
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
            result = require(attached.backend, Grows).grow(add_bricks, progress, timeout)
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
    from ..state import ClusterState
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

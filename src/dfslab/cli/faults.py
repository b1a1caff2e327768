"""`dfslab fault` and `dfslab verify`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

import typer

from .. import cluster
from ..terminal import console
from .common import NameArg, USER_ERRORS, app, fail


def _fault_kinds() -> str:
    from ..chaos import fault_kinds
    return " | ".join(sorted(fault_kinds()))


@app.command()
def fault(
    name: str = NameArg(),
    kind: str = typer.Argument(..., help=f"{_fault_kinds()}, or: restore, list"),
    target: Optional[str] = typer.Argument(None, help="osd.1, mon.b, mds.a, mgr.x, a node name, node2/b0 (brick), or rook (fault operator)"),
    option: List[str] = typer.Option([], "--set", help="fault option KEY=VALUE, e.g. --set bandwidth=100mbit "
                                                       "(`dfslab fault NAME list` shows each kind's options)"),
    as_json: bool = typer.Option(False, "--json", help="with list: active faults and every kind as JSON (refused: why "
                                                          "this cluster does not take it, or null)"),
) -> None:
    """Break a running cluster on purpose, and put it back.

    dfslab fault small kill osd.1 · dfslab fault small partition node2 ·
    dfslab fault small degrade node3 --set bandwidth=100mbit · dfslab fault small fill osd.0 ·
    dfslab fault small restore
    """
    from .. import chaos
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
            targets = chaos.targets_of(attached)
            kinds = {k: {"help": chaos.fault_class(k).help, "options": chaos.fault_class(k).option_defaults(),
                         "refused": chaos.refusal_of(k, attached.spec), "targets": targets.get(k)}
                     for k in sorted(chaos.fault_kinds())}
            print(json.dumps({"active": chaos.active(attached), "kinds": kinds}, indent=2))
        elif kind == "list":
            _list_kinds(attached)
        elif kind == "restore":
            undone = chaos.restore_all(attached)
            console.print(f"[green]✓[/] undid {len(undone)} fault(s): " + ", ".join(f"{f['kind']} {f['target']}" for f in undone))
        else:
            done = chaos.inject(attached, kind, target, **options)
            shown = ", ".join(f"{k}={v}" + ("" if k in options else " (default)") for k, v in effective.items() if v is not None)
            undo = (f"undo with: dfslab fault {name} restore" if chaos.fault_class(kind).undoable
                    else f"it is not undone: {chaos.fault_class(kind).undo.__doc__ or 'nothing puts it back'}")
            console.print(f"[yellow]injected[/] {done.kind} {done.target}" + (f" ({shown})" if shown else "")
                          + f"; {undo}", highlight=False)
    except chaos.FaultError as exc:
        fail(exc)
    finally:
        attached.close()


def _list_kinds(attached) -> None:
    """The active faults, the kinds this cluster takes (each with its help and options), its
    daemons by the names kill and stop take, and the kinds it does not take, each with why."""
    from .. import chaos
    for f in chaos.active(attached):
        print(f"active: {f['kind']} {f['target']}")
    refusals = {k: chaos.refusal_of(k, attached.spec) for k in sorted(chaos.fault_kinds())}
    targets = chaos.targets_of(attached)
    for k in (k for k, why in refusals.items() if why is None):
        cls = chaos.fault_class(k)
        opts = ", ".join(f"{o}={d}" for o, d in cls.option_defaults().items())
        print(f"{k:<10} {cls.help}" + (f" [options: {opts}]" if opts else ""))
        if targets.get(k):
            print(f"{'':<10} targets here: {', '.join(targets[k])}")
    daemons = attached.backend.daemon_names(attached.spec)
    if daemons:
        print(f"daemons of {attached.spec.name} (kill, stop): {', '.join(daemons)}")
    for k, why in refusals.items():
        if why is not None:
            print(f"not here: {k:<10} {why}")


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

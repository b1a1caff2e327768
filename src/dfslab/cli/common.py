"""What every command shares: the app, its callback, the name check, the one-line failure."""

from __future__ import annotations

import signal
import time
from typing import Optional

import typer

from .. import __version__, cluster
from ..terminal import console
from ..backends import BackendError
from ..runtime import RuntimeError_
from ..safety import BadName, check_name
from ..spec import SpecError



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


RUNTIME_HELP = ("override the spec's runtime: local (network namespaces), docker (every daemon in its own "
                "container; the image is built on first use, see `dfslab images build`), kubernetes (a local "
                "Kubernetes dfslab starts, or yours: kubernetes.kubeconfig in the spec) or host (a cluster you "
                "run, reached from this machine)")


def runtime_option(value: Optional[str]) -> Optional[str]:
    """--runtime checked on the command line (a wrong one is the command's mistake, not the file's)."""
    from ..registry import spec_runtimes
    if value is not None and value not in spec_runtimes():
        raise typer.BadParameter(f"{value!r} is not a runtime; give one of {', '.join(spec_runtimes())}")
    return value


USER_ERRORS = (SpecError, cluster.ClusterError, BackendError, RuntimeError_, BadName)


def fail(exc: Exception, code: int = 2) -> None:
    """One line naming what is wrong; exit 2 (bad input) unless a finding (1) says otherwise: an
    unknown cluster name is one on every command (README's exit codes)."""
    console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
    raise typer.Exit(1 if isinstance(exc, cluster.UnknownCluster) else code)


RESULTS_FIT = (("parameters", "note"),
               ("note", "from storage (ratio)", "time avg (ms)", "latency p99 (ms)", "latency avg (ms)"))
COMPARE_FIT = (("parameters", "why"), ("why", "A", "B"))

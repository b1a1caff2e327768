"""`dfslab render`, and the pushdown datasets: `dfslab data load`, `dfslab query`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from .. import cluster
from ..terminal import LiveProgress, console
from ..backends import backend_class
from ..units import human_bytes
from .common import NameArg, USER_ERRORS, app, fail


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
    from .. import render as rendering
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
    """A pushdown worker on the cluster's client node, with cls_dfslab built for the OSDs."""
    from .. import native
    from ..pushdown import WORKER, TARGET, QueryWorker
    from ..registry import TARGETS
    try:
        native.build_class()
        state, spec = cluster.load(name)
        if TARGET not in backend_class(spec).targets_for(spec):
            raise cluster.ClusterError(f"cluster {name!r} runs {spec.filesystem}; query pushdown needs "
                                       f"{TARGETS[TARGET].says} (target {TARGET})")
        argv, env = cluster.client_command(name, [*WORKER, cluster.bench_pool(name)])
    except (native.BuildError, *USER_ERRORS) as exc:
        fail(exc)
    return QueryWorker.start(argv, env)


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
    from ..pushdown import QueryError
    from ..pushdown.query import check_dataset_name
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
    from ..pushdown import QueryError
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

"""The quickstart that `make demo` runs: up, a short rados bench write/seq, status, down,
and a run directory with its report."""

from __future__ import annotations

from pathlib import Path

from . import cluster, report
from .backends import Progress
from .results import RunDir
from .runtime import attach_runtime
from .spec import ClusterSpec
from .state import ClusterState
from .workloads import Runner, workload

RADOS_PARAMS = {"seconds": 10, "threads": 16, "object_size": "4MiB", "modes": ["write", "seq"]}


def run(spec: ClusterSpec, progress: Progress, runs_root: Path | None = None, seconds: int = 10) -> Path:
    run_dir = RunDir.create(spec.name, runs_root)
    run_dir.start(run_dir.write_spec(spec.model_dump(mode="json")))
    cluster.up(spec, progress)
    try:
        state = ClusterState(spec.name)
        runtime = attach_runtime(state)
        _, env = cluster.client_command(spec.name, ["true"])
        runner = Runner(runtime.command, env, run_dir.raw_dir)
        progress("rados bench", f"write then seq, {seconds} s each, 16 threads, 4 MiB objects")
        run_dir.add(workload("radosbench").run(runner, {**RADOS_PARAMS, "seconds": seconds}, 0))
        progress("collecting status", spec.name)
        run_dir.write_json("status.json", cluster.status(spec.name))
    finally:
        progress("tearing down", spec.name)
        cluster.down(spec.name)
    run_dir.finish()
    progress("writing report", str(run_dir.path))
    return report.build(run_dir.path)

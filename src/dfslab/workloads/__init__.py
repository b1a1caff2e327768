"""Workloads: real tools doing real I/O against a cluster, each one module behind `Workload`.

A workload gets a `Runner` (runs commands on the cluster's client node with the backend's
client config, keeps raw output) and returns `Measurement`s, which become rows of the run's
one normalized result table. To add a workload: a module with a `Workload` subclass,
registered in `WORKLOADS`.
"""

from __future__ import annotations

import json
import subprocess
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any


@dataclass
class Measurement:
    workload: str
    metric: str
    value: float
    unit: str
    params: dict[str, Any] = field(default_factory=dict)
    repetition: int = 0
    t: float | None = None  # seconds into the run, for per-second samples

    def row(self) -> dict[str, Any]:
        row = asdict(self)
        row["params"] = json.dumps(self.params, sort_keys=True)
        return row


class WorkloadError(RuntimeError):
    """A tool failed; the message names it and where its raw output is."""


@dataclass
class Runner:
    command: Any  # callable(node, argv) -> argv wrapped to run there
    env: dict[str, str]
    raw_dir: Path

    def run(self, argv: list[str], name: str, node: str = "client", timeout: float = 600) -> str:
        """Run a tool, keep its output untouched in raw/<name>.txt, return it."""
        res = subprocess.run(self.command(node, argv), capture_output=True, text=True, env=self.env, timeout=timeout)
        self.raw_dir.mkdir(parents=True, exist_ok=True)
        path = self.raw_dir / f"{name}.txt"
        path.write_text(f"$ {' '.join(argv)}\n{res.stdout}" + (f"\n--- stderr ---\n{res.stderr}" if res.stderr else ""))
        if res.returncode != 0:
            raise WorkloadError(f"`{' '.join(argv)}` exited {res.returncode}; output in {path}: {res.stderr.strip()[-300:]}")
        return res.stdout


class Workload(ABC):
    name: str = "?"

    @abstractmethod
    def run(self, runner: Runner, params: dict[str, Any], repetition: int) -> list[Measurement]:
        """Run once with `params`; return what was measured."""


WORKLOADS = {
    "radosbench": "dfslab.workloads.radosbench:RadosBench",
}


def workload(name: str) -> Workload:
    if name not in WORKLOADS:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(sorted(WORKLOADS))}")
    module, _, cls = WORKLOADS[name].partition(":")
    return getattr(import_module(module), cls)()

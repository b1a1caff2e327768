"""The experiment file: a cluster (inline or a path), baselines, workloads whose list-valued
parameters expand into every combination (as cbt does), repetitions and a time budget.

    name: quickstart
    cluster: ceph-small.yaml        # relative to this file, or an inline spec mapping
    repetitions: 2
    time_budget: 5min
    baselines: {network: true, disk: true, seconds: 2}
    workloads:
      - type: fio
        target: [cephfs, rbd]
        rw: [randread, write]
        bs: [4KiB, 1MiB]
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from .chaos.entry import FaultEntry
from .fields import Seconds, Strict
from .spec import ClusterSpec, SpecError, _problems, check_name, parse_spec, read_yaml
from .workloads import FORMER_NAMES, WORKLOADS, Workload, current_name, workload


class Baselines(Strict):
    network: bool = Field(True, description="iperf3 between every node pair and the client")
    disk: bool = Field(True, description="fio on the disk that backs the OSDs")
    seconds: int = Field(3, ge=1, le=60)


class Sampler(Strict):
    interval: Seconds = "1s"
    prometheus_port: int = Field(0, ge=0, le=65535, description="serve latest samples on 127.0.0.1:PORT (0: off)")


class Integrity(Strict):
    seed_objects: int = Field(40, ge=0, le=10000, description="objects (and CephFS files) written before the faults")
    recovery_timeout: Seconds = Field("180s", description="how long to wait for HEALTH_OK after an undo")


class ExperimentFile(Strict):
    name: str
    cluster: str | dict[str, Any]
    repetitions: int = Field(1, ge=1, le=50)
    time_budget: Seconds | None = None
    baselines: Baselines = Field(default_factory=Baselines)
    sampler: Sampler = Field(default_factory=Sampler)
    workloads: list[dict[str, Any]] = Field(min_length=1)
    faults: list[FaultEntry] = Field(default_factory=list)
    integrity: Integrity = Field(default_factory=Integrity)
    runtimes: list[Literal["local", "docker"]] = Field(
        default_factory=list, max_length=6,
        description="run the whole experiment once per entry, in order (a fresh cluster each), then compare each "
                    "runtime's runs with the first runtime's: INFN's containerized-vs-host question. "
                    "[local, docker, docker, local] pools each runtime's two runs and cancels drift over time")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value, "experiment")


@dataclass
class Step:
    """One combination of one workload entry, run `repetitions` times."""

    index: int  # position in the experiment's workload list
    workload: Workload
    params: BaseModel
    given: dict[str, Any]  # the values as the user wrote them, for labels

    @property
    def label(self) -> str:
        shown = ", ".join(f"{k}={'/'.join(map(str, v)) if isinstance(v, list) else v}" for k, v in self.given.items())
        return f"{self.workload.name}[{self.index}]" + (f" {shown}" if shown else "")


@dataclass
class Experiment:
    file: ExperimentFile
    cluster: ClusterSpec
    steps: list[Step]
    raw: dict[str, Any]
    notices: list[str] = field(default_factory=list)  # one line each, for the user (e.g. a former name)

    @property
    def name(self) -> str:
        return self.file.name

    def on_runtime(self, runtime: str) -> "Experiment":
        """The same experiment with its cluster on `runtime`."""
        return replace(self, cluster=self.cluster.model_copy(update={"runtime": runtime}))

    def estimate(self) -> float:
        return sum(s.workload.estimate(s.params) for s in self.steps) * self.file.repetitions


def former_name_notice(index: int, entry: Any) -> str | None:
    """One line if the entry names a workload by its former name."""
    kind = entry.get("type") if isinstance(entry, dict) else None
    if isinstance(kind, str) and kind in FORMER_NAMES:
        return (f"workloads[{index}]: type {kind} is now called {FORMER_NAMES[kind]}; "
                f"{kind} still works, write {FORMER_NAMES[kind]} to silence this")
    return None


def expand(index: int, entry: dict[str, Any]) -> list[Step]:
    """Every combination of an entry's list-valued parameters, each validated."""
    where = f"workloads[{index}]"
    if not isinstance(entry, dict) or "type" not in entry:
        raise SpecError([(where, "each workload needs a type: " + ", ".join(sorted(WORKLOADS)))])
    kind = entry["type"]
    if not isinstance(kind, str) or current_name(kind) not in WORKLOADS:
        raise SpecError([(f"{where}.type", f"unknown workload {kind!r}; valid: {', '.join(sorted(WORKLOADS))}")])
    wl = workload(kind)
    params = {k: v for k, v in entry.items() if k != "type"}
    if kind != wl.name:
        params = wl.from_former(kind, params)
    list_fields = {name for name, f in wl.Params.model_fields.items() if "list" in str(f.annotation)}
    axes = {k: v for k, v in params.items() if isinstance(v, list) and k not in list_fields
            or k in list_fields and isinstance(v, list) and v and isinstance(v[0], list)}
    fixed = {k: v for k, v in params.items() if k not in axes}
    steps = []
    for combo in itertools.product(*axes.values()) if axes else [()]:
        values = {**fixed, **dict(zip(axes, combo))}
        try:
            steps.append(Step(index, wl, wl.Params.model_validate(values), values))
        except ValidationError as exc:
            raise SpecError([(f"{where}.{p}" if p else where, m) for p, m in _problems(exc)]) from None
    return steps


def parse_experiment(data: Any, base_dir: Path, source: str = "experiment", runtime: str | None = None) -> Experiment:
    if not isinstance(data, dict):
        raise SpecError([("", "an experiment is a YAML mapping with name, cluster and workloads")], source)
    try:
        exp = ExperimentFile.model_validate(data)
    except ValidationError as exc:
        raise SpecError(_problems(exc), source) from None
    if isinstance(exp.cluster, str):
        path = (base_dir / exp.cluster)
        if not path.is_file():
            raise SpecError([("cluster", f"no cluster spec at {str(path)!r}; give a path relative to the experiment or an inline mapping")], source)
        try:
            cluster = parse_spec(read_yaml(path), str(path), runtime=runtime)
        except SpecError as err:
            raise SpecError([(f"cluster ({path.name}): {p}", m) for p, m in err.problems], source) from None
    else:
        try:
            cluster = parse_spec(exp.cluster, source, runtime=runtime)
        except SpecError as err:
            raise SpecError([(f"cluster.{p}", m) for p, m in err.problems], source) from None
    try:
        steps = [step for i, entry in enumerate(exp.workloads) for step in expand(i, entry)]
    except SpecError as err:
        raise SpecError(err.problems, source) from None
    bad = [(f"faults[{i}].during", f"there is no workloads[{f.during}] ({len(exp.workloads)} workload(s))")
           for i, f in enumerate(exp.faults) if f.during >= len(exp.workloads)]
    if bad:
        raise SpecError(bad, source)
    notices = [n for i, entry in enumerate(exp.workloads) if (n := former_name_notice(i, entry))]
    return Experiment(exp, cluster, steps, data, notices)


def load_experiment(path: str | Path, runtime: str | None = None) -> Experiment:
    """The experiment at `path`; `runtime` overrides its cluster's (dfslab run --runtime)."""
    return parse_experiment(read_yaml(path), Path(path).parent, str(path), runtime)


def load_run(run_dir: Path, runtime: str | None = None) -> Experiment:
    """The experiment of a stored run on that run's own cluster spec: the copies in the run
    directory (experiment.yaml, spec.yaml), not today's example files."""
    exp_path, spec_path = run_dir / "experiment.yaml", run_dir / "spec.yaml"
    if not exp_path.is_file() or not spec_path.is_file():
        raise SpecError([("", f"{run_dir} is not a run directory of `dfslab run` (it needs experiment.yaml and "
                              f"spec.yaml); give a run directory runs/<id>/ or an experiment file")], str(run_dir))
    data = read_yaml(exp_path)
    if not isinstance(data, dict):
        raise SpecError([("", "experiment.yaml is not a mapping")], str(exp_path))
    return parse_experiment({**data, "cluster": read_yaml(spec_path)}, run_dir, str(exp_path), runtime)

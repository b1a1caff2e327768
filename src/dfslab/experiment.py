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
import typing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from .chaos.entry import FaultEntry
from .fields import Seconds, Strict, field_units
from .registry import runtime_of, spec_runtimes
from .spec import ClusterSpec, SpecError, _problems, check_name, cluster_spec_model, model_in, parse_spec, read_yaml
from .units import ByteCount
from .workloads import FORMER_NAMES, WORKLOADS, Workload, current_name, workload


class Baselines(Strict):
    network: bool = Field(True, description="iperf3 between every node pair and the client")
    disk: bool = Field(True, description="fio on the disk that backs the OSDs")
    seconds: int = Field(3, ge=1, le=60)


class Sampler(Strict):
    interval: Seconds = "1s"
    prometheus_port: int = Field(0, ge=0, le=65535, description="serve latest samples on 127.0.0.1:PORT (0: off)")


CLIENT_KINDS = ("host", "job")  # where a step's tools can run (Runtime.client_kinds): experiment `client:`


class Integrity(Strict):
    seed_objects: int = Field(40, ge=0, le=10000, description="checksummed objects or files written on each target with a store (object pools, the POSIX mount, S3) before the faults")
    recovery_timeout: Seconds | None = Field(None, description="how long to wait for the cluster to be healthy again after an undo (unset: the filesystem's own, 180 s unless it says longer; dfslab capabilities and the dry run say it)")

    def timeout_for(self, backend) -> float:
        """The recovery wait: the one written, or what the filesystem takes at worst."""
        return self.recovery_timeout if self.recovery_timeout is not None else backend.facts.recovery_timeout_seconds


class ExperimentFile(Strict):
    name: str
    # A spec path or an inline spec; may be left out with `dfslab run --cluster NAME` (the running one's)
    cluster: str | dict[str, Any] | None = None
    repetitions: int = Field(1, ge=1, le=50)
    time_budget: Seconds | None = None
    baselines: Baselines = Field(default_factory=Baselines)
    sampler: Sampler = Field(default_factory=Sampler)
    workloads: list[dict[str, Any]] = Field(min_length=1)
    faults: list[FaultEntry] = Field(default_factory=list)
    integrity: Integrity = Field(default_factory=Integrity)
    server_cache: Literal["keep", "drop"] = Field(
        "keep", description="drop: empty the storage servers' caches before every step (Ceph: each OSD's BlueStore "
                            "cache; the page cache where the servers share this machine's kernel), so reads are cold "
                            "on the servers too; keep: as they are (the clients' side is cold either way)")
    on_failure: Literal["continue", "stop"] = Field(
        "continue", description="what a failed step does to the rest of the run: continue with the next step, or stop "
                                "(the steps left are listed as skipped; the cluster is torn down or kept as usual)")
    runs: int = Field(1, ge=1, le=20, description="run the whole experiment this many times, each on a fresh cluster; "
                                                 "with runtimes or cluster settings swept, interleaved (A B B A A B...) "
                                                 "so comparisons are tested over runs, which repetitions inside one run "
                                                 "cannot stand in for (dfslab run --runs N sets it too)")
    mirrored: bool = Field(False, description="with cluster settings swept: run the combinations forward, then "
                                              "backward (A B B A), so a drift over time cancels out")
    runtimes: list[str] = Field(
        default_factory=list, max_length=6,
        description="run the whole experiment once per entry, in order (a fresh cluster each), then compare each "
                    "runtime's runs with the first runtime's: INFN's containerized-vs-host question "
                    "(kubernetes: the local Kubernetes, Ceph by Rook, the tools on the host's client as on local; "
                    "kubernetes+job: the same with client: job, each tool a Job that mounts anew). "
                    "[local, docker, docker, local] pools each runtime's two runs and cancels drift over time")

    @field_validator("runtimes")
    @classmethod
    def _runtimes(cls, value: list[str]) -> list[str]:
        # The registered runtimes as they stand when the file is read (one registered later counts).
        for entry in value:
            runtime, plus, client = entry.partition("+")
            if runtime not in spec_runtimes() or (plus and client not in CLIENT_KINDS):
                raise ValueError(f"{entry!r} is not a runtime: give one of {', '.join(spec_runtimes())}, or one with "
                                 f"+{' or +'.join(CLIENT_KINDS)} for where its tools run (kubernetes+job)")
        return value
    client: Literal["auto", *CLIENT_KINDS] = Field(  # type: ignore[valid-type]
        "auto", description="where the workloads' tools run. host: in the client node's network namespace on this "
                            "machine, through the one long-lived FUSE mount dfslab keeps (runtime local and docker; "
                            "on runtime kubernetes too, so that a comparison with local measures the servers under "
                            "Kubernetes, not a different client); job: each tool a Kubernetes Job whose pod mounts "
                            "the filesystem anew, as a batch job would (runtime kubernetes; the only way on a "
                            "Kubernetes you run); auto: host where this machine reaches the cluster, else job")

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
        return self._label(with_bytes=False)

    @property
    def plan_label(self) -> str:
        """The label with every size a tool is handed as bytes too (`bs=4KiB (4096 B)`): the plan
        shows what will run, whatever spelling the file used."""
        return self._label(with_bytes=True)

    def _label(self, with_bytes: bool) -> str:
        sizes = {k for k, unit in field_units(type(self.params)).items() if unit == "B"}
        shown = ", ".join(f"{k}={self._value(k, v, k in sizes, with_bytes)}" for k, v in self.given.items())
        return f"{self.workload.name}[{self.index}]" + (f" {shown}" if shown else "")

    def _value(self, key: str, given: Any, size: bool, with_bytes: bool) -> str:
        if size:  # as parsed, in its binary unit: `4k` and `4KiB` are one step, shown alike
            exact = getattr(self.params, key)
            return f"{ByteCount(exact)} ({exact} B)" if with_bytes else str(ByteCount(exact))
        return "/".join(map(str, given)) if isinstance(given, list) else str(given)


@dataclass
class Variant:
    """One combination of the cluster's sweep axes: its settings and the spec they make."""

    label: str  # "ceph.replica_size=2, network.bandwidth=1gbit"
    settings: dict[str, Any]
    cluster: ClusterSpec


@dataclass
class Experiment:
    file: ExperimentFile
    cluster: ClusterSpec
    steps: list[Step]
    raw: dict[str, Any]
    notices: list[str] = field(default_factory=list)  # one line each, for the user (e.g. a former name)
    variants: list[Variant] = field(default_factory=list)  # cluster settings swept (none: one cluster)
    source: str = "experiment"  # the file it was read from, which every later error names

    @property
    def name(self) -> str:
        return self.file.name

    def fault_load(self, fault: FaultEntry) -> tuple[Step | None, float | None]:
        """The step a fault is timed into (its workload's first combination) and that step's
        `seconds` of load (None for a sized or self-bounded step)."""
        step = next((s for s in self.steps if s.index == fault.during), None)
        seconds = getattr(step.params, "seconds", None) if step else None
        return step, seconds if isinstance(seconds, (int, float)) else None

    def fault_timing_problems(self) -> list[tuple[str, str]]:
        """A fault timed after its step's load has ended would break an idle cluster: refused."""
        problems = []
        for i, fault in enumerate(self.file.faults):
            step, seconds = self.fault_load(fault)
            if seconds is not None and fault.at >= seconds:
                problems.append((f"faults[{i}].at", f"{fault.at:g} s is not inside workloads[{fault.during}]'s "
                                 f"{seconds:g} s of load ({step.label}): give at: below {seconds:g}s, or more "
                                 "seconds to the step"))
        return problems

    def on_runtime(self, entry: str) -> "Experiment":
        """The same experiment with its cluster on the runtime of a `runtimes:` entry (and its client)."""
        runtime, client = runtime_entry(entry)
        file = self.file.model_copy(update={"client": client}) if client else self.file
        return replace(self, file=file, cluster=self.cluster.model_copy(update={"runtime": runtime}))

    def client_kind(self, spec: ClusterSpec) -> str:
        """Where the tools run on a cluster of `spec` (host or job); SpecError if it cannot be so."""
        return client_kind(self.file.client, spec)

    def estimate(self) -> float:
        return sum(s.workload.estimate(s.params) for s in self.steps) * self.file.repetitions


def runtime_entry(entry: str) -> tuple[str, str | None]:
    """(runtime, client or None) of a `runtimes:` entry: kubernetes+job is (kubernetes, job)."""
    runtime, _, client = entry.partition("+")
    return runtime, client or None


def client_kind(asked: str, spec: ClusterSpec) -> str:
    """`client:` as it applies to a cluster of `spec`: auto is the first kind it offers."""
    kinds = spec.client_kinds()
    if asked == "auto":
        return kinds[0]
    if asked not in kinds:
        runtime = runtime_of(spec)
        raise SpecError([("client", f"client: {asked} cannot be on {runtime.where} ({runtime.client_refusal(asked)}); "
                                    f"use client: {kinds[0]} or auto")])
    return asked


def cluster_axes(data: dict[str, Any], model: Any = "spec", path: tuple = ()) -> list[tuple[tuple, list]]:
    """(path, values) of every sweep axis in a cluster mapping: a list where the spec takes a
    single value (at any depth, e.g. ceph.conf.osd.osd_op_num_shards), or a list of lists where
    it takes a list (nodes). `model`: the model of `data` ("spec": the cluster spec's; None: none)."""
    model = cluster_spec_model() if model == "spec" else model
    axes = []
    for key, value in data.items():
        info = model.model_fields.get(key) if model is not None else None
        annotation = info.annotation if info is not None else None
        takes_list = annotation is not None and "list" in str(annotation)
        if isinstance(value, list):
            if not takes_list or (value and all(isinstance(v, list) for v in value)):
                axes.append(((*path, key), value))
        elif isinstance(value, dict) and not _maps_to_lists(annotation):
            axes += cluster_axes(value, model_in(annotation), (*path, key))
    return axes


def _maps_to_lists(annotation: Any) -> bool:
    """A mapping whose values are lists (kubernetes.devices: {node1: [/dev/sdb]}): its lists are
    values, not sweep axes."""
    args = typing.get_args(annotation)
    return typing.get_origin(annotation) is dict and len(args) == 2 and typing.get_origin(args[1]) is list


def set_at(data: dict[str, Any], path: tuple, value: Any) -> dict[str, Any]:
    out = dict(data)
    out[path[0]] = value if len(path) == 1 else set_at(out[path[0]], path[1:], value)
    return out


def cluster_variants(data: Any, where: str, source: str, runtime: str | None) -> list[Variant]:
    """Every combination of the cluster's sweep axes as a validated spec (one, without axes); a
    bad value is refused naming its path and the value."""
    if not isinstance(data, dict):
        raise SpecError([(where.rstrip(". :"), "a cluster spec is a mapping with name, nodes and a filesystem section")], source)
    axes = cluster_axes(data)
    variants = []
    for combo in itertools.product(*(values for _, values in axes)) if axes else [()]:
        settings = {".".join(path): value for (path, _), value in zip(axes, combo)}
        spec_data = data
        for (path, _), value in zip(axes, combo):
            spec_data = set_at(spec_data, path, value)
        try:
            spec = parse_spec(spec_data, source, runtime=runtime)
        except SpecError as err:
            shown = f" (with {', '.join(f'{k}={v}' for k, v in settings.items())})" if settings else ""
            raise SpecError([(f"{where}{p}", m + shown) for p, m in err.problems], source) from None
        variants.append(Variant(", ".join(f"{k}={v}" for k, v in settings.items()), settings, spec))
    return variants


def former_name_notices(index: int, entry: Any) -> list[str]:
    """One line for a workload named by its former name, one per parameter that has a new name."""
    kind = entry.get("type") if isinstance(entry, dict) else None
    if not isinstance(kind, str) or current_name(kind) not in WORKLOADS:
        return []
    notices = []
    if kind in FORMER_NAMES:
        notices.append(f"workloads[{index}]: type {kind} is now called {FORMER_NAMES[kind]}; "
                       f"{kind} still works, write {FORMER_NAMES[kind]} to silence this")
    renamed = workload(kind).renamed
    notices += [f"workloads[{index}].{old}: now called {renamed[old]} (as in results and reports); {old} still works, "
                f"write {renamed[old]} to silence this" for old in entry if old in renamed]
    return notices


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
    params = {wl.renamed.get(k, k): v for k, v in params.items()}
    list_fields = {name for name, f in wl.Params.model_fields.items() if "list" in str(f.annotation)}
    # A list field given one value (`mode: write`) is that one-element list, as every axis takes a scalar.
    params = {k: [v] if k in list_fields and not isinstance(v, list) else v for k, v in params.items()}
    axes = {k: v for k, v in params.items() if isinstance(v, list) and k not in list_fields
            or k in list_fields and isinstance(v, list) and v and isinstance(v[0], list)}
    fixed = {k: v for k, v in params.items() if k not in axes}
    steps, problems = [], []
    for combo in itertools.product(*axes.values()) if axes else [()]:
        values = {**fixed, **dict(zip(axes, combo))}
        try:
            steps.append(Step(index, wl, wl.Params.model_validate(values), values))
        except ValidationError as exc:
            problems += [(f"{where}.{p}" if p else where, m) for p, m in _problems(exc, wl.Params)]
    if problems:  # each once, however many combinations share it
        raise SpecError(list(dict.fromkeys(problems)))
    labels = [s.label for s in steps]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:  # e.g. bs: [4k, 4KiB]: one size spelled twice would run (and be stored as) one step twice
        raise SpecError([(where, f"the same combination twice ({twice[0]}): list each value of a sweep once")])
    return steps


def _client_applies(asked: str, spec: ClusterSpec, where: str, source: str) -> None:
    try:
        client_kind(asked, spec)
    except SpecError as err:
        raise SpecError([(f"{where}{p}", m) for p, m in err.problems], source) from None


def parse_experiment(data: Any, base_dir: Path, source: str = "experiment", runtime: str | None = None,
                     running: ClusterSpec | None = None) -> Experiment:
    """`running`: the spec of the cluster the run goes to (`--cluster NAME`), which stands for a
    missing `cluster:` and must agree with a given one (filesystem and runtime)."""
    if not isinstance(data, dict):
        raise SpecError([("", "an experiment is a YAML mapping with name, cluster and workloads")], source)
    problems: list[tuple[str, str]] = []
    exp: ExperimentFile | None = None
    try:
        exp = ExperimentFile.model_validate(data)
    except ValidationError as exc:
        problems += _problems(exc, ExperimentFile)
    # Every mistake in one answer: each stage goes on past the problems of the one before where it
    # can (a workload entry that is wrong is left out of what follows), and what could be read is
    # handed on with them (SpecError.partial) for the checks against the cluster to add theirs.
    steps = []
    entries = data.get("workloads")
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        try:
            steps += expand(i, entry)
        except SpecError as err:
            problems += err.problems
    if exp is None:
        raise SpecError(problems, source)
    problems += [(f"faults[{i}].during", f"there is no workloads[{f.during}] ({len(exp.workloads)} workload(s))")
                 for i, f in enumerate(exp.faults) if f.during >= len(exp.workloads)]
    if exp.cluster is None and running is None:
        problems.append(("cluster", "required field is missing: a path to a cluster spec (relative to the experiment) "
                                    "or an inline one; or run against a cluster that is up: dfslab run EXP --cluster NAME"))
        raise SpecError(problems, source)
    try:
        built = _with_cluster(exp, data, steps, base_dir, source, runtime, running)
    except SpecError as err:
        raise SpecError(problems + err.problems, source) from None
    if problems:
        raise SpecError(problems, source, partial=built)
    return built


def _with_cluster(exp: ExperimentFile, data: dict[str, Any], steps: list[Step], base_dir: Path, source: str,
                  runtime: str | None, running: ClusterSpec | None) -> Experiment:
    """The experiment on its cluster (its own, or `running`): what depends on the cluster, checked."""
    if exp.cluster is None:  # the running cluster's spec (no settings to sweep)
        if exp.runtimes:
            raise SpecError([("runtimes", "runtimes make a fresh cluster each: give cluster: and run without "
                                          "--cluster")], source)
        cluster_data, where = running.model_dump(mode="json"), f"cluster ({running.name}, running): "
    elif isinstance(exp.cluster, str):
        path = (base_dir / exp.cluster)
        if not path.is_file():
            raise SpecError([("cluster", f"no cluster spec at {str(path)!r}; give a path relative to the experiment or an inline mapping")], source)
        cluster_data, where = read_yaml(path), f"cluster ({path.name}): "
    else:
        cluster_data, where = exp.cluster, "cluster."
    variants = cluster_variants(cluster_data, where, source, runtime)
    cluster = variants[0].cluster
    if len(variants) == 1:
        variants = []
    elif exp.runtimes:
        raise SpecError([("runtimes", "sweep cluster settings or runtimes in one experiment, not both")], source)
    for entry in dict.fromkeys(exp.runtimes):  # the cluster must hold on every runtime it will run on
        runtime, client = runtime_entry(entry)
        runtime_spec = cluster_variants(cluster_data, f"runtimes: {entry}: {where}", source, runtime)[0].cluster
        _client_applies(client or exp.client, runtime_spec, f"runtimes: {entry}: ", source)
    if not exp.runtimes:
        for spec in [v.cluster for v in variants] or [cluster]:
            _client_applies(exp.client, spec, "", source)
    if running is not None:
        # With --cluster the experiment runs on that cluster, whatever runtime it is on (the same
        # experiment against local, docker or Rook): its own cluster only says which filesystem
        # its workloads and faults are for, and the client must hold on the cluster it gets.
        if cluster.filesystem != running.filesystem:
            raise SpecError([("cluster", f"the experiment's cluster is {cluster.filesystem}; cluster {running.name!r} is "
                                         f"{running.filesystem}: drop cluster: to run on {running.name!r}, or run "
                                         "without --cluster")], source)
        _client_applies(exp.client, running, "", source)
    notices = [n for i, entry in enumerate(exp.workloads) for n in former_name_notices(i, entry)]
    notices += _fault_placement_notices(exp, steps)
    return Experiment(exp, cluster, steps, data, notices, variants, source)


def _fault_placement_notices(exp: ExperimentFile, steps: list[Step]) -> list[str]:
    """A fault is timed into the first repetition of the first combination of its workload: said,
    where that workload runs more than once, rather than found in the results."""
    notices = []
    for i, fault in enumerate(exp.faults):
        mine = [s for s in steps if s.index == fault.during]
        runs = len(mine) * exp.repetitions
        if runs > 1:
            notices.append(f"faults[{i}] ({fault.kind} {fault.target}) is timed into {mine[0].label}, repetition 1 only; "
                           f"the other {runs - 1} run(s) of workloads[{fault.during}] go without it (to fault another "
                           "combination, give it a workload entry and a fault of its own)")
    return notices


def load_experiment(path: str | Path, runtime: str | None = None, running: ClusterSpec | None = None) -> Experiment:
    """The experiment at `path`; `runtime` overrides its cluster's (dfslab run --runtime);
    `running` is the spec of the cluster it will run on (dfslab run --cluster)."""
    return parse_experiment(read_yaml(path), Path(path).parent, str(path), runtime, running)


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

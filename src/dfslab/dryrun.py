"""`dfslab run --dry-run`: what a run would do, from the experiment and the cluster's spec alone:
each phase and step with its expected time, the data each step leaves on the cluster against what
the cluster holds, and every problem at once. Nothing is started."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from .backends import backend_class
from .backends.abilities import CapacityPlan, ability
from .experiment import Experiment
from .registry import runtime_of
from .spec import ClusterSpec, SpecError

# Bring-up and teardown as measured on this 2-core machine: examples/ceph-small.yaml on the local
# runtime 8-9 s up, 2 s down; the same cluster by Rook on Kubernetes 79 s to HEALTH_OK
# (bench/bringup.py --kubernetes: the nodes' containerd seeded, the MON's canary patched, the
# MGR's startup probe asked every 2 s).


def deploy_seconds(spec: ClusterSpec) -> float:
    """A deploy of a cluster of `spec`, as its runtime declares it measured."""
    return runtime_of(spec).deploy_seconds
TEARDOWN_SECONDS = 2.0
# Per step and repetition beyond the tool's own time, by where the tools run (client:): a Job's
# pod starts first (~5 s measured; the admin commands around a step take the control path).
STEP_OVERHEAD = {"job": 5.0}
REPORT_SECONDS = 3.0  # status, results.parquet and report.html with its figures
# A step may fill at most this share of what the cluster holds: Ceph stops writes at 95 % full
# (and warns from 85 %), with BlueStore's own metadata on top of the data.
FILL_LIMIT = 0.7
# Per iperf3 pair and per fio disk job, beyond their seconds (connection, file layout): measured
# 12.35 s for 6 pairs of 2 s, 8.25 s for the 3 disk jobs of 2 s.
IPERF_OVERHEAD, DISK_JOB_OVERHEAD = 0.1, 0.75
# The integrity seed and the read-back at the end, for a fault run: measured 0.3 s to seed 12
# objects and 0.9 s to read back 200 (tests/test_faults.py); a writer's start and stop a fault.
INTEGRITY_SECONDS, INTEGRITY_PER_OBJECT, WRITER_SECONDS = 2.0, 0.01, 1.0


@dataclass
class Plan:
    phases: list[tuple[str, float]] = field(default_factory=list)  # (what, seconds), in order
    steps: list[dict] = field(default_factory=list)  # index, label, seconds (all repetitions), writes
    usable: int | None = None  # bytes of user data the cluster holds
    problems: list[tuple[str, str]] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return sum(s for _, s in self.phases)


def baseline_seconds(exp: Experiment, spec: ClusterSpec) -> list[tuple[str, float]]:
    b = exp.file.baselines
    out = []
    if b.network:
        pairs = len(list(itertools.combinations([*spec.node_names(), "client"], 2)))
        out.append((f"baseline network (iperf3, {pairs} pairs)", pairs * (b.seconds + IPERF_OVERHEAD)))
    if b.disk:
        out.append(("baseline disk (fio, 3 jobs)", 3 * (b.seconds + DISK_JOB_OVERHEAD)))
    return out


def fault_seconds(exp: Experiment, spec: ClusterSpec) -> list[tuple[str, float]]:
    """What a fault run adds to its workloads' time: the integrity seed and read-back, and per fault
    the time it is held past its step's load and the wait for the cluster to be healthy again."""
    if not exp.file.faults:
        return []
    integrity = exp.file.integrity
    out = [(f"integrity: seed {integrity.seed_objects} checksummed objects, read everything back at the end",
            INTEGRITY_SECONDS + INTEGRITY_PER_OBJECT * integrity.seed_objects)]
    backend = backend_class(spec)
    recovery, timeout = backend.facts.typical_recovery_seconds, integrity.timeout_for(backend)
    for i, fault in enumerate(exp.file.faults):
        _, load = exp.fault_load(fault)
        held = max(0.0, fault.at + fault.duration - load) if load is not None else 0.0
        out.append((f"faults[{i}] {fault.kind} {fault.target}: held {held:.0f} s past its step, then healthy again "
                    f"(about {recovery:.0f} s here, at most {timeout:.0f} s)",
                    held + recovery + WRITER_SECONDS))
    return out


def usable_bytes(spec: ClusterSpec) -> int | None:
    """What a cluster of `spec` can hold of user data, where its filesystem knows it from the spec."""
    plan = ability(backend_class(spec), CapacityPlan)
    return plan.usable_bytes(spec) if plan else None


def fill_problems(exp: Experiment, spec: ClusterSpec) -> list[tuple[str, str]]:
    """Every step that would write more than FILL_LIMIT of what the cluster holds, with the
    arithmetic: refused before a run starts (a full cluster blocks its clients' writes)."""
    usable = usable_bytes(spec)
    problems = []
    for step in exp.steps:
        writes = step.workload.writes(step.params)
        if writes and usable and writes > FILL_LIMIT * usable:
            problems.append((f"workloads[{step.index}]",
                             f"{step.label} writes {writes / 2**30:.1f} GiB > {FILL_LIMIT:.0%} of the "
                             f"{usable / 2**30:.1f} GiB of data the cluster holds (the most a step may fill): lower "
                             f"size / block_size, or give the OSDs more room (ceph.osd_size)"))
    return list(dict.fromkeys(problems))


def run_seconds(exp: Experiment, spec: ClusterSpec, one: Plan) -> list[tuple[str, float]]:
    """(label, expected seconds) of each run an experiment makes, in order, from the plan of one
    run on `spec`: one per runtime of `runtimes:` (its own deploy and per-step cost), per setting
    combination, or per run of `runs: N`; one entry for a single run."""
    from .campaign import runtime_order, settings_order
    steps = len(exp.steps) * exp.file.repetitions

    def on(entry: str) -> float:
        variant = exp.on_runtime(entry)
        return (one.seconds - deploy_seconds(spec) + deploy_seconds(variant.cluster)
                + steps * STEP_OVERHEAD.get(variant.client_kind(variant.cluster), 0.0))
    if exp.file.runtimes:
        return [(f"runtime {rt}", on(rt)) for rt in runtime_order(exp)]
    if exp.variants:
        return [(v.label if ", " not in v.label else f"[{v.label}]", one.seconds) for v in settings_order(exp)]
    return [(f"run {i}", one.seconds) for i in range(1, exp.file.runs + 1)]


def plan(exp: Experiment, spec: ClusterSpec, owned: bool, check=None) -> Plan:
    """The plan of `exp` on a cluster of `spec` (made by the run when `owned`). `check(exp, spec)`
    raises SpecError with what only the cluster can tell (run.check_against_cluster)."""
    result = Plan(usable=usable_bytes(spec))
    if check is not None:
        try:
            check(exp, spec)
        except SpecError as err:
            result.problems += err.problems
    reps = exp.file.repetitions
    if owned:
        result.phases.append((f"deploy ({spec.filesystem}, runtime {spec.runtime})", deploy_seconds(spec)))
    result.phases += baseline_seconds(exp, spec)
    for step in exp.steps:
        result.steps.append({"index": step.index, "label": step.plan_label, "seconds": reps * step.workload.estimate(step.params),
                             "writes": step.workload.writes(step.params)})
    result.problems += fill_problems(exp, spec)
    result.phases.append((f"workloads ({len(exp.steps)} step(s) x {reps} repetition(s))",
                          sum(s["seconds"] for s in result.steps)))
    result.phases += fault_seconds(exp, spec)
    result.phases.append(("status and report", REPORT_SECONDS))
    if owned:
        result.phases.append(("teardown", TEARDOWN_SECONDS))
    result.problems = list(dict.fromkeys(result.problems))
    return result

"""What each kind of cluster can do, from the same declarations that refuse a run before it starts:
a backend's `refusal` (of the cluster, a target, a fault) and `targets_for`, a workload's `cluster_targets` and
`workers` against the runtime's `runs_module`, each fault kind's `check_applies`, the runtime's
`client_wire_counted` and a backend's health alarms. `run.check_against_cluster` asks the same
functions, so `dfslab capabilities` cannot say yes to what a run refuses (or the reverse).

A cluster kind is judged on a representative spec of it (`samples`: every optional daemon on, so
what is missing is missing for a reason); `dfslab capabilities SPEC` judges that spec itself.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from .backends import Backend, backend_class
from .backends.abilities import HealthAlarms, ability
from .chaos import FaultError, check_applies, fault_kinds
from .registry import FILESYSTEMS, RUNTIMES, TARGETS, runtime_class, runtime_of, samples_of
from .spec import ClusterSpec, SpecError, parse_spec
from .workloads import WORKLOADS, Workload, workload

INTEGRITY_MODULE = "dfslab.chaos.integrity"  # the checksummed writer, its seed and read-back (chaos/schedule.py)


def samples() -> list[tuple[str, dict[str, Any]]]:
    """(cluster kind, spec mapping) of every kind `--json` names: each runtime's sample with each
    filesystem's sections (`SAMPLES` in its package); a runtime that starts nothing takes the
    filesystems' own kinds of cluster you run."""
    out = []
    for kind in RUNTIMES:
        runtime = runtime_class(kind)
        for fs in FILESYSTEMS:
            for sample_kind, fields in samples_of(fs).items():
                if runtime.starts_nodes and sample_kind == "" and runtime.capability_kind:
                    out.append((runtime.capability_kind, {**runtime.sample, "filesystem": fs, **fields}))
                elif not runtime.starts_nodes and sample_kind and runtime.sample:
                    out.append((sample_kind, {**runtime.sample, "filesystem": fs, **fields}))
    return out


@dataclass(frozen=True)
class Cell:
    cluster: str  # a kind of `samples`, or the name of the spec given
    filesystem: str
    capability: str
    ok: bool
    reason: str  # why not (every refusal has one); what it means where ok

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def workload_refusal(work: Workload, target: str | None, spec: ClusterSpec) -> str | None:
    """Why `work` cannot run against `target` on a cluster of `spec` (None: it can)."""
    backend = backend_class(spec)
    if target and target not in backend.targets_for(spec):
        return backend.refusal(spec, target=target)
    runtime = runtime_of(spec)
    for module in work.workers:
        if not runtime.runs_module(module):
            return (f"{work.name} runs dfslab's own {module.rsplit('.', 1)[-1]} on the clients, and on "
                    f"{runtime.where} the clients are pods of an image that does not hold dfslab")
    return None


def integrity_refusal(spec: ClusterSpec) -> str | None:
    """Why the checksummed writer and its read-back cannot run on such a cluster (None: they can)."""
    runtime = runtime_of(spec)
    if not runtime.runs_module(INTEGRITY_MODULE):
        return (f"the checksummed writer and read-back are dfslab's own Python, and on {runtime.where} the clients "
                "are pods of an image that does not hold dfslab")
    offered = backend_class(spec).targets_for(spec)
    if not any(entry.store and target in offered for target, entry in TARGETS.items()):
        stored = [t for t, entry in TARGETS.items() if entry.store]
        return f"it offers none of the targets checksummed data is written to ({', '.join(stored)})"
    return None


def _watch(backend: type[Backend], spec: ClusterSpec) -> tuple[bool, str]:
    health = ability(backend, HealthAlarms)
    if health and health.watches(spec):
        return True, "full, stuck or silent storage stops a step (dfslab.watch)"
    return False, ("it has no health dfslab can read (a mount or an endpoint only); a stuck step ends at its "
                   "deadline, or after a minute with nothing on the client's wire")


def cells(cluster: str, spec: ClusterSpec) -> list[Cell]:
    """Every capability of a cluster of `spec`, named `cluster` in the output."""
    backend = backend_class(spec)
    runtime = runtime_of(spec)
    out: list[Cell] = []

    def cell(capability: str, refusal: str | None, meaning: str = "") -> None:
        out.append(Cell(cluster, spec.filesystem, capability, refusal is None, refusal or meaning))

    refused = backend.refusal(spec)
    cell("deploy", refused, "dfslab deploys it" if runtime.starts_nodes else "dfslab reaches it and makes its own room")
    for name in WORKLOADS:
        work = workload(name)
        for picked, target in work.cluster_targets().items():
            cell(f"{name} {picked}".strip(), refused or workload_refusal(work, target, spec))
    integrity = refused or integrity_refusal(spec)
    cell("integrity", integrity, "checksummed writes during a fault, read back after")
    for kind in sorted(fault_kinds()):
        try:
            check_applies(kind, spec)
            problem = refused or integrity
        except FaultError as exc:
            problem = refused or str(exc)
        cell(f"fault {kind}", problem)
    cell("ledger", refused or (None if runtime.counts_wire(spec.client_names()) else runtime.uncounted_why),
         "the client's link bytes at each step's start and end")
    ok, said = _watch(backend, spec)
    cell("watch", refused or (None if ok else said), said)
    return out


def sample_cells() -> list[Cell]:
    """Every kind's cells; a kind whose sample the spec refuses (a filesystem with no engine on a
    runtime) is refused in every cell, with the spec's reason."""
    out: list[Cell] = []
    for kind, data in samples():
        try:
            spec = parse_spec({"name": f"{kind}-{data['filesystem']}", **data}, f"capabilities {kind}")
        except SpecError as err:
            reason = "; ".join(f"{where}: {what}" for where, what in err.problems)
            out += [Cell(kind, data["filesystem"], cap, False, reason) for cap in capability_names()]
            continue
        out += cells(kind, spec)
    return out


def capability_names() -> list[str]:
    """Every capability's name, in the order cells lists them."""
    work = [f"{name} {picked}".strip() for name in WORKLOADS for picked in workload(name).cluster_targets()]
    return ["deploy", *work, "integrity", *(f"fault {k}" for k in sorted(fault_kinds())), "ledger", "watch"]


def matrix(specs: list[tuple[str, ClusterSpec]] | None = None) -> list[Cell]:
    """The cells of every cluster kind (or of the given specs)."""
    if specs is None:
        return sample_cells()
    return [c for kind, spec in specs for c in cells(kind, spec)]


def text(found: list[Cell]) -> list[str]:
    """Per cluster and filesystem: how many capabilities it has, and each refusal's reason once
    with the capabilities it refuses."""
    out: list[str] = []
    groups: dict[tuple[str, str], list[Cell]] = {}
    for c in found:
        groups.setdefault((c.cluster, c.filesystem), []).append(c)
    for (cluster, filesystem), group in groups.items():
        yes = [c.capability for c in group if c.ok]
        out.append(f"{cluster} · {filesystem}: {len(yes)} of {len(group)} — " + (", ".join(yes) or "nothing"))
        reasons: dict[str, list[str]] = {}
        for c in group:
            if not c.ok:  # a fault's reason names its kind: said once for every kind it refuses
                said = re.sub(rf"\b{c.capability}\b", "this fault", c.reason) if c.capability.startswith("fault ") \
                    else c.reason
                reasons.setdefault(said, []).append(c.capability)
        for reason, refused in reasons.items():
            out.append(f"  no {', '.join(refused)}: {reason}")
    return out


def markdown() -> str:
    """The docs' page of it (scripts/mkdocs_hooks.py): `dfslab capabilities` as the site shows it."""
    out = []
    for line in text(matrix()):
        if line.startswith("  no "):
            out.append(f"    - **no** {line[5:]}")
        else:
            kind, _, rest = line.partition(":")
            out.append(f"\n- **{kind}**:{rest}")
    return "\n".join(out).strip() + "\n"

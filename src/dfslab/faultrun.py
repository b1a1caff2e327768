"""The fault part of a run (a phase of run.py's, above chaos/, whose faults and writer it times):
seed checksummed data, time faults into workloads with a
checksummed writer beside them, wait for recovery, measure what held, verify every
acknowledged write."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .chaos.integrity import FROM_STDIN, STREAM, sent_between
from .chaos.schedule import (INTEGRITY, TimedFault, Writer, detection, healthy_from, longest_stall, mean_latency, throughput,
                             wait_recovered, write_latency)
from .backends import require
from .backends.abilities import ObjectPools, ToolTargets, client_setup
from .registry import TARGETS
from .workloads import WorkloadError

FS_TARGET_NAME = "fs"  # the POSIX mount's target (registry.TARGETS)
# A first answer of the recovery wait within this many seconds: the cluster was healthy when the step ended.
QUICK_ANSWER_S = 1.0

if TYPE_CHECKING:
    from .chaos.entry import FaultEntry
    from .cluster import Attached
    from .experiment import Integrity
    from .results import RunDir
    from .workloads import Runner


def store_on(backend: Any, target: str) -> str:
    """Where the fault runs' checksummed data goes on `target` of `backend`'s cluster, as a STORE
    of dfslab.chaos.integrity (`TARGET:WHERE`): a directory on the client's POSIX mount, a new
    bucket through the S3 gateway, else (an object target) the benchmark pool."""
    if target == FS_TARGET_NAME:
        return f"fs:{backend.mount('client') / 'dfslab-integrity'}"
    if target == "s3":
        s3 = require(backend, ToolTargets).reach(None, "s3", 0)
        return f"s3:{s3.bucket},{s3.endpoints[0]},{s3.keys},{s3.region}"
    return f"{target}:{require(backend, ObjectPools).bench_pool(None)}"


class FaultRun:
    """The fault part of a run: seed, timed faults with a checksummed writer, recovery, verify."""

    def __init__(self, entries: list[FaultEntry], integrity: Integrity, attached: Attached, runner: Runner,
                 run_dir: RunDir):
        self.entries, self.integrity, self.attached, self.runner, self.run_dir = entries, integrity, attached, runner, run_dir
        self.dir = run_dir.path / "integrity"
        self.dir.mkdir(exist_ok=True)
        self.started: set[int] = set()
        self.journals: list[str] = []
        self.events: list[dict[str, Any]] = []
        self.active: list[tuple[TimedFault, Writer]] = []  # started, not yet finished
        self.unhealed: str | None = None  # the backend's status when it did not heal in time
        self._stores: list[str] | None = None

    def stores(self) -> list[str]:
        """Where the checksummed data goes: a store on every target the cluster offers that has
        one (RADOS objects, files on the POSIX mount, objects through an S3 gateway in a bucket of
        the run's own, made by the seed), in the target table's order of preference."""
        if self._stores is None:
            backend = self.attached.backend
            offered = backend.targets_for(self.attached.spec)
            # Files only where the checker sees the mount (not from Rook's toolbox on a Kubernetes you
            # run, whose CephFS is mounted in the Jobs' pods alone: files there would be its own disk's).
            stores = [store_on(backend, t) for t, entry in TARGETS.items() if entry.store and t in offered
                      and (t != FS_TARGET_NAME or self.runner.mount_is_here or client_setup(backend).checker_sees_mount())]
            self._stores = [s for s in stores if s]
        return self._stores

    def seed(self) -> None:
        if not self.stores():
            raise WorkloadError(f"integrity: cluster {self.attached.spec.name} offers no target the checksummed data can "
                                "go to where dfslab's checker runs (`dfslab capabilities` says why); run it without faults")
        # The manifest comes back on the seeder's stdout (it may run where this machine's files are not).
        argv = [*INTEGRITY, "seed", STREAM, str(self.integrity.seed_objects), *self.stores()]
        seeded = json.loads(self.runner.run(argv, "integrity-seed", timeout=600))
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "manifest.json").write_text(json.dumps(seeded["manifest"]))

    def _given(self) -> str:
        """The manifest and every journal's entries, as the read-back and the clean-up take them on stdin."""
        lines = [(self.dir / "manifest.json").read_text().strip()]
        lines += [line for path in self.journals for line in Path(path).read_text().splitlines() if line.strip()]
        return "\n".join(lines) + "\n"

    def writer_store(self, target: str | None) -> str:
        """Where the writer writes during a step's faults: on the step's own target where it has a
        store (PUTs through the gateway a fault stops, files on the mount an MDS serves), else
        the first store."""
        stores = self.stores()
        return next((s for s in stores if target and s.startswith(f"{target}:")), stores[0])

    def start(self, workload_index: int, target: str | None = None) -> list[tuple[TimedFault, Writer]]:
        """The faults during workload `workload_index` (its steps need `target` of the cluster),
        and a checksummed writer beside them; nothing for a workload already started."""
        if workload_index in self.started:
            return []
        self.started.add(workload_index)
        entries = [(i, f) for i, f in enumerate(self.entries) if f.during == workload_index]
        if not entries:
            return []
        writer = Writer(self.runner, self.dir, self.writer_store(target)).start()
        self.journals.append(str(writer.journal))
        self.active = [(TimedFault(self.attached, f, i).start(), writer) for i, f in entries]
        return self.active

    def probe_sent(self, start: float, end: float) -> int:
        """What the integrity writers sent between two moments (the step's byte ledger takes it out)."""
        return sum(sent_between(journal, start, end) for journal in self.journals)

    def abort(self) -> None:
        """After an interruption or an error mid-step: no fault left in effect, no writer left writing."""
        active, self.active = self.active, []
        if not active:
            return
        writer = active[0][1]  # one writer per workload, beside all of its faults
        writer.request_stop()
        for fault, _ in active:
            fault.cancel()
        writer.stop(timeout=30)

    @property
    def recovery_timeout(self) -> float:
        """How long a fault's cluster is waited for after its undo (the experiment's, or its filesystem's)."""
        return self.integrity.timeout_for(self.attached.backend)

    def finish(self, timed, samples) -> None:
        for fault, _ in timed:
            fault.join()
        # The writer is dfslab's probe of the fault windows, not the user's load: once every fault
        # is undone it writes nothing new, so the time to recover is the cluster's alone. Left
        # writing, it kept `heal info` of a disperse volume above 0: GlusterFS marks a file and its
        # directory dirty while they are written (49 entries 2 s into the writer, before any fault),
        # and after a deleted glusterd pod it counted 2-9 entries for all of 480 s here (259 in CI).
        writer = timed[0][1]
        writer.request_stop()
        waited_from = time.time()
        recover = wait_recovered(self.attached, self.recovery_timeout)
        healed_at = waited_from + recover if recover is not None else None  # healthy from then on
        self.unhealed = None if recover is not None else self._health_summary()
        writer.stop()  # a write still blocked in the outage had until here to be acknowledged
        self.active = []
        acks = writer.acks()
        latency = write_latency(acks)
        for fault, _ in timed:
            ev = fault.events
            inject_at, undo_at = ev.get("inject"), ev.get("undo")
            if inject_at and undo_at:
                ev["detect_s"] = detection(samples, inject_at)
                # From the start of the undo (older runs lack it: from its end). The wait begins when
                # the step ends: where the cluster was healthy at its first answer, the sampler says
                # since when (within a sample) rather than the rest of the step counting as recovery.
                undone_from = ev.get("undo_start", undo_at)
                healed = healed_at
                if recover is not None and recover <= QUICK_ANSWER_S:
                    healed = healthy_from(samples, undone_from, waited_from) or healed_at
                ev["recover_s"] = healed - undone_from if healed else None
                ev["recovery_timeout"] = self.recovery_timeout  # how long it was waited for
                ev["undo_s"] = undo_at - ev["undo_start"] if "undo_start" in ev else None
                # Before: up to 10 s of steady load, leaving out the workload's first 3 s of ramp-up.
                before = throughput(samples, max(ev["workload_start"] + 3, inject_at - 10), inject_at)
                # The fault holds from when inject returned (fill writes for a while first) to its
                # undo; one that acts step by step (an upgrade) is in effect while it acts.
                held_from, held_to = ev.get("in_effect") or inject_at, undo_at
                if ev.get("steps"):
                    held_from, held_to = ev["steps"][0]["start"], ev["steps"][-1]["end"]
                    for step in ev["steps"]:
                        step.update(throughput=throughput(samples, step["start"], step["end"]),
                                    blocked_s=longest_stall(acks, step["start"], step["end"]))
                ev.update(inject_s=held_from - inject_at, blocked_s=longest_stall(acks, held_from, held_to),
                          acked_during=sum(held_from <= a["ack"] < held_to for a in acks))
                during = throughput(samples, held_from, held_to)
                ev.update(throughput_before=before, throughput_during=during,
                          throughput_fraction=(during / before) if before and during is not None else None,
                          latency_before_ms=mean_latency(acks, max(ev["workload_start"] + 3, inject_at - 10), inject_at,
                                                         completed=True),
                          latency_during_ms=mean_latency(acks, held_from, held_to))
            ev["write_latency"] = latency
            ev["acknowledged_writes"] = len(acks)
            self.events.append(ev)
        self.run_dir.write_json("faults.json", self.events)

    def _health_summary(self) -> str | None:
        """What the backend's status says when the cluster did not heal in time, for the error."""
        try:
            return " · ".join(self.attached.backend.status().get("summary", []))[:600] or None
        except Exception as exc:  # the status itself may be what hangs
            return f"status failed: {exc}"[:300]

    def verify(self) -> list[str]:
        given = self._given()  # read once: the clean-up below takes the same
        out = self.runner.run([*INTEGRITY, "verify", FROM_STDIN], "integrity-verify", timeout=1800, stdin=given)
        result = json.loads(out)
        if result["lost"] or result["corrupt"]:
            result["left"] = self.stores()  # in place, to look into what went wrong
        else:  # the probe's data leaves the cluster as the run found it
            try:
                result.update(json.loads(self.runner.run([*INTEGRITY, "clean", FROM_STDIN], "integrity-clean",
                                                         timeout=600, stdin=given)))
            except WorkloadError as exc:  # the check held; what it wrote stays, and the report says where
                result.update(left=self.stores(), clean_error=str(exc)[:300])
        self.run_dir.write_json("integrity.json", result)
        problems = [f"fault {e['kind']} {e['target']}: {e['error']}" for e in self.events if e.get("error")]
        problems += [f"fault {e['kind']} {e['target']}: not recovered within {self.recovery_timeout:.0f} s "
                     "(integrity.recovery_timeout)"
                     + (f"; then: {self.unhealed}" if self.unhealed else "")
                     for e in self.events if e.get("undo") and e.get("recover_s") is None]
        if result["lost"] or result["corrupt"]:
            problems.append(f"integrity: {result['lost']} lost and {result['corrupt']} corrupt of {result['checked']} "
                            f"acknowledged objects/files: {', '.join(result['lost_names'] + result['corrupt_names'])[:500]}")
        return problems

"""`dfslab run`: deploy → baselines → workloads (sampler beside them) → report → teardown."""

from __future__ import annotations

import re
import time
import socket
from contextlib import ExitStack, closing, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import psutil

from . import cluster, report
from .backends import Progress, backend_class, drop_page_cache
from .backends.abilities import ClusterElsewhere, HealthAlarms, ServerCaches, ability
from .capabilities import integrity_refusal, workload_refusal
from .registry import FILESYSTEMS, TARGETS, backend_class_of
from .chaos import FaultError, check_applies, fault_class
from .experiment import Experiment, Step
from .phases import FaultPhase, RunOutcome, RunRecord, Watch, WorkloadUse, new_run_dir
from .results import RunDir
from . import ledger
from .spec import ClusterSpec, SpecError
from .state import ClusterState
from .units import clock_text
from .watch import StepWatch
from .workloads import Measurement, Runner, WorkloadError, baseline


AfterRep = Callable[[Step, int, list[Measurement]], bool]


class _Clock:
    """ETA from the experiment's estimates, corrected by how fast steps really went."""

    def __init__(self, planned: float):
        self.planned, self.done_planned, self.start = planned, 0.0, time.monotonic()

    def advance(self, planned: float) -> None:
        self.done_planned += planned

    def eta(self) -> float:
        elapsed = time.monotonic() - self.start
        speed = elapsed / self.done_planned if self.done_planned else 1.0
        return max(0.0, (self.planned - self.done_planned) * speed)


def _interval(label: str, kind: str, rep: int, start: float, rows: list[Measurement], headlines: list[Measurement],
              error: str | None = None) -> dict[str, Any]:
    return {"label": label, "workload": kind, "repetition": rep, "start": start, "end": time.time(), "error": error,
            "headlines": [{"metric": h.metric, "value": h.value, "unit": h.unit, "params": h.params} for h in headlines],
            "rows": len(rows)}


def _baselines(exp: Experiment, runner: Runner, run_dir: RunDir, progress: Progress, intervals: list,
               done: set[str], attempt: int) -> list[str]:
    """Measure the limits; a baseline that cannot run is skipped, and why is returned for the report."""
    b = exp.file.baselines
    skipped = []
    for kind, fn, enabled in (("network", baseline.network, b.network), ("disk", baseline.disk, b.disk)):
        if not enabled or f"baseline {kind}" in done:
            continue
        progress("baselines", f"{kind}: " + ("iperf3 between every node pair and the client" if kind == "network"
                                             else "fio on the disk that backs the OSDs"))
        start = time.time()
        try:
            rows = fn(runner, b.seconds)
        except Exception as exc:
            skipped.append(f"baseline {kind}: {str(exc)[-300:]}")
            progress("warning", skipped[-1])
            continue
        if not rows:
            skipped.append(f"baseline {kind}: nothing to measure here (no nodes of dfslab's, no endpoints listed)")
        _record(run_dir, intervals, _interval(f"baseline {kind}", "baseline", 0, start, rows, []), rows,
                f"baseline {kind}", attempt)
    return skipped


def _record(run_dir: RunDir, intervals: list, interval: dict[str, Any], rows: list[Measurement], step: str,
            attempt: int) -> None:
    """A step's interval on disk first, then its rows: the rows are the commit (a step is done when
    they are in results.csv), so a kill between the two leaves an interval whose rows never landed,
    which a resume drops and measures again, never rows without their interval."""
    interval.update(step=step, attempt=attempt)
    intervals.append(interval)
    run_dir.write_json("intervals.json", intervals)
    if rows:
        run_dir.add(rows, step=step)


@dataclass
class StepBench:
    """What every step of one run shares: where its tools run, where it is recorded, and how its
    bytes are counted (`count`: the byte ledger's snapshot; `wire`: the clients' bytes on the wire
    so far, for the watch's no-progress rule)."""

    runner: Runner
    run_dir: RunDir
    intervals: list
    attempt: int
    count: Callable[[bool], ledger.Snapshot]  # the ledger's snapshot, at the step's start (True) or end
    wire: Callable[[], int | None] | None = None
    server_cache: str = "keep"


@dataclass
class StepFaults:
    """What one step runs under: `alarms` and `warnings` (the backend's; None while a fault is
    scheduled in the step) watched while its tools run, the first alarm stopping them and failing
    the step (dfslab.watch); `probe_sent(start, end)`: what a fault window's integrity writer sent
    meanwhile, which the byte ledger takes out of the clients' sent bytes; `fault`: the faults' label."""

    alarms: Callable[[], list[str]] | None = None
    warnings: Callable[[], list[str]] | None = None
    probe_sent: Callable[[float, float], int] | None = None
    fault: str | None = None


def _run_step(bench: StepBench, step: Step, rep: int, under: StepFaults) -> tuple[dict[str, Any], list[Measurement]]:
    """One repetition of one step, measured, ledgered and recorded."""
    runner, count, wire, probe_sent, fault = bench.runner, bench.count, bench.wire, under.probe_sent, under.fault
    alarms, warnings = under.alarms, under.warnings
    start = time.time()
    dropped = None
    moved = wire if step.workload.streams(step.params) else None
    watch = StepWatch(runner, alarms, warnings=warnings, moved=moved) if alarms is not None else None
    try:
        runner.entry = step.index
        step.workload.prepare(runner, step.params)
        if bench.server_cache == "drop" and runner.storage is not None:
            caches = ability(runner.storage, ServerCaches)
            dropped = caches.drop_server_caches(runner) if caches else ("page cache" if drop_page_cache() else None)
        before, counted_from = count(True), time.time()
        with watch or nullcontext():
            rows = step.workload.run(runner, step.params, rep)
        if fault:  # a repetition with a fault in it is a row of its own, never averaged with clean ones
            for r in rows:
                r.params = {**r.params, "fault": fault}
        short = _stopped(watch, runner) or step.workload.shortfall(step.params, rows)
        if short:
            raise WorkloadError(short)
    except Exception as exc:  # one failed step is recorded and reported; the run goes on
        error = _stopped(watch, runner) or str(exc) or repr(exc)
        rows, interval = [], _interval(step.label, step.workload.name, rep, start, [], [], error=error)
    else:
        after = count(False)
        moved = ledger.delta(before, after)
        if probe_sent is not None:  # the writer runs on the client node: over that node's counters' own window
            window = ledger.read_window(before, after, runner.clients[0]) or (counted_from, time.time())
            moved = ledger.without_probe(moved, probe_sent(*window))
        rows += ledger.ledger_rows(rows, moved)
        interval = _interval(step.label, step.workload.name, rep, start, rows, step.workload.headlines(rows))
        interval["ledger"] = {**moved, **ledger.tool_bytes(rows)}
        if reason := step.workload.not_as_asked(step.params, rows):
            interval["not_as_asked"] = reason
    if dropped:
        interval["server_cache_dropped"] = dropped
    if watch is not None and watch.warnings:
        interval["warnings"] = watch.warnings
    _record(bench.run_dir, bench.intervals, interval, rows, step_id(step, rep), bench.attempt)
    return interval, rows


def fault_line(event: dict[str, Any]) -> str:
    """One fault as the terminal says it: what, when it held, when it was undone, how long the
    cluster took to heal (or what went wrong)."""
    what = f"fault {event['kind']} {event['target']}"
    if event.get("error"):
        return f"{what}: {event['error']}"
    start = event["workload_start"]
    held = event.get("in_effect") or event.get("inject")
    steps = event.get("steps")
    if steps:  # a fault that acts step by step (an upgrade) is in effect while it acts, and not undone
        said = [f"{len(steps)} steps from {steps[0]['start'] - start:.1f} s into the step, "
                f"{steps[-1]['end'] - steps[0]['start']:.1f} s in all"]
    else:
        said = [f"in effect {held - start:.1f} s into the step" if held else "never injected"]
    if event.get("undo") and not steps:
        said.append(f"undone at {event['undo'] - start:.1f} s")
    healed = event.get("recover_s")
    waited = f"within {event['recovery_timeout']:.0f} s" if event.get("recovery_timeout") else "in time"  # older runs
    if healed is not None and steps and event.get("undo_start"):
        said.append(f"healthy again {event['undo_start'] + healed - steps[-1]['end']:.1f} s after its last step")
    else:
        said.append(f"healthy again {healed:.1f} s after the undo began" if healed is not None else f"not healthy again {waited}")
    return f"{what}: " + ", ".join(said)


def _stopped(watch: StepWatch | None, runner: Runner) -> str | None:
    """Why the watch stopped the step's tools, with what fills the storage (asked once)."""
    if watch is None or watch.reason is None:
        return None
    if watch.message is None:
        health = ability(runner.storage, HealthAlarms)
        try:
            detail = health.space_detail(runner) if health else None
        except WorkloadError:  # a cluster too slow to say what fills it (CI, 2026-11-30): the reason stands alone
            detail = None
        watch.message = (f"stopped after {watch.after:.0f} s: {watch.reason}" + (f" ({detail})" if detail else "")
                         + "; the tools were stopped rather than left waiting on the cluster")
    return watch.message


def _step_warnings(backend) -> Callable[[], list[str]] | None:
    """What the watch notes during a step without stopping it (a nearfull OSD), where the backend reads health."""
    health = ability(backend, HealthAlarms)
    return health.warnings if health else None


def _step_alarms(backend, runtime, clients: list[str]) -> Callable[[], list[str]]:
    """What the watch asks during a step: the backend's alarms, and any server daemon alive when the
    step began that has exited since (an OSD that aborted on ENOSPC: its PGs wait minutes to be
    marked down and inactive, its clients' writes from the first second)."""
    alive = {p.name for p in runtime.sampled_processes() if p.node not in clients and p.alive()}
    health = ability(backend, HealthAlarms)

    def alarms() -> list[str]:
        gone = [p for p in runtime.sampled_processes() if p.name in alive and not p.alive()]
        return (health.alarms() if health else []) + [f"{p.name} exited during the step{_why_it_ended(p.log)}" for p in gone]
    return alarms


# What a daemon's last log lines say when it ran out of space (BlueStore, a brick's filesystem).
OUT_OF_SPACE = re.compile(r"ENOSPC|No space left on device")


def _why_it_ended(log: str) -> str:
    """`: it ran out of space (ENOSPC in LOG)`, or where its log is."""
    try:
        with open(log, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - 65536))
            tail = fh.read().decode(errors="replace")
    except OSError:
        return f" (its log: {log or 'in its pod'})"
    return (f": it ran out of space (ENOSPC in {log})" if OUT_OF_SPACE.search(tail) else f" (its log: {log})")


def _ledger_counter(runtime, clients: list[str], visible: bool = True) -> Callable[[bool], ledger.Snapshot]:
    """The byte ledger's snapshot for this cluster: its clients' links (where the runtime counts
    them and the storage's traffic crosses them: `visible`) and the block-layer bytes of every
    daemon on its servers."""
    wire = runtime.wire_reader(clients) if visible else None
    disks = runtime.disk_counters(clients)
    return lambda start: ledger.snapshot(wire, clients, disks, start)


def _wire_counter(runtime, clients: list[str], visible: bool = True) -> Callable[[], int | None]:
    """Bytes the clients' links have received and sent so far (None where the runtime does not
    count them): the ledger's wire counters alone, cheap enough for the step watch's 2 s looks."""
    read = runtime.wire_reader(clients, often=True) if visible else None

    def total() -> int | None:
        snap = ledger.snapshot(read, clients, dict)
        return sum(rx + tx for rx, tx in snap.wire.values()) if snap.wire else None
    return total


def step_id(step: Step, rep: int) -> str:
    """What names a step in results.csv and intervals.json, the same for every load of the experiment."""
    return _step_name(step.label, rep)


def _step_name(label: str, rep: int) -> str:
    return f"{label} rep {rep}"


def _hint(target: str) -> str:
    """What a target is and which filesystems offer it, from the backends themselves."""
    offers = [f"filesystem: {fs}" + (f" with {cond}" if cond else "") for fs in FILESYSTEMS
              for t, cond in backend_class_of(fs).facts.offers.items() if t == target]
    return f"{TARGETS[target].says if target in TARGETS else target} ({'; '.join(offers) or 'no filesystem offers it'})"


def check_against_cluster(exp: Experiment, spec: ClusterSpec) -> None:
    """What only the cluster can tell: refuse before anything runs."""
    offered = backend_class(spec).targets_for(spec)
    problems = exp.fault_timing_problems()
    if refused := backend_class(spec).refusal(spec):
        problems.append(("cluster", refused))
    for step in exp.steps:
        need = step.workload.needs(step.params)
        field = "target" if getattr(step.params, "target", None) else "type"
        if need and need not in offered:
            problems.append((f"workloads[{step.index}].{field}",
                             f"{step.workload.name} needs {_hint(need)}, which cluster {spec.name!r} "
                             f"({spec.filesystem}) does not have ({backend_class(spec).refusal(spec, target=need)}); "
                             f"it offers: {', '.join(sorted(offered)) or 'nothing'}"))
        elif refused := workload_refusal(step.workload, need, spec):
            problems.append((f"workloads[{step.index}].{field}", refused))
        problems += [(f"workloads[{step.index}].{name}", why) for name, why in step.workload.host_problems(step.params)]
        asked, has = getattr(step.params, "clients", 1), getattr(spec, "clients", 1)
        if asked > has:
            problems.append((f"workloads[{step.index}].clients",
                             f"{step.workload.name} on {asked} client nodes, and cluster {spec.name!r} has {has}: "
                             f"set `clients: {asked}` in the cluster spec, or clients: {has} here"))
    if exp.file.faults and (refused := integrity_refusal(spec)):
        problems.append(("faults", f"every fault run checks what held with checksummed writes, and here {refused}"))
    faulted = spec  # as the faults before each leave it (an upgrade then another: pacific, reef, tentacle)
    for i, entry in sorted(enumerate(exp.file.faults), key=lambda pair: (pair[1].during, pair[1].at)):
        try:
            check_applies(entry.kind, faulted)
        except FaultError as exc:
            problems.append((f"faults[{i}].kind", str(exc)))
            continue
        problem = fault_class(entry.kind).target_problem(entry.target, faulted)
        if problem:
            problems.append((f"faults[{i}].target", problem))
        else:
            faulted = fault_class(entry.kind).spec_after(entry.target, faulted)
    try:
        exp.client_kind(spec)
    except SpecError as err:
        problems += err.problems
    port = exp.file.sampler.prometheus_port
    if port and not _port_free(port):
        problems.append(("sampler.prometheus_port", f"127.0.0.1:{port} is already in use; pick a free port or 0 (off)"))
    if problems:
        raise SpecError(sorted(set(problems)), exp.source)


def _port_free(port: int) -> bool:
    """Found before a cluster is deployed, not after: a busy live-metrics port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def run_experiment(exp: Experiment, progress: Progress, cluster_name: str | None = None,
                   runs_root: Path | None = None, keep: bool = False, label: str | None = None,
                   resume: Path | None = None, settings: dict[str, Any] | None = None,
                   after_rep: AfterRep | None = None) -> RunOutcome:
    """One run; with `resume` (a run directory of this experiment), only the steps not yet in its
    results, on a fresh cluster, appended to that directory. `after_rep(step, rep, rows)` is told
    each repetition's rows; True stops that step's remaining repetitions (a tuner pruning).
    The phases (phases.py) are entered in order and put away in reverse, whatever happens."""
    owned = cluster_name is None
    name = cluster_name or exp.cluster.name
    spec = exp.cluster if owned else cluster.load(name)[1]
    check_against_cluster(exp, spec)
    if resume is not None:
        run_dir, done, intervals, attempt = _resumed(resume, exp, name, progress)
    else:
        run_dir, done, intervals, attempt = new_run_dir(exp, spec, label, runs_root), set(), [], 1
    record = RunRecord(exp, progress, name, exp.client_kind(spec), run_dir, done, intervals, attempt,
                       removes_cluster=owned and not keep, settings=settings)
    if owned:
        cluster.up(exp.cluster, progress)
    with ExitStack() as stack:
        stack.enter_context(record)  # provenance, results and the report: last out
        stack.push(record.note_failure)  # an exception is said in the outcome before the report
        stack.callback(record.tear_down)
        attached = stack.enter_context(closing(cluster.attach(name)))
        if not owned:
            run_dir.write_spec(attached.spec.model_dump(mode="json"))
        watch = stack.enter_context(Watch(record, attached))
        runner = stack.enter_context(WorkloadUse(record, attached))
        record.outcome.skipped += _baselines(exp, runner, run_dir, progress, intervals, done, attempt)
        faults = FaultPhase(record, attached, runner)
        stack.enter_context(faults)
        run_steps(record, runner, watch, faults.faults, after_rep)
        faults.verify()
        progress("collecting status", name)
        run_dir.write_json("status.json", cluster.status(name))
    return record.outcome


def run_steps(record: RunRecord, runner: Runner, watch: Watch, faults: Any, after_rep: AfterRep | None) -> None:
    """Every step x repetition the plan asks (each with its sampler window, byte ledger and
    watch; a fault's steps with the fault), in order, skipping what is done, pruned or over
    budget; the outcome says what failed, what ran not as asked and what was skipped."""
    exp, progress, outcome = record.exp, record.progress, record.outcome
    elsewhere = ability(watch.attached.backend, ClusterElsewhere)
    runtime, visible = watch.attached.runtime, elsewhere.client_wire_visible() if elsewhere else True
    bench = StepBench(runner, record.run_dir, record.intervals, record.attempt,
                      _ledger_counter(runtime, runner.clients, visible), _wire_counter(runtime, runner.clients, visible),
                      exp.file.server_cache)
    reps = exp.file.repetitions
    plan = [(step, rep) for step in exp.steps for rep in range(reps)]
    clock = _Clock(sum(step.workload.estimate(step.params) for step, _ in plan))
    skips = _Skips(record, time.monotonic() + exp.file.time_budget if exp.file.time_budget else None)
    for i, (step, rep) in enumerate(plan, 1):
        planned = step.workload.estimate(step.params)
        if (why := skips.reason(step, rep, planned)) is not None:
            if why:
                outcome.skipped.append(f"{step.label} rep {rep} ({why})")
            clock.advance(planned)
            continue
        progress(f"workload {i}/{len(plan)}", f"{step.label} · rep {rep + 1}/{reps} · ETA {clock_text(clock.eta())}")
        timed = faults.start(step.index, step.workload.needs(step.params)) if faults else []
        under = (StepFaults(probe_sent=faults.probe_sent, fault=" + ".join(f"{f.entry.kind} {f.entry.target}" for f, _ in timed))
                 if timed else StepFaults(_step_alarms(watch.backend, runtime, runner.clients), _step_warnings(watch.backend)))
        interval, rows = _run_step(bench, step, rep, under)
        _tell_step(record, step, rep, interval, skips)
        if after_rep is not None and not interval["error"] and after_rep(step, rep, rows):
            skips.pruned.add(id(step))
        if timed:
            progress("recovering", f"waiting for the fault(s) to end and the cluster to heal (≤ {faults.recovery_timeout:.0f} s)")
            faults.finish(timed, watch.sampler.rows if watch.sampler else [])
            for event in faults.events[-len(timed):]:
                progress("note", fault_line(event))
        clock.advance(planned)
    if outcome.skipped:
        progress("warning", f"{len(outcome.skipped)} step(s) skipped: " + "; ".join(outcome.skipped)[:300])


@dataclass
class _Skips:
    """Why a step x repetition does not run now ("" for done by an earlier attempt, None: it runs)."""
    record: RunRecord
    budget_end: float | None
    pruned: set[int] = field(default_factory=set)
    halted: bool = False  # a step failed and the experiment says on_failure: stop

    def reason(self, step: Step, rep: int, planned: float) -> str | None:
        if step_id(step, rep) in self.record.done:  # measured by an earlier attempt of this run
            return ""
        if self.halted:
            return "not run: an earlier step failed and on_failure is stop"
        if id(step) in self.pruned:
            return "stopped early: the tuner pruned this setting"
        if self.budget_end and time.monotonic() + planned > self.budget_end:
            return "time budget reached"
        return None


def _tell_step(record: RunRecord, step: Step, rep: int, interval: dict[str, Any], skips: _Skips) -> None:
    """A step's warnings, failure or shortfall, said before the next phase (so that the step's own
    line carries it) and kept in the outcome."""
    progress, outcome = record.progress, record.outcome
    for warning in interval.get("warnings", []):
        progress("warning", f"{step.label} rep {rep + 1}: the cluster said {warning}")
    if interval["error"]:
        outcome.failures.append(f"{step.label} rep {rep}: {interval['error']}")
        skips.halted = record.exp.file.on_failure == "stop"
        progress("step failed", interval["error"])
    elif interval.get("not_as_asked"):
        outcome.not_as_asked.append(f"{step.label} rep {rep}: {interval['not_as_asked']}")
        progress("step not as asked", interval["not_as_asked"])


class ResumeError(ValueError):
    """A run directory that cannot be resumed; the message says why and what to do instead."""


def _resumed(path: Path, exp: Experiment, name: str, progress: Progress) -> tuple[RunDir, set[str], list, int]:
    """The run directory to append to, the steps it has, its intervals and this attempt's number.
    A cluster left by an attempt that was killed is removed first (only if its dfslab is gone)."""
    if exp.file.faults:
        raise ResumeError(f"{path}: runs with faults cannot be resumed yet (their integrity check spans the whole "
                          f"run); re-run it instead: dfslab run {path}")
    run_dir = RunDir(path)
    try:
        done = run_dir.completed_steps()
    except ValueError as exc:
        raise ResumeError(str(exc)) from None
    earlier = run_dir.read_json("intervals.json") or []
    attempt = 1 + max([iv.get("attempt", 1) for iv in earlier] or [1])
    state = ClusterState(name)
    if state.exists():
        creator = state.read().get("creator_pid")
        if creator and psutil.pid_exists(creator):
            raise ResumeError(f"cluster {name!r} of this run is still in use by dfslab process {creator}; "
                              f"stop that run first")
        progress("removing", f"cluster {name} left by the interrupted attempt")
        cluster.down(name)
    # Failed steps are kept as they were (they run again); a measured step's interval only with its
    # rows (a kill between the two leaves the interval alone, and the step runs again).
    intervals = [iv for iv in earlier if iv.get("error") or _interval_step(iv) in done]
    progress("resuming", f"{path.name}: {len(done)} step(s) done, attempt {attempt}")
    return run_dir, done, intervals, attempt


def _interval_step(interval: dict[str, Any]) -> str:
    """The step an interval belongs to (runs made before intervals named it: from label and repetition)."""
    if "step" in interval:
        return interval["step"]
    return interval["label"] if interval["workload"] == "baseline" else _step_name(interval["label"], interval["repetition"])

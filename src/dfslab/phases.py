"""The phases of one run, each owning what it starts and putting it away (`run.run_experiment`
enters them in order on one ExitStack, so they are undone in reverse whatever happens):

    RunRecord     the run directory: what was asked, what happened, the report (closed last);
                  a cluster made for the run removed before that, unless kept
    Watch         the sampler beside every step, live metrics, the counters' windows
    WorkloadUse   the workloads' runner; servers a workload kept (MariaDB) stopped at the end
    FaultPhase    the checksummed writer and faults: seeded before the steps, undone if cut
                  short, every acknowledged object read back after them

The steps themselves (each with its sampler window, byte ledger and watch) are `run.run_steps`."""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import cluster, report
from .backends import Progress, backend_class
from .backends.abilities import client_setup, metrics_of
from .experiment import Experiment
from .fields import field_units
from .monitor import PrometheusEndpoint, PrometheusScraper, ResourceSampler
from .results import RunDir
from .runtime import runtime_of
from .registry import client_release_of
from .runtime.roots import release_argv
from .spec import ClusterSpec
from .workloads import Runner


@dataclass
class RunOutcome:
    path: Path
    report: Path
    failures: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    not_as_asked: list[str] = field(default_factory=list)  # steps measured, but not as the experiment asked


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during a run, raised once the run has put things away: what it kept and
    what it removed, for the terminal to tell the truth about (cli.run)."""

    def __init__(self, run: Path, cluster: str, removed: bool, measured: int, faults: bool):
        super().__init__(str(run))
        self.run, self.cluster, self.removed, self.measured, self.faults = run, cluster, removed, measured, faults

    def lines(self) -> list[str]:
        here = f"runs/{self.run.name}/" if self.run.parent == Path("runs").absolute() else f"{self.run}/"
        said = [f"interrupted: run {self.run.name} keeps the {self.measured} step(s) measured before it, with its "
                f"report ({here})",
                f"cluster {self.cluster}, made for this run, was removed" if self.removed else
                f"cluster {self.cluster} was kept, as it was given (--cluster); faults in effect were undone"]
        if self.faults and self.removed:
            said.append("the integrity check did not run, and the checksummed data went with the cluster")
        elif self.faults:
            said.append(f"the integrity check did not run: dfslab verify {self.cluster} {here}integrity/manifest.json "
                        f"{here}integrity/journal-*.jsonl checks it now")
        said.append("runs with faults cannot be resumed yet: run the experiment again" if self.faults else
                    f"dfslab run --resume {here} runs the remaining steps on a fresh cluster")
        return said


def new_run_dir(exp: Experiment, spec: ClusterSpec, label: str | None, runs_root: Path | None) -> RunDir:
    """A new run directory with what was asked: the experiment, the cluster, versions, charts, units."""
    run_dir = RunDir.create(label or exp.name, runs_root)
    run_dir.write_spec(exp.raw, "experiment.yaml")
    spec_hash = run_dir.write_spec(exp.cluster.model_dump(mode="json"))
    backend_kind = backend_class(spec)
    run_dir.start(spec_hash, backend_kind.versions(spec),
                  [c.as_json() for c in backend_kind.facts.charts] + list(runtime_of(spec).charts),
                  {"servers": backend_kind.facts.metadata_servers, "path": backend_kind.facts.metadata_path,
                   "client_write_ack": backend_kind.facts.client_write_ack},
                  lambda argv: release_argv(spec, argv, client_release_of(spec)))  # the tools run on the clients
    run_dir.write_json("units.json", {step.workload.name: field_units(step.workload.Params) for step in exp.steps})
    return run_dir


@dataclass
class RunRecord:
    """The run directory and what one attempt of the run adds to it."""
    exp: Experiment
    progress: Progress
    name: str  # the cluster's
    client: str  # where the workloads' tools run (Experiment.client_kind)
    run_dir: RunDir
    done: set[str]  # steps an earlier attempt measured
    intervals: list
    attempt: int
    removes_cluster: bool = False
    settings: dict[str, Any] | None = None
    interrupted: bool = False
    outcome: RunOutcome = field(init=False)

    def __post_init__(self) -> None:
        self.outcome = RunOutcome(self.run_dir.path, self.run_dir.path / "report.html")
        self.first_new = len(self.intervals)

    def __enter__(self) -> "RunRecord":
        return self

    def tear_down(self) -> None:
        """The cluster made for this run goes (unless kept), before the report is written."""
        if self.removes_cluster:
            self.progress("tearing down", self.name)
            cluster.down(self.name, missing_ok=True)

    def note_failure(self, exc_type, exc, tb) -> bool:
        """An exception that cut the run short: said in the outcome and error.txt (then raised on)."""
        if exc is not None:
            self.interrupted = isinstance(exc, KeyboardInterrupt)
            self.outcome.failures.append(f"run aborted: {exc!r}")
            (self.run_dir.path / "error.txt").write_text("".join(traceback.format_exception(exc_type, exc, tb)))
        return False

    def __exit__(self, *exc: Any) -> bool:
        """Provenance, results and the report, whatever happened; an interruption raised last,
        with what the run kept and removed."""
        attempts = self.run_dir.read_json("provenance.json").get("attempts", [])
        attempts.append({"attempt": self.attempt, "end": time.time(), "steps": len(self.intervals) - self.first_new})
        out = self.outcome
        self.run_dir.finish(failures=out.failures, skipped=out.skipped, not_as_asked=out.not_as_asked, cluster=self.name,
                            experiment=self.exp.name, attempts=attempts, client=self.client,
                            interrupted=self.interrupted, **({"settings": self.settings} if self.settings else {}))
        self.run_dir.write_parquet()
        self.progress("writing report", str(self.run_dir.path))
        report.build(self.run_dir.path)
        if self.interrupted:
            measured = sum(1 for iv in self.intervals if iv["workload"] != "baseline" and not iv["error"])
            raise RunInterrupted(self.run_dir.path, self.name, self.removes_cluster, measured,
                                 bool(self.exp.file.faults)) from None
        return False


class Watch:
    """What watches every step: the resource sampler (a thread of its own, on the run's Backend),
    the live-metrics endpoint, and the counters' windows a runtime opens."""

    def __init__(self, record: RunRecord, attached: Any):
        self.record, self.attached = record, attached
        self.sampler: ResourceSampler | None = None
        self.backend = self.endpoint = None
        self.windows: list[str] = []

    def __enter__(self) -> "Watch":
        exp, attached, record = self.record.exp, self.attached, self.record
        record.progress("starting the sampler", f"every {exp.file.sampler.interval:g} s")
        try:
            record.run_dir.write_json("metrics.json", {"exporter": metrics_of(attached.backend).enable_metrics()})
        except Exception as exc:  # metrics are a convenience, not the experiment
            record.run_dir.write_json("metrics.json", {"exporter": None, "error": str(exc)})
        self.backend = attached.backend  # one per run: its admin channel takes one request at a time (CephAdmin)
        self.sampler = ResourceSampler(attached.runtime.sampled_processes, _with_scrapes(self.backend, attached.runtime),
                                       exp.file.sampler.interval,
                                       extra_pids=lambda: {k: v for k, v in {"client": client_setup(self.backend).client_pid()}.items() if v},
                                       platform=attached.runtime.platform)
        self.windows = _counter_windows(attached)
        self.sampler.start()
        if exp.file.sampler.prometheus_port:
            self.endpoint = PrometheusEndpoint(self.sampler, record.name, exp.file.sampler.prometheus_port).start()
            record.progress("warning", f"live metrics: http://127.0.0.1:{self.endpoint.port}/metrics")
        return self

    def __exit__(self, *exc: Any) -> bool:
        if self.sampler is not None:
            self.sampler.stop()
            self.sampler.write_csv(self.record.run_dir.path / "timeseries.csv", append=self.record.attempt > 1)
        for window in self.windows:
            self.attached.runtime.procs.stop(window)
        if self.endpoint is not None:
            self.endpoint.stop()
        return False


class WorkloadUse:
    """The workloads' runner; at the end, each workload's `finish` (servers it kept across steps
    stop before the cluster goes)."""

    def __init__(self, record: RunRecord, attached: Any):
        self.record, self.attached = record, attached
        self.runner: Runner | None = None

    def __enter__(self) -> Runner:
        self.runner = self.attached.runner(self.record.run_dir.raw_dir, client=self.record.client)
        return self.runner

    def __exit__(self, *exc: Any) -> bool:
        for wl in {id(step.workload): step.workload for step in self.record.exp.steps}.values():
            try:
                wl.finish(self.runner)
            except Exception as err:
                self.record.outcome.failures.append(f"{wl.name}: could not stop cleanly: {err}")
        return False


class FaultPhase:
    """The experiment's faults and the checksummed data that proves what held: seeded on enter,
    read back by `verify`; a run cut short undoes what is in effect and stops the writer."""

    def __init__(self, record: RunRecord, attached: Any, runner: Runner):
        from .faultrun import FaultRun
        file = record.exp.file
        self.record = record
        self.faults = FaultRun(file.faults, file.integrity, attached, runner, record.run_dir) if file.faults else None

    def __enter__(self) -> Any:
        if self.faults:
            self.record.progress("integrity", f"seeding {self.record.exp.file.integrity.seed_objects} checksummed "
                                              f"objects or files on each target with a store")
            self.faults.seed()
        return self.faults

    def verify(self) -> None:
        if not self.faults:
            return
        record = self.record
        record.progress("integrity", "reading back every seeded and every acknowledged object")
        try:
            record.outcome.failures += self.faults.verify()
            checked = record.run_dir.read_json("integrity.json")
            record.progress("note", f"integrity: {checked['checked']} checksummed objects and files read back: "
                                    f"{checked['lost']} lost, {checked['corrupt']} corrupt")
        except Exception as exc:  # an unverified run must not pass as a clean one
            record.outcome.failures.append(f"integrity: could not verify: {str(exc)[-500:]}")

    def __exit__(self, *exc: Any) -> bool:
        if self.faults is not None:  # interrupted mid-fault: undo what is in effect, stop the writer
            self.faults.abort()
        return False


def _counter_windows(attached) -> list[str]:
    """An idle process in every client node that has none of dfslab's, so that the sampler counts
    each client's link from the run's first second (client2 mounts only for a parallel step)."""
    busy = {p.node for p in attached.runtime.sampled_processes() if p.alive()}
    return [w for node in attached.spec.client_names() if node not in busy
            and (w := attached.runtime.counter_window(node))]


def _with_scrapes(backend, runtime) -> Any:
    """The backend's own samples, the Prometheus endpoints it names (URLs an external spec lists,
    Rook's MGR) and what the runtime measures where this machine cannot see the daemons (the
    kubelets of a Kubernetes you run). Each part on its own: one that fails loses only its series."""
    metrics = metrics_of(backend)
    urls, sources = metrics.scrape_urls(), metrics.scrape_sources()
    parts = [backend.sample]
    if urls or sources:
        parts.append(PrometheusScraper(urls, sources=sources).sample)
    if (measured := runtime.resource_sampler()) is not None:
        parts.append(measured)
    if len(parts) == 1:
        return backend.sample

    def sample() -> dict[str, tuple[float, str]]:
        out, failed = {}, None
        for part in parts:
            try:
                out.update(part())
            except Exception as exc:  # noqa: BLE001 (the sampler counts it; the other parts still count)
                failed = exc
        if failed is not None and not out:
            raise failed
        return out
    return sample

"""up / status / down: the lifecycle of one cluster, in terms of runtime and backend."""

from __future__ import annotations

import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .backends import Backend, BackendError, PreflightError, Progress, backend_class, backend_for, close_handles, require
from .backends.abilities import LiveSettings, ObjectPools, PodsOnKubernetes, SecondClients, ability, client_setup
from .backends.fuse import unmount
from .procs import ENV_MARK, cpu_seconds, disk_read_bytes, marked_pids, stray_tools, terminate
from .safety import UnsafeRemoval, inside, mounts_under
from .runtime import POD_DIRS_ENV, RUN_DIR_ENV, Runtime, RuntimeError_, attach_runtime, select_runtime
from .spec import ClusterSpec, parse_spec
from . import deps
from .state import ClusterState, dfslab_home, list_clusters
from .workloads import Runner

class ClusterError(RuntimeError):
    """A lifecycle step cannot go on; the message says what to do."""


class UnknownCluster(ClusterError):
    """A name with no state directory: a finding (exit 1, README), for every command alike."""


def _unknown(name: str) -> UnknownCluster:
    return UnknownCluster(f"no cluster named {name!r} (clusters: {', '.join(list_clusters()) or 'none'})")


def preflight(spec: ClusterSpec) -> None:
    try:
        backend_class(spec).preflight(spec)
    except PreflightError as exc:
        raise ClusterError(str(exc)) from None


class _Interrupted(BaseException):
    pass


def _raise_interrupt(signum, frame):  # noqa: ARG001
    raise _Interrupted(f"signal {signum}")


def up(spec: ClusterSpec, progress: Progress, timeout: float = 300, keep_on_failure: bool = False) -> dict[str, str]:
    """Bring the cluster up; on any failure or interrupt tear down everything made so far
    (unless keep_on_failure, for debugging: then `dfslab down` removes it later)."""
    state = ClusterState(spec.name)
    if state.exists():
        raise ClusterError(f"cluster {spec.name!r} already exists ({state.dir}); `dfslab down {spec.name}` first")
    if state.dir.exists() or state.dir.is_symlink():
        raise ClusterError(f"{state.dir} exists but holds no cluster state (not made by dfslab, or a crash before "
                           f"its first write); look inside, remove it yourself, then up again")
    runtime = select_runtime(spec, state)
    deps.ensure(spec, type(runtime), progress)  # first use of docker, kubernetes, gluster: installed, with progress
    runtime.preflight(spec)
    preflight(spec)
    previous = {s: signal.signal(s, _raise_interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    backend: Backend | None = None
    try:
        state.create({"name": spec.name, "spec": spec.model_dump(mode="json"), "runtime_kind": runtime.kind,
                      "phase": "creating", "created": time.time(), "creator_pid": os.getpid()})
        if getattr(runtime, "fallback", False):
            progress("warning", "no CAP_NET_ADMIN: nodes share the host loopback (127.77.x.y), no isolation or shaping")
        runtime.prepare(spec, progress)
        progress("creating nodes", f"{len(spec.nodes)} node(s) + client on runtime {runtime.kind}")
        addresses = runtime.create(spec)
        state.update(addresses=addresses)
        backend = backend_for(spec, runtime)
        backend.deploy(progress, timeout)
        state.update(phase="up", ready=time.time())
        return addresses
    except BaseException as exc:
        if keep_on_failure and not isinstance(exc, (KeyboardInterrupt, _Interrupted)):
            state.update(phase="failed")
            raise
        kept = _keep_logs(state, spec)
        if backend is not None:
            close_handles(backend)
            backend = None
        down(spec.name, missing_ok=True)
        if isinstance(exc, (BackendError, RuntimeError_)) and kept:
            raise ClusterError(str(exc).replace(str(state.dir), str(kept)) + f"\n(logs kept in {kept})") from None
        raise
    finally:
        if backend is not None:
            close_handles(backend)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _keep_logs(state: ClusterState, spec: ClusterSpec) -> Path | None:
    """Failed bring-ups are torn down, but their logs are what the user needs next."""
    if not state.dir.exists():
        return None
    dest = dfslab_home() / "failed" / f"{state.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    subs = sorted({str(p.relative_to(state.dir)) for g in backend_class(spec).facts.log_dirs for p in state.dir.glob(g)})
    for sub in subs:
        src = state.dir / sub
        if src.is_dir():
            shutil.copytree(src, dest / sub, dirs_exist_ok=True)
    return dest if dest.exists() else None


def down(name: str, missing_ok: bool = False) -> dict[str, Any]:
    """Remove every process, mount, namespace and file of cluster `name`, from its state
    directory alone. A name with no state directory is an error (unless missing_ok): `down`
    never guesses what might be a cluster. Returns once every process it killed is gone."""
    state = ClusterState(name)
    if not state.exists():
        if missing_ok:
            return {"name": name, "killed": [], "namespaces": [], "refused": []}
        raise _unknown(name)
    runtime = attach_runtime(state)
    # A run's tools that outlived it (its dfslab killed) go first: an S3 worker still PUTting kept
    # the bucket `release` removes from emptying (BucketNotEmpty). Daemons and mounts stay up for it.
    strays = stray_tools(name, RUN_DIR_ENV)
    terminate(list(strays), strays)
    refused = _release(state, runtime)
    # Lazy-unmount first: a FUSE mount whose daemon is killed first hangs every stat() of it.
    for mountpoint in state.resources("mounts"):
        if inside(Path(mountpoint), state.dir):
            unmount(mountpoint)
        else:  # a state file edited by hand: dfslab only ever mounts inside the state directory
            refused.append(f"mount {mountpoint} (outside {state.dir})")
    # The data goes with the cluster, so there is nothing to shut down gracefully for.
    killed = runtime.procs.stop_all(timeout=0)
    removed = runtime.destroy()
    # The state directory is the only record of what is left: it goes only when nothing is.
    left = runtime.leftovers() + [f"process {pid}" for pid in marked_pids(name)]
    if left:
        refused.append(f"kept {state.dir}: still there: {', '.join(left)}; `dfslab down {name}` again")
    else:
        try:
            state.destroy()
        except UnsafeRemoval as exc:
            refused.append(str(exc))
    return {"name": name, "killed": killed, "namespaces": removed, "refused": refused}


def _release(state: ClusterState, runtime: Runtime) -> list[str]:
    """What the backend made on storage dfslab does not own goes first, while mounts still work."""
    try:
        spec = parse_spec(state.read()["spec"], f"state of {state.name}")
    except Exception:  # a state dir from before its spec was written holds nothing to release
        return []
    backend = backend_for(spec, runtime)
    try:
        return [f"not removed: {why}" for why in backend.release()]
    except Exception as exc:
        return [f"could not release what {state.name} made: {exc}"]
    finally:
        close_handles(backend)


def leftovers(name: str) -> list[str]:
    """Anything of cluster `name` that still exists; empty after a clean `down`."""
    state = ClusterState(name)
    found = [f"process {pid}" for pid in marked_pids(name)]
    found += attach_runtime(state).leftovers()
    found += [f"mount {point}" for point in mounts_under(state.dir)]  # below clusters/x/, not clusters/x-b/
    if state.dir.exists():
        found.append(f"state dir {state.dir}")
    return found


def load(name: str) -> tuple[ClusterState, ClusterSpec]:
    state = ClusterState(name)
    if not state.exists():
        raise _unknown(name)
    return state, parse_spec(state.read()["spec"], f"state of {name}")


def resolve_name(name: str | None) -> str:
    if name:
        return name
    clusters = list_clusters()
    if len(clusters) == 1:
        return clusters[0]
    if not clusters:
        raise ClusterError("no cluster is up; start one with `dfslab up SPEC.yaml`")
    raise ClusterError(f"several clusters are up ({', '.join(clusters)}); name one")


def status(name: str) -> dict[str, Any]:
    state, spec = load(name)
    runtime = attach_runtime(state)
    info = state.read()
    daemons = []
    for proc in runtime.procs.all():
        rss = proc.rss_bytes()
        daemons.append({"name": proc.name, "node": proc.node, "address": proc.meta.get("address", ""),
                        "pid": proc.pid, "alive": rss is not None, "rss_bytes": rss, "log": proc.meta.get("log", proc.log)})
    out: dict[str, Any] = {"name": name, "filesystem": spec.filesystem, "runtime": runtime.kind,
                           "phase": info.get("phase"), "state_dir": str(state.dir),
                           "addresses": info.get("addresses", {}), "daemons": daemons}
    if info.get("phase") == "up":
        backend = backend_for(spec, runtime)
        try:
            out.update(backend.status())
        except BackendError as exc:
            out["health"] = "UNREACHABLE"
            out["error"] = str(exc)
        finally:
            close_handles(backend)
    return out


@dataclass
class Attached:
    """A cluster that is up, with its runtime and backend: what workloads and faults use."""

    state: ClusterState
    spec: ClusterSpec
    runtime: Runtime
    backend: Backend

    @property
    def env(self) -> dict[str, str]:
        # Marked, so that `down` finds a tool left running by a dfslab that died.
        return {**os.environ, **client_setup(self.backend).client_env(), ENV_MARK: self.state.name}

    def runner(self, raw_dir: Path, client: str) -> Runner:
        """The workloads' runner; `client` (host or job, Experiment.client_kind): where their tools run."""
        scratch = self.state.sub("scratch")
        second = ability(self.backend, SecondClients)
        env = {**self.env, RUN_DIR_ENV: str(raw_dir.parent.resolve())}
        # A Job's pod mounts the filesystem itself: no client outlives a step, so none carries a
        # cache from one step into the next, and a read needs no fresh client of dfslab's.
        return Runner(self.runtime.job_command if client == "job" else self.runtime.command, env, raw_dir,
                      mount=self.backend.mount, scratch=scratch,
                      addresses=self.state.read().get("addresses", {}), nodes=self.spec.node_names(),
                      clients=self.spec.client_names(), disk_per_node=self.runtime.disk_per_node,
                      fresh_client=None if client == "job" or second is None else second.fresh_client,
                      storage=self.backend, pod_dirs_env=None if self.runtime.mounts_here else POD_DIRS_ENV,
                      daemon_cpu=lambda prefix: cpu_seconds(self.runtime.sampled_processes(), prefix),
                      daemon_disk_read=lambda prefix: disk_read_bytes(self.runtime.sampled_processes(), prefix))

    def close(self) -> None:
        close_handles(self.backend)


def attach(name: str) -> Attached:
    state, spec = load(name)
    if state.read().get("phase") != "up":
        raise ClusterError(f"cluster {name!r} is not up (phase {state.read().get('phase')!r}); `dfslab down {name}` and up again")
    runtime = attach_runtime(state)
    backend = backend_for(spec, runtime)
    introduce(runtime, backend)
    return Attached(state, spec, runtime, backend)


def introduce(runtime: Runtime, backend: Backend) -> None:
    """What a runtime learns from the filesystem it runs: how its daemons in pods are named, and
    which of its commands are admin CLIs rather than workloads."""
    if pods := ability(backend, PodsOnKubernetes):
        runtime.daemon_of_process, runtime.daemon_of_pod = pods.daemon_of_process, pods.daemon_of_pod
    runtime.admin_tools = backend.facts.admin_tools


def _shaping(spec: ClusterSpec) -> tuple:
    return (spec.network.bandwidth, spec.network.latency, [(n.bandwidth, n.latency) for n in spec.nodes])


def _with_shaping_of(spec: ClusterSpec, other: ClusterSpec) -> ClusterSpec:
    """`spec` with `other`'s link caps (what a runtime's reshape made of it)."""
    network = spec.network.model_copy(update={"bandwidth": other.network.bandwidth, "latency": other.network.latency})
    nodes = [n.model_copy(update={"bandwidth": o.bandwidth, "latency": o.latency}) for n, o in zip(spec.nodes, other.nodes)]
    return spec.model_copy(update={"network": network, "nodes": nodes})


def apply_live(name: str, new: ClusterSpec) -> list[str] | None:
    """Change cluster `name` to spec `new` in place where its runtime (link caps) and backend
    (options) can, recorded as its spec; None: it needs a fresh cluster."""
    attached = attach(name)
    try:
        old, done = attached.spec, []
        if _shaping(old) != _shaping(new):
            if len(old.nodes) != len(new.nodes) or (reshaped := attached.runtime.reshape(new)) is None:
                return None
            done += reshaped
            attached.backend.spec = _with_shaping_of(old, new)
        live = ability(attached.backend, LiveSettings)
        backend_done = live.apply_live(new) if live else None
        if backend_done is None:
            return None
        done += backend_done
    finally:
        attached.close()
    attached.state.update(spec=new.model_dump(mode="json"))
    return done


def bench_pool(name: str) -> str:
    """The object pool a cluster's benchmarks and datasets go to: dfslab's own on a cluster it did
    not make (`dfslab-<name>`)."""
    state, spec = load(name)
    backend = backend_for(spec, attach_runtime(state))
    try:
        return require(backend, ObjectPools).bench_pool(None)
    finally:
        close_handles(backend)


def client_command(name: str, argv: list[str], node: str = "client") -> tuple[list[str], dict[str, str]]:
    """argv wrapped to run on a node of the cluster the way its workloads run (runtime
    kubernetes: in a toolbox pod on that node), with the backend's client environment."""
    state, spec = load(name)
    nodes = [*spec.node_names(), *spec.client_names()]
    if node not in nodes:  # before any tool is asked (nsenter would say "cannot open /run/netns/...")
        raise ClusterError(f"cluster {name!r} has no node {node!r}; its nodes: {', '.join(nodes)}")
    runtime = attach_runtime(state)
    backend = backend_for(spec, runtime)
    introduce(runtime, backend)
    setup = client_setup(backend)
    return runtime.job_command(node, setup.on_node(node, argv)), {**os.environ, **setup.client_env()}


def on_each_cluster(fn: Callable[[str], Any]) -> list[Any]:
    return [fn(name) for name in list_clusters()]

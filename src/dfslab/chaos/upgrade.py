"""The rolling upgrade: a running cluster moved to a newer release of its filesystem, daemon by
daemon, in the order the filesystem's project documents (its backend's RollingUpgrade ability:
which groups in which order, when a group may stop, when it is back, what comes before and after).

As on a site, the new release's software is put on the server nodes first (Runtime.install_release:
a daemon runs it from its next start) and each group is stopped (SIGTERM) and started again with the
same command line, identity and data; the clients keep what they run, so the cluster ends as
`release: NEW, client_release: OLD`, which its recorded spec then says. No filesystem here supports
a downgrade, so neither does this fault: it is refused, and the fault's undo is none.
"""

from __future__ import annotations

import signal
import time
from typing import Any

from ..backends.abilities import RollingUpgrade, ability
from ..fault import Fault, FaultError, FaultInputError, start_again
from ..polling import wait_until
from ..registry import release_named, release_of, release_problem

STEP_TIMEOUT = 300  # s a group has to be stoppable, and then to be back (an OSD replays its journal first)


def _version(release) -> tuple[int, ...]:
    return tuple(int(p) for p in release.version.split(".") if p.isdigit())


def upgrade_problem(spec: Any, backend: Any, target: str) -> str | None:
    """Why a cluster of `spec` cannot be upgraded to release `target` (None: it can)."""
    if ability(backend, RollingUpgrade) is None:
        return f"{spec.filesystem} has no rolling upgrade in dfslab"
    if problem := release_problem(spec.filesystem, target):
        return f"upgrade to what? {problem}"
    current, wanted = release_of(spec), release_named(spec.filesystem, target)
    if _version(wanted) <= _version(current):
        return (f"the cluster runs {current.name} ({current.version}); {target} ({wanted.version}) is not newer, and "
                f"{spec.filesystem} supports no downgrade (its daemons' stores move forward at a newer release's first start)")
    return backend.upgrade_problem(spec, current.name, target)


class Upgrade(Fault):
    kind = "upgrade"
    undoable = False
    help = ("upgrade the servers to a newer release (target: its name, as `dfslab releases` lists them) daemon by "
            "daemon in the order its filesystem documents (docs/releases.md); the clients keep theirs; undo: none "
            "(no downgrade)")

    @classmethod
    def runtime_refusal(cls, runtime) -> str | None:
        if not runtime.software_roots:
            why = " (its daemons run from an image of the release: a new release is a new image)" \
                if runtime.release_images else ""
            return (f"restarts running daemons into a release's root, which {runtime.where} cannot{why}; "
                    "runtimes local and docker can")
        return None

    @classmethod
    def backend_refusal(cls, backend: Any) -> str | None:
        return None if ability(backend, RollingUpgrade) else f"{backend.name} has no rolling upgrade in dfslab yet"

    @classmethod
    def target_problem(cls, target: str, spec: Any) -> str | None:
        from ..registry import backend_class_of
        return upgrade_problem(spec, backend_class_of(spec.filesystem, spec.runtime), target)

    @classmethod
    def spec_after(cls, target: str, spec: Any) -> Any:
        """`release: TARGET`, the clients on the release they ran (`client_release`)."""
        section = getattr(spec, spec.filesystem)
        return spec.model_copy(update={spec.filesystem: section.model_copy(
            update={"release": target, "client_release": section.client_release or release_of(spec).name})})

    def inject(self, target: str) -> dict[str, Any]:
        spec, backend = self.cluster.spec, self.cluster.backend
        if problem := upgrade_problem(spec, backend, target):
            raise FaultInputError(problem)
        before, release = release_of(spec), release_named(spec.filesystem, target)
        began = time.time()
        self.cluster.runtime.install_release(release, spec.client_names(), lambda *_: None)
        upgraded = self.spec_after(target, spec)
        self.cluster.state.update(spec=upgraded.model_dump(mode="json"))
        self.cluster.spec = upgraded  # a later upgrade in the same run starts from this release
        steps = [self._step(f"{release.says} installed on the servers", began)]
        steps += [self._step(what, time.time()) for what in backend.before_upgrade(upgraded)]
        completed = False
        try:
            for names in backend.upgrade_groups():
                steps += self._restart(backend, names, release)
            completed = True
        finally:
            start = time.time()
            steps += [self._step(what, start) for what in backend.after_upgrade(target, completed)]
        return {"from": before.name, "to": target, "steps": steps}

    @staticmethod
    def _step(what: str, start: float, **more: Any) -> dict[str, Any]:
        return {"what": what, "start": start, "end": time.time(), **more}

    def _restart(self, backend: Any, names: list[str], release) -> list[dict[str, Any]]:
        """The group restarted on `release`: its step, then any its backend took to bring it back."""
        runtime = self.cluster.runtime
        self._wait(lambda: backend.may_stop(names), f"{', '.join(names)} safe to stop")
        start = time.time()
        group = [runtime.procs.get(name) for name in names]
        if None in group:  # nothing to restart would never come back on the new version
            raise FaultError(f"upgrade stopped: {names[group.index(None)]} is not a daemon dfslab runs in "
                             f"cluster {self.cluster.state.name}")
        again = [proc.restartable() for proc in group]
        for proc in group:
            runtime.signal_process(proc, signal.SIGTERM, grace=30)
        backend.stop_started(names)
        for record in again:
            start_again(runtime, record)
        began = time.time()
        done = backend.started_again(names)
        ended = time.time()
        self._wait(lambda: backend.upgraded(names, release.version), f"{', '.join(names)} back on {release.version}")
        return [self._step(", ".join(names), start, node=group[0].node)] + [
            {"what": what, "start": began, "end": ended} for what in done]

    def _wait(self, done, what: str) -> None:
        wait_until(done, what, STEP_TIMEOUT, 1.0, lambda message: FaultError(
            f"upgrade stopped: {message}; `dfslab status {self.cluster.state.name}` shows the daemons"))

    def undo(self, target: str, record: dict[str, Any]) -> None:
        """No filesystem here supports a downgrade: the cluster stays on the new release."""

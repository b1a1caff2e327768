"""A fault only a GlusterFS cluster has (so it lives here): kill a brick.

Brick fault: kill -9 one brick process (glusterfsd). Undo: `gluster volume start
VOL force`, which restarts the volume's offline bricks and nothing else; self-heal then
copies what the brick missed (the recovery wait covers heal)."""

from __future__ import annotations

import os
import re
import signal
from typing import Any

from ...fault import Fault, FaultError, FaultInputError, not_one_of
from ...procs import is_marked


BRICK_TARGET = re.compile(r"([a-z][a-z0-9-]*)(?:/b(\d+))?")  # node2, or node2/b1


class KillBrick(Fault):
    kind = "brick"
    help = "kill -9 a GlusterFS brick process (target: node2, or node2/b1); undo: volume start force"

    @classmethod
    def target_problem(cls, target: str, spec: Any) -> str | None:
        m = BRICK_TARGET.fullmatch(target)
        if not m:
            return f"fault brick takes a node or node/bN, e.g. node2 or node2/b1; got {target!r}"
        bricks = [f"{node}/b{i}" for node in spec.node_names() for i in range(spec.gluster.bricks_per_node)]
        return not_one_of("node", m.group(1), spec.node_names()) or not_one_of("brick", f"{m.group(1)}/b{m.group(2) or 0}", bricks)

    def backend(self):
        return self.cluster.backend  # a GlusterBackend: chaos offers this kind on GlusterFS clusters only

    def find(self, target: str) -> dict[str, Any]:
        m = BRICK_TARGET.fullmatch(target)
        if not m:
            raise FaultInputError(f"fault brick takes a node or node/bN, e.g. node2 or node2/b1; got {target!r}")
        node, index = m.group(1), int(m.group(2) or 0)
        backend = self.backend()
        if node not in self.cluster.spec.node_names():
            raise FaultInputError(f"no node {node!r}; nodes: {', '.join(self.cluster.spec.node_names())}")
        path = str(backend.ctx.node_dir(node, "bricks") / f"b{index}")
        for brick in backend.bricks():
            if brick["brick"].endswith(f":{path}"):
                return brick
        raise FaultInputError(f"no brick {path} in the volume")

    def inject(self, target: str) -> dict[str, Any]:
        brick = self.find(target)
        pid = brick["pid"]
        if not brick["online"] or pid <= 0:
            raise FaultInputError(f"brick {brick['brick']} is not online")
        if not is_marked(pid, self.cluster.state.name):
            raise FaultError(f"pid {pid} of brick {brick['brick']} is not a process of cluster {self.cluster.state.name}")
        os.kill(pid, signal.SIGKILL)
        return {"brick": brick["brick"], "pid": pid}

    def undo(self, target: str, record: dict[str, Any]) -> None:
        self.backend().start_offline_bricks()

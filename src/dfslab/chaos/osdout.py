"""Mark an OSD out (data moves off it) and back in."""

from __future__ import annotations

from typing import Any

from . import Fault


class MarkOut(Fault):
    kind = "out"
    help = "ceph osd out N (placement groups move off it); undo: ceph osd in N"

    def inject(self, target: str) -> dict[str, Any]:
        self.ceph("osd", "out", str(self.osd_id(target)))
        return {}

    def undo(self, target: str, record: dict[str, Any]) -> None:
        self.ceph("osd", "in", str(self.osd_id(target)))

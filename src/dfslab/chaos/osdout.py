"""Mark an OSD out (data moves off it) and back in."""

from __future__ import annotations

import re
from typing import Any

from . import Fault, FaultError


class MarkOut(Fault):
    kind = "out"
    help = "ceph osd out N (placement groups move off it); undo: ceph osd in N"

    def osd_id(self, target: str) -> str:
        m = re.fullmatch(r"(?:osd\.)?(\d+)", target)
        if not m:
            raise FaultError(f"fault out takes an OSD like osd.1, got {target!r}")
        return m.group(1)

    def inject(self, target: str, **options: Any) -> dict[str, Any]:
        self.ceph("osd", "out", self.osd_id(target))
        return {}

    def undo(self, target: str, record: dict[str, Any]) -> None:
        self.ceph("osd", "in", self.osd_id(target))

"""Fill one OSD until Ceph's full ratios trip.

Really filling an 8 GiB OSD to 95 % would take minutes and most of the machine's disk, so
the fault does what Ceph's own full-ratio tests do: it lowers the cluster's nearfull /
backfillfull / full ratios to just above what the target OSD holds now, then writes real
objects onto that OSD alone (a size-1 pool whose CRUSH rule takes a device class only the
target carries) until the OSD crosses the full ratio and Ceph raises OSD_FULL. Client writes
then block, as on a full production cluster. Undo restores the ratios and the OSD's device
class and deletes the fill pool; blocked writes resume.
"""

from __future__ import annotations

import json
import math
import re
import time
from typing import Any

from ..units import UnitError, parse_size
from . import Fault, FaultError

POOL = "dfslab-fill"
OBJECT = 4 << 20


class FillOsd(Fault):
    kind = "fill"
    help = ("fill an OSD until OSD_FULL: ratios lowered to its use + headroom (default 128MiB), "
            "then that much real data written onto it; undo: ratios back, fill data deleted")

    def osd_id(self, target: str) -> int:
        m = re.fullmatch(r"(?:osd\.)?(\d+)", target)
        if not m:
            raise FaultError(f"fault fill takes an OSD like osd.1, got {target!r}")
        return int(m.group(1))

    def json(self, *args: str) -> Any:
        return json.loads(self.ceph(*args, "--format", "json"))

    def usage(self, osd: int) -> tuple[int, int]:
        """(bytes used, bytes total) of one OSD, as Ceph counts them for the full ratios."""
        for node in self.json("osd", "df")["nodes"]:
            if node["id"] == osd:
                return node["kb_used"] * 1024, node["kb"] * 1024
        raise FaultError(f"no osd.{osd} in `ceph osd df`")

    def inject(self, target: str, headroom: str = "128MiB", timeout: str | float = 60, **options: Any) -> dict[str, Any]:
        osd = self.osd_id(target)
        try:
            extra = parse_size(headroom)
        except UnitError as exc:
            raise FaultError(f"fill headroom: {exc}") from None
        dump = self.json("osd", "dump")
        record = {"osd": osd, "ratios": {k: dump[f"{k}_ratio"] for k in ("nearfull", "backfillfull", "full")},
                  "device_class": self.device_class(osd)}
        used, total = self.usage(osd)
        full = (used + extra) / total
        if full >= record["ratios"]["full"]:
            raise FaultError(f"osd.{osd} is already near its full ratio ({used / total:.1%} used); no fill needed")
        self.pin_pool(osd)
        # Ceph refuses ratios out of order: full > backfillfull > nearfull.
        self.ceph("osd", "set-full-ratio", f"{full:.4f}")
        self.ceph("osd", "set-backfillfull-ratio", f"{(used + extra * 0.9) / total:.4f}")
        self.ceph("osd", "set-nearfull-ratio", f"{(used + extra * 0.8) / total:.4f}")
        self.write_until_full(osd, math.ceil(extra * 1.25 / OBJECT), float(timeout))
        record["full_ratio"] = full
        return record

    def device_class(self, osd: int) -> str:
        for item in self.json("osd", "tree")["nodes"]:
            if item.get("id") == osd:
                return item.get("device_class", "hdd")
        raise FaultError(f"no osd.{osd} in the CRUSH tree")

    def pin_pool(self, osd: int) -> None:
        """A size-1 pool whose only OSD is `osd`: a device class nobody else has."""
        self.ceph("osd", "crush", "rm-device-class", f"osd.{osd}")
        self.ceph("osd", "crush", "set-device-class", POOL, f"osd.{osd}")
        self.ceph("osd", "crush", "rule", "create-replicated", POOL, "default", "osd", POOL)
        self.ceph("osd", "pool", "create", POOL, "8", "8", "replicated", POOL)
        self.ceph("osd", "pool", "set", POOL, "size", "1", "--yes-i-really-mean-it")
        # A cluster whose pools default to min_size 2 (replica 3) would leave size-1 PGs inactive.
        self.ceph("osd", "pool", "set", POOL, "min_size", "1")
        self.ceph("osd", "pool", "application", "enable", POOL, "rados")

    def write_until_full(self, osd: int, objects: int, timeout: float) -> None:
        """Write the headroom's worth, then keep writing in small chunks until OSD_FULL shows:
        the OSD's use can also shrink meanwhile (a workload deleting its objects)."""
        deadline = time.monotonic() + timeout
        chunk, n = objects, 0
        while time.monotonic() < deadline:
            if self.osd_full():
                return
            # Once the OSD is full, writes block: a chunk that hangs is cut off by timeout.
            seconds = max(5, int(min(30, deadline - time.monotonic())))
            bench = ["timeout", "-s", "KILL", str(seconds), "rados", "-p", POOL, "bench", str(seconds), "write",
                     "--no-cleanup", "-t", "4", "--max-objects", str(chunk), "--run-name", f"{POOL}-{n}"]
            self.cluster.runtime.run("client", bench, timeout=seconds + 30, check=False, env=self.cluster.env)
            n, chunk = n + 1, 4
            for _ in range(10):  # the MGR's view of OSD use lags a few seconds
                if self.osd_full():
                    return
                time.sleep(0.5)
        used, total = self.usage(osd)
        raise FaultError(f"osd.{osd} did not trip OSD_FULL within {timeout:.0f} s ({used / total:.2%} used)")

    def osd_full(self) -> bool:
        return "OSD_FULL" in self.json("health", "detail").get("checks", {})

    def undo(self, target: str, record: dict[str, Any]) -> None:
        osd = record.get("osd", self.osd_id(target))
        ratios = record.get("ratios", {"nearfull": 0.85, "backfillfull": 0.90, "full": 0.95})
        # Raise full first so the order stays valid at every step.
        for key in ("full", "backfillfull", "nearfull"):
            self.ceph("osd", f"set-{key}-ratio", str(ratios[key]))
        self.ceph("osd", "pool", "rm", POOL, POOL, "--yes-i-really-really-mean-it")
        self.ceph("osd", "crush", "rule", "rm", POOL)
        self.ceph("osd", "crush", "rm-device-class", f"osd.{osd}")
        self.ceph("osd", "crush", "set-device-class", record.get("device_class", "hdd"), f"osd.{osd}")

"""The stand-in's Backend: deploy makes its directory, the client's mount is that directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dfslab.backends import Backend, Facts


class StandInBackend(Backend):
    name = "standin"
    facts = Facts(offers={"fs": ""})

    @classmethod
    def targets_for(cls, spec) -> frozenset[str]:
        return frozenset({"fs"})

    @property
    def volume(self) -> Path:
        return self.state.dir / self.spec.standin.directory

    def deploy(self, progress, timeout: float) -> None:
        progress("making the volume", str(self.volume))
        self.volume.mkdir(parents=True, exist_ok=True)

    def status(self) -> dict[str, Any]:
        ok = self.volume.is_dir()
        return {"health": "HEALTH_OK" if ok else "HEALTH_ERR", "summary": [f"volume {self.volume}"], "tables": []}

    def healthy(self) -> bool:
        return self.volume.is_dir()

    def sample(self) -> dict[str, tuple[float, str]]:
        return {"standin.degraded": (0.0 if self.volume.is_dir() else 1.0, "")}

    def mount(self, node: str = "client") -> Path:
        return self.volume


BACKEND = StandInBackend

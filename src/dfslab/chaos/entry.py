"""One fault of an experiment file (`faults:`), checked against the registered kinds and
each kind's option signature when the file is read."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from ..fields import Seconds, Strict
from . import FaultError, fault_class, fault_kinds


class FaultEntry(Strict):
    kind: str = Field(description="kill | stop | node | out | partition | degrade")
    target: str = Field(description="osd.1, mon.b, mds.a, mgr.x, a node name, ...")
    during: int = Field(0, ge=0, description="index of the workload in `workloads` it is timed into")
    at: Seconds = Field("5s", description="after that workload starts")
    duration: Seconds = Field("15s", description="how long until the undo (restart, mark in, link up)")
    options: dict[str, str] = Field(default_factory=dict, description="e.g. {bandwidth: 100mbit} for degrade")

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        if value not in fault_kinds():
            raise ValueError(f"unknown fault {value!r}; valid: {', '.join(sorted(fault_kinds()))}")
        return value

    @model_validator(mode="after")
    def _options(self) -> "FaultEntry":
        try:
            fault_class(self.kind).check_options(self.options)
        except FaultError as exc:
            raise ValueError(f"options: {exc}") from None
        return self

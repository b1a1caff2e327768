"""The stand-in's spec section: one field, checked against the nodes as a real section is."""

from __future__ import annotations

from pydantic import Field

from dfslab.fields import Strict


class StandInSpec(Strict):
    directory: str = Field("volume", description="the directory, in the cluster's state, that is its volume")

    def check(self, cluster) -> None:
        if "/" in self.directory or self.directory in ("", ".", ".."):
            raise ValueError(f"standin.directory: {self.directory!r} is not one name; give e.g. volume")


SECTION = StandInSpec

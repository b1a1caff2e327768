"""A stand-in runtime registered from the tests alone: every node is this machine, with one
127.x address each on the loopback (as dfslab's loopback runtime); commands run as they are."""

from __future__ import annotations

from dfslab.runtime.base import Runtime


class StandInRuntime(Runtime):
    kind = "standin"
    where = "the stand-in runtime (this machine, loopback addresses)"
    deploy_seconds = 1.0

    def preflight(self, spec) -> None:
        pass

    def create(self, spec) -> dict[str, str]:
        names = [*spec.node_names(), *spec.client_names()]
        return {node: f"127.78.0.{10 + i}" for i, node in enumerate(names)}

    def command(self, node: str, argv: list[str]) -> list[str]:
        return list(argv)

    def destroy(self) -> list[str]:
        return []

    def leftovers(self) -> list[str]:
        return []

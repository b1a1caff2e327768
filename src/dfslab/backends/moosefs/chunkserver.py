"""Chunk servers: one per node beside the master's, each storing chunks (64 MiB pieces of files)
in a directory of its node; the master tells clients which servers hold each chunk."""

from __future__ import annotations

from .context import CHUNK_PORT, MATOCS_PORT, Daemon, MooseContext, configure


def daemon(ctx: MooseContext, node: str) -> Daemon:
    home = ctx.daemon_dir("chunkserver", node)
    disk = home / "chunks"
    disk.mkdir(exist_ok=True)
    hdd = home / "mfshdd.cfg"
    hdd.write_text(f"{disk}\n")
    address = ctx.addresses[node]
    return configure(ctx, "chunkserver", node, "mfschunkserver", {
        "HDD_CONF_FILENAME": hdd, "MASTER_HOST": ctx.master_address, "MASTER_PORT": MATOCS_PORT,
        # It registers with the address it binds (it refuses the loopback's), so the node's own.
        "BIND_HOST": address, "CSSERV_LISTEN_HOST": address, "CSSERV_LISTEN_PORT": CHUNK_PORT,
        # Every chunk server of a local cluster shares this machine's disk: keep 256 MiB of it free
        # (MooseFS's default), and do not spend a start measuring the disk.
        "HDD_TEST_SPEED": 0, "MASTER_RECONNECTION_DELAY": 1,
    })

"""The master: every file's metadata (names, attributes, which chunk servers hold each chunk),
in memory, saved to its data directory every hour and logged as it changes. One per cluster."""

from __future__ import annotations

import shutil
from pathlib import Path

from .context import MATOCL_PORT, MATOCS_PORT, MATOML_PORT, Daemon, MooseContext, configure

EMPTY_METADATA = Path("/var/lib/mfs/metadata.mfs.empty")  # moosefs-master's first metadata file


def daemon(ctx: MooseContext) -> Daemon:
    node, address = ctx.master, ctx.master_address
    home = ctx.daemon_dir("master", node)
    if not (home / "data" / "metadata.mfs").exists() and not (home / "data" / "metadata.mfs.back").exists():
        shutil.copyfile(EMPTY_METADATA, home / "data" / "metadata.mfs")
    exports = home / "mfsexports.cfg"
    # The client nodes only, each with the admin right (mfssetgoal, the metadata's statistics).
    exports.write_text("".join(f"{ctx.addresses[c]}/32 / rw,alldirs,admin,maproot=0:0\n"
                               for c in ctx.spec.client_names() if c in ctx.addresses))
    return configure(ctx, "master", node, "mfsmaster", {
        "EXPORTS_FILENAME": exports,
        "MATOML_LISTEN_HOST": address, "MATOML_LISTEN_PORT": MATOML_PORT,
        "MATOCS_LISTEN_HOST": address, "MATOCS_LISTEN_PORT": MATOCS_PORT,
        "MATOCL_LISTEN_HOST": address, "MATOCL_LISTEN_PORT": MATOCL_PORT,
        # Its default waits 60 s after a start before replicating anything. Its chunk loop, which
        # finds chunks under goal, visits every chunk once a CHUNKS_LOOP_MIN_TIME, default 300 s
        # and at least 60 ("value too low (1) increased to 60"): after a chunk server's 5 s outage
        # under writes the cluster was whole again 71 and 104 s after the undo; with 300, minutes.
        # A chunk locked for writing waits longer (backend.py: recovery_timeout_seconds).
        "REPLICATIONS_DELAY_INIT": 0, "CHUNKS_LOOP_MIN_TIME": 60,
    }, extra=("-a",))  # -a: after a kill, restore the metadata from its change logs (a no-op when clean)

#!/usr/bin/env python3
"""A release's root: how long `dfslab up` waits for it the first time on a machine (cold: mmdebstrap
of its Debian suite with its packages, patches, manifest) and every time after (warm: the checksum
of its dpkg status and the suite's InRelease compared with the manifest's), for every release that
has a root. Built into a scratch directory, so the machine's own cache is neither used nor touched.
Prints seconds, size and the ratio to each target, and the CPU model.

    sudo .venv/bin/python bench/releases.py [--release ceph:reef] [--warm-repeats 5]

Targets: cold 180 s (FACTS.md measured 172 s for Reef's mmdebstrap by hand; `make demo` needs no
root, and a test session's first cluster of a release pays it once), warm 5 s (every `up`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from machine import describe

COLD_TARGET_S = 180.0
WARM_TARGET_S = 5.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--release", action="append", help="FILESYSTEM:RELEASE (default: every release with a root)")
    parser.add_argument("--warm-repeats", type=int, default=5)
    args = parser.parse_args()
    from dfslab.registry import release_named, rooted_releases
    chosen = [release_named(*r.split(":", 1)) for r in args.release] if args.release else rooted_releases()
    print(describe())
    with tempfile.TemporaryDirectory(prefix="bench-releases-") as scratch:
        os.environ["DFSLAB_RELEASES"] = scratch  # read by roots at each call: the machine's cache untouched
        from dfslab.runtime import roots
        from dfslab.safety import remove_owned_tree
        for release in chosen:
            roots.root_home(release).mkdir(parents=True)
            start = time.monotonic()
            roots.ensure(release, lambda step, detail: None)
            cold = time.monotonic() - start
            size = roots.read_manifest(release)["bytes"] / 1e6
            warm = []
            for _ in range(args.warm_repeats):
                start = time.monotonic()
                roots.ensure(release, lambda step, detail: None)
                warm.append(time.monotonic() - start)
            median = statistics.median(warm)
            print(f"{release.key:<16} cold {cold:6.1f} s ({cold / COLD_TARGET_S:.2f}x of {COLD_TARGET_S:.0f} s), "
                  f"{size:.0f} MB; warm median {median * 1000:.0f} ms over {len(warm)} "
                  f"({median / WARM_TARGET_S:.3f}x of {WARM_TARGET_S:.0f} s), max {max(warm) * 1000:.0f} ms")
            remove_owned_tree(roots.root_home(release), [Path(scratch)], "the bench's scratch root")


if __name__ == "__main__":
    main()
